"""The room of each node over time, for the start plan (``start_plan.py``), and an index of the
nodes by when they have room for a kind of member.

A node's room is its allocatable less what its holders hold: holders only go (at their
bounds), so without planned runs its free room only grows, and the moments it has room for a
1st, 2nd, ... member of a given size ("slot times") are found once from its holders. A node
the plan put no job on ("clean") then needs no look at all: how many members of that size it
takes at a moment is how many of its slot times have passed. The index keeps, for one member
size and one set of usable nodes, the clean nodes' slot times in one sorted list (how many
members the clean nodes take at t is a bisection; the moment they take k is the k-th entry),
and the nodes with planned runs by their first slot time, to be looked at one by one.
"""

from __future__ import annotations

import bisect
import operator
from dataclasses import dataclass, field

FOREVER = float("inf")

Vector = tuple[int, ...]


# Vectors of one plan all have its resources' length: map() over two of them is zip's
# strict pairing, at a fraction of a generator's cost (these are most of a plan's time).


def add(a: Vector, b: Vector) -> Vector:
    return tuple(map(operator.add, a, b))


def sub(a: Vector, b: Vector) -> Vector:
    return tuple(map(operator.sub, a, b))


def least(a: Vector, b: Vector) -> Vector:
    return tuple(map(min, a, b))


def times(free: Vector, need: Vector) -> int:
    """How many of ``need`` fit in ``free``."""
    counts = [f // n for f, n in zip(free, need, strict=False) if n > 0]
    return max(0, min(counts)) if counts else 1 << 30


def fits(need: Vector, free: Vector) -> bool:
    """Resource by resource, of those ``need`` asks for (room over-committed in another does
    not matter to it)."""
    return all(n <= f for n, f in zip(need, free, strict=False) if n)


#: Room beyond any amount: for the resources a member does not ask for.
_UNBOUNDED = 1 << 62


def room_for(allocatable: Vector, need: Vector, count: int) -> Vector:
    """What may be used on a node that has room for ``count`` of ``need`` beside it."""
    return tuple(
        a - count * n if n else _UNBOUNDED for a, n in zip(allocatable, need, strict=False)
    )


@dataclass(slots=True)
class Run:
    """A job's members on a node in the plan: ``used`` over [start, end)."""

    start: float
    end: float
    used: Vector
    owner: str


@dataclass(slots=True)
class NodeRoom:
    name: str
    allocatable: Vector
    #: Free now if every holder with a bound had gone (holders without one still there).
    most: Vector
    #: Release moments of the holders with a bound, in order, and what each gives back.
    ends: list[float] = field(default_factory=list)
    #: What is still held after ``ends[i]``: held[i + 1]; held[0] is what is held now.
    held: list[Vector] = field(default_factory=list)
    #: (pod, free_by) of every holder, for the explanation.
    holders: list[tuple[str, float | None]] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    #: What the runs use over time, as steps: ``usage[i]`` from ``steps[i]`` to the next
    #: (nothing before the first). A deep queue plans many runs on a node, and the plan asks
    #: what a node uses at a moment far more often than it adds a run.
    steps: list[float] = field(default_factory=list)
    usage: list[Vector] = field(default_factory=list)

    def free(self, start: float, end: float) -> Vector:
        """The least free at any moment of [start, end), resource by resource. Usage only
        falls as holders go, except where a run begins: the most used is at ``start`` or at
        a step of the runs' usage within the interval."""
        steps = self.steps
        inside = steps[bisect.bisect_right(steps, start) : bisect.bisect_left(steps, end)]
        lowest = self.allocatable
        for moment in (start, *inside):
            lowest = least(lowest, sub(self.allocatable, self.used_at(moment)))
        return lowest

    def slot_times(self, now: float, need: Vector, cap: int) -> list[float]:
        """When this node, its runs aside, has room for a 1st, 2nd, ... ``need`` (at most
        ``cap`` of them)."""
        found: list[float] = []
        held = self.held
        index = 0
        for count in range(1, cap + 1):
            limit = room_for(self.allocatable, need, count)
            while index < len(held) and not all(map(operator.le, held[index], limit)):
                index += 1
            if index == len(held):
                break
            found.append(self.ends[index - 1] if index else now)
        return found

    def used_at(self, moment: float) -> Vector:
        used = self.held[bisect.bisect_right(self.ends, moment)]
        step = bisect.bisect_right(self.steps, moment)
        return add(used, self.usage[step - 1]) if step else used

    def next_rise(self, after: float, until: float, need: Vector, count: int) -> float:
        """The first moment after ``after``, and before ``until``, at which more than
        ``count`` of ``need`` fit beside the holders and the runs then (its room grows only
        as a holder goes or a run ends); FOREVER if none."""
        ends = self.ends
        moments = ends[bisect.bisect_right(ends, after) : bisect.bisect_left(ends, until)]
        moments += [run.end for run in self.runs if after < run.end < until]
        moments.sort()
        limit = room_for(self.allocatable, need, count + 1)
        for moment in moments:
            if all(map(operator.le, self.used_at(moment), limit)):
                return moment
        return FOREVER

    def add_run(self, run: Run) -> None:
        self.runs.append(run)
        steps, usage = self.steps, self.usage
        for moment in (run.start, run.end):
            at = bisect.bisect_left(steps, moment)
            if moment < FOREVER and (at == len(steps) or steps[at] != moment):
                steps.insert(at, moment)
                usage.insert(at, usage[at - 1] if at else (0,) * len(self.allocatable))
        first = bisect.bisect_left(steps, run.start)
        last = bisect.bisect_left(steps, run.end)
        for at in range(first, last):
            usage[at] = add(usage[at], run.used)

    def longest_gap(self, after: float, until: float, need: Vector) -> float:
        """The longest stretch between ``after`` and ``until`` over which, at every moment,
        ``need`` fits beside the holders and the runs; FOREVER when one lasts through
        ``until`` (from there, with its runs over, its room only grows)."""
        moments = sorted(
            {after}
            | {end for end in self.ends if after < end < until}
            | {r.start for r in self.runs if after < r.start < until}
            | {r.end for r in self.runs if after < r.end < until}
        )
        longest = 0.0
        opened: float | None = None
        for moment in moments:
            if fits(need, sub(self.allocatable, self.used_at(moment))):
                if opened is None:
                    opened = moment
            elif opened is not None:
                longest = max(longest, moment - opened)
                opened = None
        return FOREVER if opened is not None else longest


class SlotIndex:
    """The usable nodes for members of one size, by when they have room for them.

    A node whose runs have all ended by a moment is, from then on, as a clean one: its slot
    times, none before its last run's end, are counted in bulk (``bulk_times``). Before that
    end it is looked at one by one, from its first slot time, and only by a job that could
    run in the longest stretch it has room for a member all along (``gaps``): on most nodes
    with runs, each run begins as room comes free, and no job fits before the last ends."""

    def __init__(self, now: float, need: Vector, cap: int, nodes: list[NodeRoom]) -> None:
        self.need = need
        self.cap = cap
        #: Slot times of every usable node that could ever take one, its runs aside.
        self.slots: dict[str, list[float]] = {}
        #: When the last run planned on a node ends (absent: none planned).
        self.until: dict[str, float] = {}
        #: The slot times counted in bulk, all in one sorted list, and (first of them, node).
        self.bulk_times: list[float] = []
        self.bulk_first: list[tuple[float, str]] = []
        #: The longest stretch each node with runs has room for a member before its last
        #: run ends, and (-that, node) in order, longest first.
        self.gaps: dict[str, float] = {}
        self.by_gap: list[tuple[float, str]] = []
        self.now = now
        for node in nodes:
            if not fits(need, node.most):
                continue
            slots = node.slot_times(now, need, cap)
            if not slots:
                continue
            self.slots[node.name] = slots
            if node.runs:
                self.until[node.name] = max(run.end for run in node.runs)
                gap = self.gaps[node.name] = node.longest_gap(slots[0], self.until[node.name], need)
                self.by_gap.append((-gap, node.name))
            bulk = self._bulk(node.name)
            if bulk:
                self.bulk_first.append((bulk[0], node.name))
                self.bulk_times.extend(bulk)
        self.bulk_times.sort()
        self.bulk_first.sort()
        self.by_gap.sort()

    def _bulk(self, name: str) -> list[float]:
        until = self.until.get(name)
        slots = self.slots[name]
        if until is None:
            return slots
        return [] if until == FOREVER else [max(moment, until) for moment in slots]

    def ran(self, node: NodeRoom, end: float) -> None:
        """A run was planned on ``node``, ending at ``end``."""
        name = node.name
        slots = self.slots.get(name)
        if slots is None:
            return
        before = self.until.get(name)
        if before is not None:
            gap = self.gaps[name]
            del self.by_gap[bisect.bisect_left(self.by_gap, (-gap, name))]
        if before is None or before < end:
            old = self._bulk(name)
            if old:
                del self.bulk_first[bisect.bisect_left(self.bulk_first, (old[0], name))]
                for moment in old:
                    del self.bulk_times[bisect.bisect_left(self.bulk_times, moment)]
            self.until[name] = end
            new = self._bulk(name)
            if new:
                bisect.insort(self.bulk_first, (new[0], name))
                for moment in new:
                    bisect.insort(self.bulk_times, moment)
        gap = self.gaps[name] = node.longest_gap(slots[0], self.until[name], self.need)
        bisect.insort(self.by_gap, (-gap, name))

    def looked_at(self, length: float) -> list[tuple[float, str]]:
        """(first slot time, node) of the nodes with runs that have room for a member all
        along some stretch of ``length`` before their last run ends, by that time."""
        found = []
        for gap, name in self.by_gap:
            if -gap < length or not gap:
                break  # too short, or no room at all before its last run ends
            found.append((self.slots[name][0], name))
        found.sort()
        return found

    def bulk_count(self, moment: float) -> int:
        return bisect.bisect_right(self.bulk_times, moment)

    def bulk_reach(self, count: int, after: float) -> float:
        """The first moment after ``after`` at which the nodes counted in bulk take ``count``
        members (at least one more than at ``after``); FOREVER if never."""
        index = max(count - 1, bisect.bisect_right(self.bulk_times, after))
        return self.bulk_times[index] if index < len(self.bulk_times) else FOREVER
