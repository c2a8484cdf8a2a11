"""When will each waiting job start? A plan over time, as conservative backfill plans it.

Every running pod holds its room until its time bound (``model/time_limits.py``), or for ever
when it has none. The jobs waiting for room are taken in queue order; each is given the
earliest moment at which its members fit, on room nothing holds then, for as long as it runs,
and that room is then its own in the plan: a later job may start before an earlier one only
where it delays nobody ahead of it. Preemption is not assumed, and neither is any pod ending
before its bound: a start time is the latest the job waits if the bounds hold and nothing of
higher priority arrives.

Usage on a node over time only falls as pods end, except where the plan gave the room to a job
that starts later; so the most a node uses over a job's run is found at the run's first
moment and at the start of each later run planned there. Amounts are compared resource by
resource, the highest of each over the run, which may find less room than there is, never
more.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from koordgang.model.resources import CPU, MEMORY, Resources

__all__ = ["Estimate", "Holder", "Waiter", "plan_starts"]

FOREVER = float("inf")


@dataclass(frozen=True, slots=True)
class Holder:
    """Room a pod holds now: on ``node``, until ``free_by`` (None: no bound)."""

    pod: str
    node: str
    requests: Resources
    free_by: float | None


@dataclass(frozen=True, slots=True)
class Waiter:
    """A job waiting for room, in queue order: the requests of the members it needs to start,
    how long it holds the room once started (None: no bound) and the moment it ends at the
    latest whenever it starts (a Job's deadline, whose clock runs while it waits; None: none),
    and the nodes its members may use (None: every node)."""

    key: str
    members: tuple[Resources, ...]
    runs_for: float | None
    nodes: frozenset[str] | None = None
    ends_by: float | None = None

    def end(self, start: float) -> float:
        """When it gives its room back if it starts at ``start``."""
        end = FOREVER if self.runs_for is None else start + self.runs_for
        return end if self.ends_by is None else max(start, min(end, self.ends_by))


@dataclass(frozen=True, slots=True)
class Estimate:
    key: str
    #: When it starts at the latest, in the plan; None when nothing bounds it.
    start: float | None
    #: Where its members go in the plan: node -> how many.
    nodes: Mapping[str, int] = field(default_factory=dict)
    #: The pods on those nodes whose end it waits for (ending by ``start``).
    waits_for: tuple[str, ...] = ()
    #: Without a start: the pods without a bound, and the jobs ahead of it without one, that
    #: hold room it needs.
    held_by: tuple[str, ...] = ()
    #: Without a start, and nothing holding room: its members fit on no node even empty.
    never_fits: bool = False


@dataclass(slots=True)
class _Run:
    start: float
    end: float
    requests: Resources
    owner: str


@dataclass(slots=True)
class _Node:
    name: str
    allocatable: Resources
    #: What the holders with a bound use now, and what each bound gives back, in time order.
    ends: list[float] = field(default_factory=list)
    freed: list[Resources] = field(default_factory=list)
    #: freed[0] + ... + freed[i], for the room given back by ``ends[i]``.
    freed_total: list[Resources] = field(default_factory=list)
    bounded: Resources = Resources.EMPTY
    unbounded: Resources = Resources.EMPTY
    #: (pod, free_by) of every holder, for the explanation.
    holders: list[tuple[str, float | None]] = field(default_factory=list)
    runs: list[_Run] = field(default_factory=list)

    def held(self, at: float) -> Resources:
        """What the holders still hold at ``at``."""
        index = bisect.bisect_right(self.ends, at)
        gone = self.freed_total[index - 1] if index else Resources.EMPTY
        return self.unbounded + self.bounded - gone

    def peak(self, start: float, end: float) -> Resources:
        """The most used at any moment of [start, end), resource by resource."""
        moments = [start, *(r.start for r in self.runs if start < r.start < end)]
        most = Resources.EMPTY
        for moment in moments:
            used = self.held(moment)
            for run in self.runs:
                if run.start <= moment < run.end:
                    used = used + run.requests
            most = most.max(used)
        return most


def plan_starts(
    now: float,
    allocatable: Mapping[str, Resources],
    holders: Iterable[Holder],
    waiters: Sequence[Waiter],
) -> list[Estimate]:
    """An estimate for each waiter, in their order."""
    nodes = _nodes(allocatable, holders)
    moments = sorted({now, *(t for n in nodes.values() for t in n.ends if t > now)})
    estimates: list[Estimate] = []
    for waiter in waiters:
        estimate = _place(waiter, now, nodes, moments)
        estimates.append(estimate)
        if estimate.start is not None and waiter.end(estimate.start) < FOREVER:
            bisect.insort(moments, waiter.end(estimate.start))
    return estimates


def _nodes(allocatable: Mapping[str, Resources], holders: Iterable[Holder]) -> dict[str, _Node]:
    nodes = {name: _Node(name, room) for name, room in allocatable.items()}
    by_node: dict[str, list[Holder]] = {}
    for holder in holders:
        if holder.node in nodes:
            by_node.setdefault(holder.node, []).append(holder)
    for name, held in by_node.items():
        node = nodes[name]
        bounded = sorted((h for h in held if h.free_by is not None), key=lambda h: h.free_by or 0)
        total = Resources.EMPTY
        for holder in bounded:
            total = total + holder.requests
            node.ends.append(holder.free_by or 0.0)
            node.freed.append(holder.requests)
            node.freed_total.append(total)
        node.bounded = total
        for holder in held:
            if holder.free_by is None:
                node.unbounded = node.unbounded + holder.requests
        node.holders = [(h.pod, h.free_by) for h in held]
    return nodes


def _place(waiter: Waiter, now: float, nodes: dict[str, _Node], moments: list[float]) -> Estimate:
    eligible = [n for n in sorted(nodes) if waiter.nodes is None or n in waiter.nodes]
    members = sorted(waiter.members, key=lambda r: (r.get(CPU), r.get(MEMORY)), reverse=True)
    for moment in moments[bisect.bisect_left(moments, now) :]:
        end = waiter.end(moment)
        placed = _fit(members, [nodes[n] for n in eligible], moment, end)
        if placed is None:
            continue
        for name, requests in placed:
            nodes[name].runs.append(_Run(moment, end, requests, waiter.key))
        counts: dict[str, int] = {}
        for name, _ in placed:
            counts[name] = counts.get(name, 0) + 1
        waits = sorted(
            pod
            for name in counts
            for pod, free_by in nodes[name].holders
            if free_by is not None and now < free_by <= moment
        )
        return Estimate(waiter.key, moment, counts, tuple(waits))
    return _unbounded(waiter, [nodes[n] for n in eligible], members)


def _fit(
    members: list[Resources], nodes: list[_Node], start: float, end: float
) -> list[tuple[str, Resources]] | None:
    """First fit of the members, largest first, on the room free over [start, end)."""
    free = {node.name: node.allocatable - node.peak(start, end) for node in nodes}
    placed: list[tuple[str, Resources]] = []
    for requests in members:
        for node in nodes:
            if not requests.exceeds(free[node.name]):
                free[node.name] = free[node.name] - requests
                placed.append((node.name, requests))
                break
        else:
            return None
    return placed


def _unbounded(waiter: Waiter, nodes: list[_Node], members: list[Resources]) -> Estimate:
    """No moment in the plan fits: say what holds the room for ever, or that nothing would."""
    empty = [_Node(node.name, node.allocatable) for node in nodes]
    if _fit(members, empty, 0.0, 1.0) is None:
        return Estimate(waiter.key, None, never_fits=True)
    held = sorted(
        {pod for node in nodes for pod, free_by in node.holders if free_by is None}
        | {run.owner for node in nodes for run in node.runs if run.end == FOREVER}
    )
    return Estimate(waiter.key, None, held_by=tuple(held))
