"""Pods placed but held back: their group's Permit said "wait" (a NonStrict gang short of its
minimum). They are assumed in the cache, so that nobody else takes their room; this registry is
the one place that knows they are held, for which group, and until when.

Pure and synchronous; the engine adds and releases, plugins read.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

from koordgang.model.group_key import GroupKey
from koordgang.model.pod import PodInfo


@dataclass(slots=True)
class WaitingPod:
    pod: PodInfo
    node: str
    #: The SchedulingGroup and GroupPart it was placed for.
    group: GroupKey
    part: str
    #: When it was placed (monotonic clock).
    since: float


_K = TypeVar("_K")


class WaitingPods:
    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}
        self._by_group: dict[GroupKey, dict[str, WaitingPod]] = {}
        self._by_part: dict[str, dict[str, WaitingPod]] = {}
        #: group -> when its held pods are given up, and the same as a heap for the next one.
        self._deadlines: dict[GroupKey, float] = {}
        self._heap: list[tuple[float, GroupKey]] = []

    # -- changes -----------------------------------------------------------------------------

    def add(
        self, pod: PodInfo, node: str, *, group: GroupKey, part: str, since: float, deadline: float
    ) -> None:
        self.remove(pod.uid)
        waiting = WaitingPod(pod, node, group, part, since)
        self._pods[pod.uid] = waiting
        self._by_group.setdefault(group, {})[pod.uid] = waiting
        self._by_part.setdefault(part, {})[pod.uid] = waiting
        current = self._deadlines.get(group)
        if current is None or deadline < current:
            self._deadlines[group] = deadline
            heapq.heappush(self._heap, (deadline, group))

    def update(self, pod: PodInfo) -> None:
        """A newer version of a held pod (its labels, its status) from the informer."""
        waiting = self._pods.get(pod.uid)
        if waiting is not None:
            waiting.pod = pod

    def remove(self, uid: str) -> WaitingPod | None:
        waiting = self._pods.pop(uid, None)
        if waiting is None:
            return None
        _forget(self._by_group, waiting.group, uid)
        _forget(self._by_part, waiting.part, uid)
        if waiting.group not in self._by_group:
            self._deadlines.pop(waiting.group, None)
        return waiting

    def release_group(self, group: GroupKey) -> list[WaitingPod]:
        """Removes and returns every pod held for ``group``."""
        released = list(self._by_group.get(group, {}).values())
        for waiting in released:
            self.remove(waiting.pod.uid)
        return released

    # -- reading -----------------------------------------------------------------------------

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def in_part(self, part: str) -> list[WaitingPod]:
        return list(self._by_part.get(part, {}).values())

    def count_in_part(self, part: str) -> int:
        return len(self._by_part.get(part, ()))

    def deadline(self, group: GroupKey) -> float | None:
        return self._deadlines.get(group)

    def next_deadline(self) -> float | None:
        heap = self._heap
        while heap and self._deadlines.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def expired(self, now: float) -> list[GroupKey]:
        """Groups whose deadline has come (``now`` at or past it), earliest first."""
        groups: list[GroupKey] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            deadline, group = heapq.heappop(heap)
            # A group held again with the same deadline has two entries: report it once.
            if self._deadlines.get(group) == deadline and group not in groups:
                groups.append(group)
        return groups


def _forget(index: dict[_K, dict[str, WaitingPod]], key: _K, uid: str) -> None:
    members = index.get(key)
    if members is not None:
        members.pop(uid, None)
        if not members:
            del index[key]
