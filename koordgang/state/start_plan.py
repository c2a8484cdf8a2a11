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

Cost. Amounts are tuples of integers over the resources that appear. A job is not a look at
every node at every moment: for the size of its smallest member, an index
(``start_room.SlotIndex``, one per size and set of usable nodes, shared by the jobs alike)
holds when each node has room for a 1st, 2nd, ... of them by its holders alone. Nodes the
plan put no job on, and nodes past the end of their last planned run, are counted in bulk
from it (a bisection); a node with runs before that is looked at one by one, and only by a
job that could fit in some stretch it has room all along (``start_sweep.py``). The moments a
job tries are those its count of members may grow; first fit runs once they reach its
members, on the nodes with room then, the oldest room first. A plan takes no more than
``BUDGET`` looks (a node looked at, a moment tried): jobs left when it is spent get no
estimate (None, with ``unplanned``), never a wrong one.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from koordgang.model.resources import Resources
from koordgang.state.start_room import (
    FOREVER,
    NodeRoom,
    Run,
    SlotIndex,
    Vector,
    add,
    fits,
    least,
    sub,
)
from koordgang.state.start_sweep import Sweep

__all__ = ["BUDGET", "Estimate", "Holder", "Timelines", "Waiter", "plan_starts"]

#: Looks a plan may take (a node's room over a job's run, or a moment tried): a bound on a
#: plan's time should a queue defeat the index (5,000 nodes and 1,000 jobs take ~80,000).
BUDGET = 1_000_000
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


@dataclass(frozen=True, slots=True)
class _Timeline:
    """What a node's holders hold over time (its room is its allocatable less that)."""

    holders: tuple[Holder, ...]
    #: Held by the holders without a bound.
    unbounded: Vector
    ends: list[float]
    held: list[Vector]
    pods: list[tuple[str, float | None]]
    #: Good for plans made before this moment (the first bound among its holders): then
    #: that holder is no longer counted.
    good_before: float


class Timelines:
    """Each node's room over time, kept from one plan to the next: a node whose holders are
    the very objects of the last plan (their reader keeps a holder while its bound holds) is
    not worked out again. At 100,000 running pods, working
    every node out was a quarter of a plan. For one plan at a time."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._kept: dict[str, _Timeline] = {}

    def start(self, names: list[str]) -> dict[str, _Timeline]:
        """The timelines kept for a plan over ``names`` (none if the last was over others:
        their vectors would not line up)."""
        if names != self._names:
            self._names = names
            self._kept = {}
        return self._kept

    def keep(self, kept: dict[str, _Timeline]) -> None:
        self._kept = kept


class _Plan:
    def __init__(
        self,
        now: float,
        allocatable: Mapping[str, Resources],
        holders: Iterable[Holder],
        cap: int,
        timelines: Timelines | None = None,
    ) -> None:
        self.now = now
        self.cap = max(1, cap)
        by_node: dict[str, list[Holder]] = {}
        amounts: set[Resources] = set(allocatable.values())
        for holder in holders:
            by_node.setdefault(holder.node, []).append(holder)
            amounts.add(holder.requests)
        # Pods of a cluster ask for few distinct amounts: each is made a vector once.
        self.names = sorted({n for room in amounts for n in room})
        self._vectors: dict[Resources, Vector] = {}
        self.zero: Vector = (0,) * len(self.names)
        timelines = timelines if timelines is not None else Timelines()
        last = timelines.start(self.names)
        kept: dict[str, _Timeline] = {}
        self.nodes: dict[str, NodeRoom] = {}
        for name, room in allocatable.items():
            held = tuple(by_node.get(name, ()))
            vector = self.vector(room)
            timeline = last.get(name)
            if timeline is None or timeline.holders != held or timeline.good_before <= now:
                timeline = self._timeline(held)
            kept[name] = timeline
            self.nodes[name] = NodeRoom(
                name,
                vector,
                sub(vector, timeline.unbounded),
                timeline.ends,
                timeline.held,
                timeline.pods,
            )
        timelines.keep(kept)
        self.order = sorted(self.nodes)
        #: One index per member size and set of usable nodes, shared by the jobs alike.
        self.indexes: dict[Hashable, SlotIndex] = {}
        self.spent = 0

    def vector(self, room: Resources) -> Vector:
        found = self._vectors.get(room)
        if found is None:
            found = self._vectors[room] = tuple(map(room.get, self.names))
        return found

    def _timeline(self, held: tuple[Holder, ...]) -> _Timeline:
        unbounded = self.zero
        bounded: list[tuple[float, Vector]] = []
        for holder in held:
            vector = self.vector(holder.requests)
            if holder.free_by is None:
                unbounded = add(unbounded, vector)
            elif holder.free_by > self.now:
                bounded.append((holder.free_by, vector))
        bounded.sort(key=lambda item: item[0])
        still = unbounded
        for _, vector in bounded:
            still = add(still, vector)
        ends: list[float] = []
        steps = [still]
        for free_by, vector in bounded:
            still = sub(still, vector)
            ends.append(free_by)
            steps.append(still)
        return _Timeline(
            held,
            unbounded,
            ends,
            steps,
            [(h.pod, h.free_by) for h in held],
            ends[0] if ends else FOREVER,
        )

    def _eligible(self, waiter: Waiter) -> list[NodeRoom]:
        allowed = waiter.member_nodes or (None,)
        return [
            self.nodes[n]
            for n in self.order
            if (waiter.nodes is None or n in waiter.nodes)
            and any(a is None or n in a for a in allowed)
        ]

    def _index(self, waiter: Waiter, need: Vector) -> SlotIndex:
        key = (need, waiter.nodes, waiter.member_nodes)
        index = self.indexes.get(key)
        if index is None:
            index = self.indexes[key] = SlotIndex(self.now, need, self.cap, self._eligible(waiter))
        return index

    def place(self, waiter: Waiter) -> Estimate:
        if self.spent >= BUDGET:
            return Estimate(waiter.key, None, unplanned=True)
        allowed = waiter.member_nodes or (None,) * len(waiter.members)
        members = sorted(
            ((self.vector(m), a) for m, a in zip(waiter.members, allowed, strict=True)),
            key=lambda member: member[0],
            reverse=True,
        )
        smallest = members[0][0]
        for member, _ in members:
            smallest = least(smallest, member)
        index = self._index(waiter, smallest)
        if not index.slots:
            return self._never(waiter, members)
        found = self._sweep(waiter, members, index)
        if found is None:
            if self.spent >= BUDGET:
                return Estimate(waiter.key, None, unplanned=True)
            return self._never(waiter, members)
        return self._commit(waiter, *found)

    def _sweep(
        self, waiter: Waiter, members: list[_Member], index: SlotIndex
    ) -> tuple[float, float, list[tuple[NodeRoom, Vector, int]]] | None:
        """The first moment the members fit, and where. The moments tried are those at which
        the room for members of the smallest size grows (``start_sweep.py``)."""
        wanted = len(members)
        sweep = Sweep(index, self.nodes, wanted, waiter.runs_for, waiter.ends_by)
        moment = self.now
        while moment < FOREVER:
            end = waiter.end(moment)
            self.spent += 1 + sweep.advance(moment, end)
            if self.spent > BUDGET:
                return None
            if index.bulk_count(moment) + sweep.looked >= wanted:
                placed = self._fit(members, index, sweep.counts, moment, end)
                if placed is not None:
                    return moment, end, placed
            moment = sweep.next_moment(moment)
        return None

    def _fit(
        self,
        members: list[_Member],
        index: SlotIndex,
        counts: Mapping[str, int],
        moment: float,
        end: float,
    ) -> list[tuple[NodeRoom, Vector, int]] | None:
        """Where the members go at ``moment``: the nodes with room for the smallest, by when
        they first had room (the oldest room first), members largest first, each on the
        first node it fits."""
        dirty = sorted((index.slots[n][0], n) for n, c in counts.items() if c > 0)
        clean = itertools.takewhile(lambda e: e[0] <= moment, index.bulk_first)
        candidates = heapq.merge(dirty, clean)
        need, allowed = members[0]
        if all(member == (need, allowed) for member in members):
            # Members alike: each node takes as many as it has room for.
            placed: list[tuple[NodeRoom, Vector, int]] = []
            left = len(members)
            for _, name in candidates:
                self.spent += 1
                if index.until.get(name, -FOREVER) > moment:
                    count = counts[name]
                else:
                    count = bisect.bisect_right(index.slots[name], moment)
                take = min(left, count)
                if take:
                    placed.append((self.nodes[name], tuple(x * take for x in need), take))
                    left -= take
                    if not left:
                        return placed
            return None
        nodes = [self.nodes[name] for _, name in candidates]
        self.spent += len(nodes)
        return _first_fit(members, nodes, lambda node: node.free(moment, end))

    def _commit(
        self,
        waiter: Waiter,
        moment: float,
        end: float,
        placed: list[tuple[NodeRoom, Vector, int]],
    ) -> Estimate:
        counts: dict[str, int] = {}
        for node, used, count in placed:
            node.add_run(Run(moment, end, used, waiter.key))
            for index in self.indexes.values():
                index.ran(node, end)
            counts[node.name] = counts.get(node.name, 0) + count
        waits = sorted(
            pod
            for name in counts
            for pod, free_by in self.nodes[name].holders
            if free_by is not None and self.now < free_by <= moment
        )
        return Estimate(waiter.key, moment, counts, tuple(waits))

    def _never(self, waiter: Waiter, members: list[_Member]) -> Estimate:
        """No moment in the plan fits: say what holds the room for ever, or that nothing
        would."""
        nodes = self._eligible(waiter)
        if _first_fit(members, nodes, lambda node: node.allocatable, empty=True) is None:
            return Estimate(waiter.key, None, never_fits=True)
        held = sorted(
            {pod for node in nodes for pod, free_by in node.holders if free_by is None}
            | {run.owner for node in nodes for run in node.runs if run.end == FOREVER}
        )
        return Estimate(waiter.key, None, held_by=tuple(held))


def _first_fit(
    members: list[_Member],
    nodes: list[NodeRoom],
    room: Callable[[NodeRoom], Vector],
    *,
    empty: bool = False,
) -> list[tuple[NodeRoom, Vector, int]] | None:
    """First fit of the members, largest first, each on the nodes it may use, on ``room``
    (``empty``: the nodes' whole room, holders aside)."""
    free: dict[str, Vector] = {}
    placed: list[tuple[NodeRoom, Vector, int]] = []
    for need, allowed in members:
        for node in nodes:
            if allowed is not None and node.name not in allowed:
                continue
            if not empty and not fits(need, node.most):
                continue  # not even once every pod with a bound has gone
            left = free.get(node.name)
            if left is None:
                left = free[node.name] = room(node)
            if fits(need, left):
                free[node.name] = sub(left, need)
                placed.append((node, need, 1))
                break
        else:
            return None
    return placed


def plan_starts(
    now: float,
    allocatable: Mapping[str, Resources],
    holders: Iterable[Holder],
    waiters: Sequence[Waiter],
    timelines: Timelines | None = None,
) -> list[Estimate]:
    """An estimate for each waiter, in their order; ``timelines``: the nodes' room over time
    as the last plan given them worked it out."""
    cap = max((len(w.members) for w in waiters), default=1)
    plan = _Plan(now, allocatable, holders, cap, timelines)
    return [plan.place(waiter) for waiter in waiters]
