"""Where the window between the two schedulers of the coexist scenario is, from one round's
record of the daemon (``coexist_daemon.py``) and the moments the bench's own light watch saw
each pod bound, all in ``time.monotonic()`` seconds of the one machine:

- ``decided_to_landed``: koordgang's decision to bind a pod, to the API server accepting the
  Binding (until then no other scheduler can know of it), in two: ``decided_to_sent``, the
  decision to the Binding request going out (koordgang's own part: its binder, its event
  loop), and ``sent_to_landed``, the request to its answer (the API server's part, and the
  connection's);
- ``landed_to_watched``: that acceptance, to the bench's watch seeing the pod bound (how soon a
  light watcher of the same API server can know of it: kube-scheduler's informer, busier, not
  sooner);
- ``theirs_to_seen``: the bench's watch seeing a pod of kube-scheduler's bound, to koordgang's
  informer applying it (how much later than a light watcher koordgang knows of their room
  taken: negative when it was first);
- ``ours_landed_to_seen``: koordgang's own binding accepted, to its informer applying it (what
  ``koordgang_watch_lag_seconds`` measures in the daemon).

And for each pod that over-filled a node (1 cpu each: on a node of 8 cpu, the bindings after
the eighth, in the order the bench's watch saw them), which part of the window let it in:

- koordgang's, and a pod of kube-scheduler's there was watchable before koordgang decided
  (``overfill_ours_stale``: how long before; a fresher view would have seen it);
- koordgang's, and kube-scheduler's pods there landed only after it decided
  (``overfill_ours_concurrent``: how long after; no view at decision time had them);
- kube-scheduler's, over koordgang's binding there (``overfill_theirs``: from koordgang's last
  binding there accepted to theirs seen; kube-scheduler's view did not have it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

MEASURES = (
    ("decided_to_landed", "koordgang's decision -> its binding accepted"),
    ("decided_to_sent", "of which: decision -> its binding request sent"),
    ("sent_to_landed", "of which: binding request sent -> accepted"),
    ("landed_to_watched", "its binding accepted -> a light watch sees it"),
    ("theirs_to_seen", "kube-scheduler's binding seen by a light watch -> by koordgang"),
    ("ours_landed_to_seen", "koordgang's binding accepted -> its own informer applies it"),
    (
        "overfill_ours_stale",
        "over-filled by koordgang: theirs was watchable, before its decision by",
    ),
    ("overfill_ours_concurrent", "over-filled by koordgang: theirs landed after its decision by"),
    ("overfill_theirs", "over-filled by kube-scheduler: after koordgang's binding there by"),
)


def window(
    record: Mapping[str, Mapping[str, float]],
    watched: Mapping[str, float],
    is_theirs: Callable[[str], bool],
) -> dict[str, list[float]]:
    """The samples of one round, by measure (seconds)."""
    decided = record.get("decided") or {}
    landed = record.get("landed") or {}
    seen = record.get("seen") or {}
    sent = record.get("sent") or {}
    samples: dict[str, list[float]] = {name: [] for name, _ in MEASURES}
    for pod, at in landed.items():
        if decided.get(pod):
            samples["decided_to_landed"].append(at - decided[pod])
        if decided.get(pod) and pod in sent:
            samples["decided_to_sent"].append(sent[pod] - decided[pod])
            samples["sent_to_landed"].append(at - sent[pod])
        if pod in watched:
            samples["landed_to_watched"].append(watched[pod] - at)
        if pod in seen:
            samples["ours_landed_to_seen"].append(max(0.0, seen[pod] - at))
    for pod, at in watched.items():
        if is_theirs(pod) and pod in seen:
            samples["theirs_to_seen"].append(seen[pod] - at)
    return samples


def overfills(
    record: Mapping[str, Mapping[str, float]],
    watched: Mapping[str, float],
    is_theirs: Callable[[str], bool],
    node_of: Mapping[str, str],
    room: Mapping[str, int],
) -> dict[str, list[float]]:
    """The over-filling pods of one round by what let them in (see the module's docstring):
    ``node_of``, the final state's bound pods; ``room``, how many pods each node holds."""
    decided = record.get("decided") or {}
    landed = record.get("landed") or {}
    seen = record.get("seen") or {}
    on_node: dict[str, list[str]] = {}
    for pod, node in node_of.items():
        if pod in watched:
            on_node.setdefault(node, []).append(pod)
    found: dict[str, list[float]] = {
        "overfill_ours_stale": [],
        "overfill_ours_concurrent": [],
        "overfill_theirs": [],
    }
    for node, pods in on_node.items():
        pods.sort(key=watched.__getitem__)
        for at, pod in enumerate(pods):
            if at < room.get(node, len(pods)):
                continue
            before = pods[:at]
            if is_theirs(pod):
                ours = [landed[p] for p in before if not is_theirs(p) and p in landed]
                if ours:
                    found["overfill_theirs"].append(watched[pod] - max(ours))
                continue
            when = decided.get(pod)
            if not when:
                continue
            theirs = [p for p in before if is_theirs(p)]
            stale = [when - watched[p] for p in theirs if watched[p] <= when < seen.get(p, 1e18)]
            late = [watched[p] - when for p in theirs if watched[p] > when]
            if stale:
                found["overfill_ours_stale"].append(max(stale))
            elif late:
                found["overfill_ours_concurrent"].append(min(late))
    return found


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def summary(rounds: Iterable[Mapping[str, Sequence[float]]]) -> dict[str, list[float]]:
    """Every round's samples together: measure -> [P50 ms, P95 ms, samples]."""
    merged: dict[str, list[float]] = {name: [] for name, _ in MEASURES}
    for samples in rounds:
        for name, values in samples.items():
            merged.setdefault(name, []).extend(values)
    return {
        name: [
            round(1000 * percentile(values, 0.5), 1),
            round(1000 * percentile(values, 0.95), 1),
            len(values),
        ]
        for name, values in merged.items()
        if values
    }


def window_lines(notes: Mapping[str, Any], variants: Sequence[str]) -> list[str]:
    """The table of the window, P50 / P95 in ms, one column per variant."""
    found = [v for v in variants if notes.get(f"{v}_window")]
    if not found:
        return []
    lines = [
        "| where the window is (P50 / P95 ms, samples) | " + " | ".join(found) + " |",
        "|---|" + "---|" * len(found),
    ]
    for name, label in MEASURES:
        cells = []
        for variant in found:
            figures = notes[f"{variant}_window"].get(name)
            cells.append(
                "-" if not figures else f"{figures[0]:.0f} / {figures[1]:.0f} ({figures[2]:,.0f})"
            )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


#: The API server's own time per request (from its receipt to its answer), for Bindings.
_BINDING_SERIES = (
    "apiserver_request_duration_seconds_sum",
    "apiserver_request_duration_seconds_count",
)


def binding_totals(metrics: str) -> tuple[float, float]:
    """(seconds, requests) the API server spent on Bindings (``pods/binding`` POSTs, both
    schedulers') so far, from its ``/metrics`` text."""
    totals = [0.0, 0.0]
    for line in metrics.splitlines():
        name, _, rest = line.partition("{")
        if name in _BINDING_SERIES and 'subresource="binding"' in rest and 'verb="POST"' in rest:
            totals[_BINDING_SERIES.index(name)] += float(line.rsplit(" ", 1)[1])
    return totals[0], totals[1]
