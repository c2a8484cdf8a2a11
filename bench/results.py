"""What one run measured: plain dataclasses, written to JSON as they are."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

KOORDGANG = "koordgang"
#: koordgang run with its gangs declared in another API than Koordinator's annotations is
#: labelled ``koordgang via volcano`` (``--gang-apis``).
VIA = " via "
#: koordgang writing a ``Scheduled`` Event for every pod it binds, as the peers do (its default
#: rate-limits them: ``--scheduled-event-rate``), for the peer comparisons like for like.
EVERY_EVENT = KOORDGANG + " all events"


def is_koordgang(label: str) -> bool:
    """``koordgang``, ``koordgang via <api>`` or ``koordgang all events``, not a peer."""
    return label in (KOORDGANG, EVERY_EVENT) or label.startswith(KOORDGANG + VIA)


@dataclass
class CeilingResult:
    #: When in the run: "start" (before the scenarios) or "end" (after them).
    label: str
    pods: int
    nodes: int
    concurrency: int
    #: Pods bound per second, seen by the same watch as the scenarios (the reference figure).
    binds_per_s: float
    #: Bind replies per second at the client.
    acks_per_s: float
    seconds: float
    errors: int
    #: Average cores each process used while binding, and over how long.
    cores: dict[str, float] = field(default_factory=dict)
    window_s: float = 0.0
    #: Requests in flight -> binds/s, level by level; ``concurrency`` is the best level's, and
    #: ``pods``, ``seconds``, ``cores`` and ``window_s`` are of that level.
    sweep: dict[int, float] = field(default_factory=dict)
    #: The sweep found where the API server saturates (``ceiling.saturated``).
    saturated: bool = True

    def __post_init__(self) -> None:
        # Read back from results.json, the levels are strings.
        self.sweep = {int(level): rate for level, rate in self.sweep.items()}


@dataclass
class ScenarioResult:
    name: str
    summary: str
    finish: str
    nodes: int
    pods: int
    gangs: int
    #: How many pods should end bound (all, or what the cluster holds).
    expected: int
    bound: int = 0
    #: Binds the watch saw during the run (bound may end higher in a contention run).
    binds_seen: int = 0
    #: Spawn -> /readyz 200 (t0).
    ready_after_s: float | None = None
    #: Spawn -> first bind, and t0 -> first bind.
    first_bind_after_start_s: float | None = None
    first_bind_after_ready_s: float | None = None
    #: t0 -> last bind, when the scenario finished (all bound / cluster full).
    time_to_done_s: float | None = None
    #: bound / (last bind - t0).
    pods_per_s: float | None = None
    pct_of_ceiling: float | None = None
    #: Per gang: t0 -> its last member bound (gangs that reached their minimum).
    gang_p50_s: float | None = None
    gang_p99_s: float | None = None
    gangs_complete: int = 0
    daemon_cpu_s: float | None = None
    daemon_peak_rss_mb: float | None = None
    #: Average cores per process from t0 to the end of the run, and how long that was.
    cores: dict[str, float] = field(default_factory=dict)
    window_s: float = 0.0
    #: Selected daemon counters (binds, attempts, API writes).
    counters: dict[str, float] = field(default_factory=dict)
    #: Correctness failures and anything that kept the run from finishing.
    problems: list[str] = field(default_factory=list)
    #: (seconds since t0, pods bound), at most a few hundred points.
    timeline: list[tuple[float, int]] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    reference: str = ""
    reference_pods_per_s: float | None = None
    profile_top: list[str] = field(default_factory=list)
    #: Which scheduler ran it (``koordgang``, ``coscheduling qps 5000``, ...) and its version.
    scheduler: str = "koordgang"
    scheduler_version: str = ""
    #: The CRDs installed for this run (each scheduler's own) and the gang API its pods used.
    crds: list[str] = field(default_factory=list)
    gang_api: str = ""
    #: "prebuilt" (all pods created before the scheduler started) or "streamed N pods/s".
    submit: str = "prebuilt"
    #: Streamed runs: per gang, its last member created -> its minimum bound.
    gang_latency_p50_s: float | None = None
    gang_latency_p99_s: float | None = None
    #: Why this scheduler did not run this scenario ("" when it did).
    skipped: str = ""


def cpu_ms_per_pod(cores: dict[str, float], window_s: float, pods: int) -> dict[str, float]:
    """CPU milliseconds each process spent per pod bound in the window."""
    if pods <= 0 or window_s <= 0:
        return {}
    return {name: round(1000 * value * window_s / pods, 2) for name, value in cores.items()}


def reference_rate(ceilings: Sequence[CeilingResult]) -> float | None:
    """The ceiling scenarios are compared with: the best of those measured in the run (the
    API server managed at least that; the machine's other load only ever lowers it)."""
    rates = [c.binds_per_s for c in ceilings if c.binds_per_s > 0]
    return max(rates) if rates else None


def set_share_of_ceiling(result: ScenarioResult, reference: float | None) -> None:
    if result.pods_per_s is not None and reference:
        result.pct_of_ceiling = round(100 * result.pods_per_s / reference, 1)


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest-rank percentile (P99 of 50 values is the largest), None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def gang_completions(
    bound_at: Mapping[str, float], members: Mapping[str, Sequence[str]], minimum: Mapping[str, int]
) -> list[float]:
    """Per gang that reached its minimum: the time its last bound member was bound."""
    done: list[float] = []
    for gang, names in members.items():
        times = [bound_at[n] for n in names if n in bound_at]
        if times and len(times) >= minimum[gang]:
            done.append(max(times))
    return done


def timeline(times: Iterable[float], origin: float, points: int = 300) -> list[tuple[float, int]]:
    ordered = sorted(times)
    if not ordered:
        return []
    step = max(1, len(ordered) // points)
    picked = [(round(t - origin, 3), i + 1) for i, t in enumerate(ordered) if i % step == 0]
    last = (round(ordered[-1] - origin, 3), len(ordered))
    if picked[-1] != last:
        picked.append(last)
    return [(0.0, 0), *picked]


def kept_repeat(tries: Sequence[ScenarioResult]) -> ScenarioResult:
    """The measurement a repeated scenario reports: the first one with a problem (a problem is
    never hidden by better repeats), else the median by pods/s (the upper middle of an even
    count)."""
    for attempt in tries:
        if attempt.problems:
            return attempt
    ranked = sorted(tries, key=lambda t: t.pods_per_s or 0.0)
    return ranked[len(ranked) // 2]
