"""One job's sweep over the moments of the start plan (``start_plan.py``): how many members
of its smallest size the nodes with planned runs take at each moment, kept up to date as the
moments advance, a node looked at only when its count may change.

The nodes without runs, and those past their last run's end, are counted in bulk by the
index (``start_room.SlotIndex``); the others are looked at one by one, each first at its first
slot time (if it has room for a member all along some stretch as long as the job), then again
when it may take one more (a holder goes or a run ends and one more fits then), when a run
planned there comes within the job's run (it may take fewer), and at its last run's end (the
bulk counts it from then on).
"""

from __future__ import annotations

import heapq
import math

from koordgang.state.start_room import FOREVER, NodeRoom, SlotIndex, times

__all__ = ["Sweep"]

#: (moment, version of the node's count it was found for, node).
_Wake = tuple[float, int, str]


class Sweep:
    def __init__(
        self,
        index: SlotIndex,
        nodes: dict[str, NodeRoom],
        wanted: int,
        runs_for: float | None,
        ends_by: float | None,
    ) -> None:
        self.index = index
        self.nodes = nodes
        self.wanted = wanted
        self.runs_for = runs_for
        self.ends_by = ends_by
        #: Members each node looked at one by one takes, and their sum.
        self.counts: dict[str, int] = {}
        self.looked = 0
        self._versions: dict[str, int] = {}
        self._rises: list[_Wake] = []
        self._falls: list[_Wake] = []
        # A job with a deadline of its own may run shorter than its length: every node with
        # room at some moment is looked at.
        length = 0.0 if ends_by is not None else FOREVER if runs_for is None else runs_for
        self._first = index.looked_at(length)
        self._cursor = 0

    def advance(self, moment: float, end: float) -> int:
        """Brings the counts to ``moment`` (the job running until ``end``); how many nodes
        it looked at."""
        index = self.index
        stale: set[str] = set()
        first = self._first
        while self._cursor < len(first) and first[self._cursor][0] <= moment:
            name = first[self._cursor][1]
            if index.until[name] > moment:
                stale.add(name)
            self._cursor += 1
        # A run that comes within the job's run at f counts from the moments after f.
        for heap, due in ((self._rises, moment), (self._falls, math.nextafter(moment, -FOREVER))):
            while heap and heap[0][0] <= due:
                _, version, name = heapq.heappop(heap)
                if self._versions[name] == version:
                    stale.add(name)
        for name in stale:
            self._look(self.nodes[name], moment, end)
        return len(stale)

    def _look(self, node: NodeRoom, moment: float, end: float) -> None:
        name = node.name
        until = self.index.until[name]
        # Past its last run's end it is counted in bulk.
        count = 0
        if moment < until:
            count = min(self.wanted, times(node.free(moment, end), self.index.need))
        self.looked += count - self.counts.get(name, 0)
        self.counts[name] = count
        version = self._versions[name] = self._versions.get(name, 0) + 1
        if moment >= until:
            return
        rise = min(until, self._rise(node, count, moment))
        if rise < FOREVER:
            heapq.heappush(self._rises, (rise, version, name))
        fall = self._fall(node, moment) if count else FOREVER
        if fall < FOREVER:
            heapq.heappush(self._falls, (fall, version, name))

    def next_moment(self, moment: float) -> float:
        """The first moment after ``moment`` the members taken may grow; FOREVER if never."""
        first = self._first
        return min(
            self.index.bulk_reach(self.wanted - self.looked, moment),
            first[self._cursor][0] if self._cursor < len(first) else FOREVER,
            self._rises[0][0] if self._rises else FOREVER,
        )

    def _rise(self, node: NodeRoom, count: int, moment: float) -> float:
        """When a node that takes ``count`` members at ``moment`` may take one more: not
        before its holders alone would let it, nor before one more fits beside its runs."""
        slots = self.index.slots[node.name]
        if count >= self.wanted or count >= len(slots):
            return FOREVER
        after = max(moment, math.nextafter(slots[count], -FOREVER))
        return node.next_rise(after, self.index.until[node.name], self.index.need, count)

    def _fall(self, node: NodeRoom, moment: float) -> float:
        """The last moment before a run planned on the node comes within the job's run
        (from a moment after it, the job would overlap it); FOREVER if none will."""
        soonest = FOREVER
        for run in node.runs:
            if run.end <= moment:
                continue
            if self.ends_by is not None and self.ends_by <= run.start:
                # The job's own deadline ends it first, unless it starts inside the run.
                enters = math.nextafter(run.start, -FOREVER)
            elif self.runs_for is None:
                continue  # it overlaps every run of the job already
            else:
                enters = run.start - self.runs_for
            if moment <= enters < soonest:
                soonest = enters
        return soonest
