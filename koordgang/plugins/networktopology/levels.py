"""Topology keys at each level of a group (upstream's ``schedulingConstraints.topology[].key``):
every member of a level (a CompositePodGroup, or one PodGroup) shares one value of each of its
node labels.

Placed top-down over node sets, one domain at a time: a level tries the values of its keys
(the tightest that fits first, among those where the level's running members are, if any),
places its children inside the one it tries, and keeps it once the level's need is met; a
part (one PodGroup) is placed whole inside one value of its own keys, or not at all. Each try
is a fork of the snapshot, so a domain given up leaves nothing behind."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from koordgang.framework.group import (
    GroupNeed,
    GroupPart,
    GroupPlan,
    PartPlan,
    Placer,
    PodResult,
    SchedulingGroup,
)
from koordgang.framework.status import Code, Status
from koordgang.model.pod import PodInfo
from koordgang.state.snapshot import Snapshot

NAME = "NetworkTopology"


def has_levels(group: SchedulingGroup) -> bool:
    """Whether any level of the group names topology keys (or is held to values)."""
    if any(part.keys or part.pinned for part in group.parts):
        return True
    return group.need is not None and (group.need.has_keys() or _pinned_anywhere(group.need))


def level_scopes(group: SchedulingGroup, snapshot: Snapshot) -> list[frozenset[str]]:
    """Where room may be made for the group (preemption): the values of its top level's keys
    (its one part's, for a PodGroup of its own), or the whole cluster when the top names none."""
    nodes = frozenset(n.name for n in snapshot.nodes if n.info is not None)
    if group.need is not None:
        keys, pinned = group.need.keys, dict(group.need.pinned)
    elif len(group.parts) == 1:
        keys, pinned = group.parts[0].keys, dict(group.parts[0].pinned)
    else:
        keys, pinned = (), {}
    return [domain for _, domain in _domains(nodes, keys, pinned, snapshot)]


def _pinned_anywhere(need: GroupNeed) -> bool:
    return bool(need.pinned) or any(
        isinstance(child, GroupNeed) and _pinned_anywhere(child) for child in need.children
    )


@dataclass
class _Attempt:
    """What a level or part left unplaced, and why (the last reason per part)."""

    why: dict[str, str] = field(default_factory=dict)


def place_levels(group: SchedulingGroup, snapshot: Snapshot, placer: Placer) -> GroupPlan:
    parts = {part.key: part for part in group.parts}
    need = group.need or GroupNeed(
        "the group", len(group.parts), tuple(part.key for part in group.parts)
    )
    attempt = _Attempt()
    nodes = frozenset(n.name for n in snapshot.nodes if n.info is not None)
    kept = _place_need(need, nodes, snapshot, placer, parts, group.settled, attempt)
    if kept is not None:
        kept[0].commit()
    placed = {p.pod.uid: p for p in snapshot.placements}
    plans = []
    for part in group.parts:
        plan = PartPlan(part)
        for pod in part.pending:
            if pod.uid in placed:
                plan.placed.append(placed[pod.uid])
            else:
                reason = attempt.why.get(part.key) or "not placed"
                status = Status(Code.UNSCHEDULABLE, (reason,), NAME)
                plan.failed.append(PodResult(pod, None, status, None, monotone=False))
        plans.append(plan)
    return GroupPlan(snapshot, plans)


def _domains(
    nodes: frozenset[str],
    keys: Sequence[str],
    pinned: Mapping[str, str],
    snapshot: Snapshot,
) -> list[tuple[str, frozenset[str]]]:
    """``nodes`` split by the values of ``keys`` (nodes without one of them in none), those
    with a pinned value only; the whole set when there are no keys."""
    labels = [*keys, *(k for k in pinned if k not in keys)]
    if not labels:
        return [("", nodes)]
    by_value: dict[tuple[str, ...], set[str]] = {}
    for name in nodes:
        node = snapshot.node(name)
        if node is None or node.info is None:
            continue
        values = node.info.labels
        if any(label not in values for label in labels):
            continue
        if any(values[label] != value for label, value in pinned.items()):
            continue
        by_value.setdefault(tuple(values[label] for label in labels), set()).add(name)
    return [
        (", ".join(f"{label}={v}" for label, v in zip(labels, value, strict=True)), frozenset(n))
        for value, n in sorted(by_value.items())
    ]


def _free_cpu(snapshot: Snapshot, nodes: frozenset[str]) -> int:
    total = 0
    for name in nodes:
        node = snapshot.node(name)
        if node is not None:
            total += snapshot.free(node, "cpu")
    return total


def _place_need(
    need: GroupNeed,
    nodes: frozenset[str],
    snapshot: Snapshot,
    placer: Placer,
    parts: Mapping[str, GroupPart],
    settled: frozenset[str],
    attempt: _Attempt,
) -> tuple[Snapshot, set[str]] | None:
    """A fork of ``snapshot`` holding the level's placements inside one domain of its keys,
    with the parts it placed whole; None when no domain meets its need."""
    domains = _domains(nodes, need.keys, dict(need.pinned), snapshot)
    # The tightest domain first: big ones stay free for bigger groups.
    domains.sort(key=lambda d: (_free_cpu(snapshot, d[1]), d[0]))
    failures = []
    for label, domain in domains:
        fork = snapshot.fork()
        done: set[str] = set()
        for child in need.children:
            if need.met((done | settled).__contains__):
                # The rest go later, each whole, where the others are (their pins): placed now
                # they could take the room a sibling level still needs.
                break
            if isinstance(child, GroupNeed):
                kept = _place_need(child, domain, fork, placer, parts, settled, attempt)
                if kept is not None:
                    kept[0].commit()
                    done |= kept[1]
            elif (
                child in parts
                and child not in settled
                and _place_part(parts[child], domain, fork, placer, attempt)
            ):
                done.add(child)
        if need.met((done | settled).__contains__):
            return fork, done
        failures.append(label or "the cluster")
    where = " or ".join(failures[:3]) + (" ..." if len(failures) > 3 else "")
    keys = ", ".join(need.keys) or "any node"
    reason = f"{need.name}: no {keys} value holds {need.minimum} of its children whole" + (
        f" (tried {where})" if failures else " (no node has the labels)"
    )
    for key in _leaves(need):
        attempt.why.setdefault(key, reason)
    return None


def _leaves(need: GroupNeed) -> list[str]:
    keys: list[str] = []
    for child in need.children:
        keys += _leaves(child) if isinstance(child, GroupNeed) else [child]
    return keys


def _place_part(
    part: GroupPart, nodes: frozenset[str], snapshot: Snapshot, placer: Placer, attempt: _Attempt
) -> bool:
    """Places the part's pending members inside one value of its keys, committed into
    ``snapshot`` once its minimum is reached; nothing when no value can hold it."""
    domains = _domains(nodes, part.keys, part.pinned, snapshot)
    domains.sort(key=lambda d: (_free_cpu(snapshot, d[1]), d[0]))
    last = ""
    for label, domain in domains:
        fork = snapshot.fork()
        placed: list[PodInfo] = []
        for pod in part.pending:
            result = placer.place(pod, fork, within=domain, diagnose=False)
            if result.node is not None:
                placed.append(pod)
            else:
                last = result.message
        if part.counted + len(placed) >= part.minimum:
            fork.commit()
            attempt.why.pop(part.key, None)
            return True
        del fork
        last = last or f"{label or 'the nodes'} cannot hold {part.minimum} members"
    keys = ", ".join(part.keys) or ", ".join(part.pinned)
    attempt.why[part.key] = (
        f"{part.key}: no {keys or 'node'} value holds its {part.minimum} members together"
        + (f" ({last})" if last else "")
    )
    return False
