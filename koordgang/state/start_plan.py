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

Cost. Amounts are tuples of integers over the resources that appear. A moment is tried only
when the room the whole cluster has free then (planned runs aside) covers what the job asks;
each moment tried costs a look at every node the job may use, and a plan looks at no more than
``BUDGET`` nodes in all: jobs left when it is spent get no estimate (None, with
``unplanned``), never a wrong one.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from koordgang.model.resources import Resources

__all__ = ["BUDGET", "Estimate", "Holder", "Waiter", "plan_starts"]

FOREVER = float("inf")
#: Nodes a plan may look at (each look is a few microseconds).
BUDGET = 100_000

Vector = tuple[int, ...]
#: A member's requests, and the nodes it may use (None: every node the job may use).
_Member = tuple[Vector, frozenset[str] | None]


@dataclass(frozen=True, slots=True)
class Holder:
    """Room a pod holds now: on ``node``, until ``free_by`` (None: no bound)."""

    pod: str
    node: str
    requests: Resources
    free_by: float | None
    #: Still here past its bound (its kubelet or Job controller is late).
    overdue: bool = False


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
    #: The nodes each member may use, in ``members``' order (an MPI launcher on CPU nodes,
    #: its workers on GPU nodes), within ``nodes``; () when ``nodes`` says it for all.
    member_nodes: tuple[frozenset[str] | None, ...] = ()

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
    #: Without a start: the plan's budget was spent before it came to this job.
    unplanned: bool = False


@dataclass(slots=True)
class _Run:
    start: float
    end: float
    used: Vector
    owner: str


@dataclass(slots=True)
class _Node:
    name: str
    allocatable: Vector
    #: Free now if every holder with a bound had gone (holders without one still there).
    most: Vector
    #: Release moments of the holders with a bound, in order, and what each gives back.
    ends: list[float] = field(default_factory=list)
    given: list[Vector] = field(default_factory=list)
    #: What is still held after ``ends[i]``: held[i + 1]; held[0] is what is held now.
    held: list[Vector] = field(default_factory=list)
    #: (pod, free_by) of every holder, for the explanation.
    holders: list[tuple[str, float | None]] = field(default_factory=list)
    runs: list[_Run] = field(default_factory=list)

    def free(self, start: float, end: float) -> Vector:
        """The least free at any moment of [start, end), resource by resource."""
        least = self.allocatable
        for moment in (start, *(r.start for r in self.runs if start < r.start < end)):
            used = self.held[bisect.bisect_right(self.ends, moment)]
            for run in self.runs:
                if run.start <= moment < run.end:
                    used = _add(used, run.used)
            least = _min(least, _sub(self.allocatable, used))
        return least


def _add(a: Vector, b: Vector) -> Vector:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def _sub(a: Vector, b: Vector) -> Vector:
    return tuple(x - y for x, y in zip(a, b, strict=True))


def _min(a: Vector, b: Vector) -> Vector:
    return tuple(x if x < y else y for x, y in zip(a, b, strict=True))


def _floor(a: Vector) -> Vector:
    return tuple(x if x > 0 else 0 for x in a)


def _times(free: Vector, need: Vector) -> int:
    """How many of ``need`` fit in ``free``."""
    counts = [f // n for f, n in zip(free, need, strict=True) if n > 0]
    return max(0, min(counts)) if counts else 1 << 30


def _fits(need: Vector, free: Vector) -> bool:
    return all(n <= f for n, f in zip(need, free, strict=True))


class _Plan:
    def __init__(
        self, now: float, allocatable: Mapping[str, Resources], holders: Iterable[Holder]
    ) -> None:
        self.now = now
        self.held_list = list(holders)
        names = sorted(
            {n for room in allocatable.values() for n in room}
            | {n for h in self.held_list for n in h.requests}
        )
        self.names = names
        self.zero: Vector = (0,) * len(names)
        self.nodes = {
            name: _Node(name, self.vector(room), self.zero) for name, room in allocatable.items()
        }
        self.order = sorted(self.nodes)
        self._holders()
        #: The cluster's free room after each release (runs aside), for the quick check.
        releases = sorted(
            (t, g, node.name)
            for node in self.nodes.values()
            for t, g in zip(node.ends, node.given, strict=True)
        )
        #: (moment, node) of every release.
        self.releases = [(t, name) for t, _, name in releases]
        self.moments = [now, *sorted({t for t, _, _ in releases})]
        # Each node's free room counts from 0 up: an over-committed node (a nomination beside
        # the pods it waits for) hides no room of the others.
        free = {
            name: _floor(_sub(node.allocatable, node.held[0])) for name, node in self.nodes.items()
        }
        total = self.zero
        for room in free.values():
            total = _add(total, room)
        self.release_times = [t for t, _, _ in releases]
        self.cluster_free = [total]
        index = {name: 0 for name in self.nodes}
        for _, _, name in releases:
            node = self.nodes[name]
            index[name] += 1
            room = _floor(_sub(node.allocatable, node.held[index[name]]))
            total = _add(total, _sub(room, free[name]))
            free[name] = room
            self.cluster_free.append(total)
        self.spent = 0

    def vector(self, room: Resources) -> Vector:
        return tuple(room.get(name) for name in self.names)

    def _holders(self) -> None:
        by_node: dict[str, list[Holder]] = {}
        for holder in self.held_list:
            if holder.node in self.nodes:
                by_node.setdefault(holder.node, []).append(holder)
        for name, node in self.nodes.items():
            held = by_node.get(name, [])
            unbounded = self.zero
            for holder in held:
                if holder.free_by is None:
                    unbounded = _add(unbounded, self.vector(holder.requests))
            bounded = sorted(
                (h for h in held if h.free_by is not None and h.free_by > self.now),
                key=lambda h: h.free_by or 0.0,
            )
            still = unbounded
            for holder in bounded:
                still = _add(still, self.vector(holder.requests))
            node.held = [still]
            for holder in bounded:
                given = self.vector(holder.requests)
                still = _sub(still, given)
                node.ends.append(holder.free_by or 0.0)
                node.given.append(given)
                node.held.append(still)
            node.most = _sub(node.allocatable, unbounded)
            node.holders = [(h.pod, h.free_by) for h in held]

    def place(self, waiter: Waiter) -> Estimate:
        if self.spent > BUDGET:
            return Estimate(waiter.key, None, unplanned=True)
        allowed = waiter.member_nodes or (None,) * len(waiter.members)
        eligible = [
            self.nodes[n]
            for n in self.order
            if (waiter.nodes is None or n in waiter.nodes)
            and any(a is None or n in a for a in allowed)
        ]
        members = sorted(
            ((self.vector(m), a) for m, a in zip(waiter.members, allowed, strict=True)),
            key=lambda member: member[0],
            reverse=True,
        )
        demand = self.zero
        smallest = members[0][0]
        for member, _ in members:
            demand = _add(demand, member)
            smallest = _min(smallest, member)
        # Only nodes that could take the smallest member once every pod with a bound has gone
        # are looked at; how many of it each takes is kept up to date as the sweep meets the
        # moments its room changes (a release, a planned run beginning, ending, or coming
        # within reach of the job's run), and first fit runs once they take as many as the
        # job has members (for members all alike, exactly when they all fit).
        usable = {n.name: n for n in eligible if _fits(smallest, n.most)}
        if not usable:
            return self._never(waiter, eligible, members)
        runs = self._run_events(waiter, usable)
        taken: dict[str, int] = {}
        total = 0
        seen_release = seen_run = 0
        for moment in self.moments:
            self.spent += 1
            if self.spent > BUDGET:
                return Estimate(waiter.key, None, unplanned=True)
            if not _fits(
                demand, self.cluster_free[bisect.bisect_right(self.release_times, moment)]
            ):
                continue
            end = waiter.end(moment)
            release_stop = bisect.bisect_right(self.release_times, moment)
            run_stop = bisect.bisect_left(runs, (moment, 1, ""))
            stale: Collection[str]
            if not taken:
                stale = usable.keys()
            else:
                stale = {
                    name for _, name in self.releases[seen_release:release_stop] if name in usable
                } | {name for _, _, name in runs[seen_run:run_stop]}
                self.spent += release_stop - seen_release
            seen_release, seen_run = release_stop, run_stop
            for name in stale:
                count = _times(usable[name].free(moment, end), smallest)
                total += count - taken.get(name, 0)
                taken[name] = count
            self.spent += len(stale)
            if total >= len(members):
                placed, _ = _fit(members, list(usable.values()), moment, end)
                if placed is not None:
                    return self._commit(waiter, moment, end, placed)
        return self._never(waiter, eligible, members)

    def _run_events(
        self, waiter: Waiter, usable: Mapping[str, _Node]
    ) -> list[tuple[float, int, str]]:
        """When the plan's runs change the room of a usable node over the job's run, in order:
        (time, 0, node) for a change seen from that moment on, (time, 1, node) for one seen
        only after it (a run beginning at s comes within a run of length d begun after
        s - d). Releases are the plan's own list, shared by every job."""
        events: list[tuple[float, int, str]] = []
        length = waiter.runs_for
        for name, node in usable.items():
            for run in node.runs:
                events.append((run.start, 0, name))
                if run.end < FOREVER:
                    events.append((run.end, 0, name))
                events.append((run.start - length if length is not None else -FOREVER, 1, name))
        events.sort()
        return events

    def _commit(
        self, waiter: Waiter, moment: float, end: float, placed: list[tuple[_Node, Vector]]
    ) -> Estimate:
        counts: dict[str, int] = {}
        for node, used in placed:
            node.runs.append(_Run(moment, end, used, waiter.key))
            counts[node.name] = counts.get(node.name, 0) + 1
        if end < FOREVER:
            bisect.insort(self.moments, end)
        waits = sorted(
            pod
            for name in counts
            for pod, free_by in self.nodes[name].holders
            if free_by is not None and self.now < free_by <= moment
        )
        return Estimate(waiter.key, moment, counts, tuple(waits))

    def _never(self, waiter: Waiter, nodes: list[_Node], members: list[_Member]) -> Estimate:
        """No moment in the plan fits: say what holds the room for ever, or that nothing
        would."""
        empty = [
            _Node(node.name, node.allocatable, node.allocatable, held=[self.zero]) for node in nodes
        ]
        if _fit(members, empty, 0.0, 1.0)[0] is None:
            return Estimate(waiter.key, None, never_fits=True)
        held = sorted(
            {pod for node in nodes for pod, free_by in node.holders if free_by is None}
            | {run.owner for node in nodes for run in node.runs if run.end == FOREVER}
        )
        return Estimate(waiter.key, None, held_by=tuple(held))


def _fit(
    members: list[_Member], nodes: list[_Node], start: float, end: float
) -> tuple[list[tuple[_Node, Vector]] | None, int]:
    """First fit of the members, largest first, each on the nodes it may use, on the room
    free over [start, end); and how many nodes it looked at."""
    free: dict[str, Vector] = {}
    placed: list[tuple[_Node, Vector]] = []
    for need, allowed in members:
        for node in nodes:
            if allowed is not None and node.name not in allowed:
                continue
            if not _fits(need, node.most):
                continue  # not even once every pod with a bound has gone
            room = free.get(node.name)
            if room is None:
                room = free[node.name] = node.free(start, end)
            if _fits(need, room):
                free[node.name] = _sub(room, need)
                placed.append((node, need))
                break
        else:
            return None, len(free)
    return placed, len(free)


def plan_starts(
    now: float,
    allocatable: Mapping[str, Resources],
    holders: Iterable[Holder],
    waiters: Sequence[Waiter],
) -> list[Estimate]:
    """An estimate for each waiter, in their order."""
    plan = _Plan(now, allocatable, holders)
    return [plan.place(waiter) for waiter in waiters]
