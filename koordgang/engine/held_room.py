"""The one owner of room held for pods that are not bound yet.

Room is held two ways: placements held for a group that waits for the rest of its members
(NonStrict, ``state/waiting``), and nominations while preemption's victims leave
(``state/nominations``). Either way the pod counts on its node in the cache as an assumed pod,
so that nobody else of ours takes the room. Holding and releasing are one operation each here,
so the cache and the two registries never disagree; the loop and the intake only ask.

A held placement is in the cache already when it is held: the cycle's commit assumed it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from koordgang.engine.parts import EnginePart, EngineParts
from koordgang.framework.results import UnreserveReason
from koordgang.model.group_key import GroupKey
from koordgang.model.pod import PodInfo
from koordgang.state.nominations import Nomination
from koordgang.state.snapshot import Placement
from koordgang.state.waiting import WaitingPod


class HeldRoom(EnginePart):
    def __init__(self, parts: EngineParts, requeue: Callable[[PodInfo], None]) -> None:
        super().__init__(parts)
        self._nominations = parts.framework.nominations
        #: Puts a pod whose room was released back where it belongs (the queue, or gated).
        self._requeue = requeue

    # -- nominations ---------------------------------------------------------------------------

    def nominate(self, pod: PodInfo, node: str, group: GroupKey) -> None:
        """Holds room on ``node`` for ``pod`` while victims leave (or, after a restart, where
        its ``status.nominatedNodeName`` says)."""
        self._nominations.add(pod, node, group)
        self._cache.assume(pod, node)

    def release_pod(self, uid: str) -> bool:
        """A pod that is gone holds nothing any more: its held placement and its nomination
        are dropped (the cache forgets the pod itself). True when it held room."""
        held = self._waiting.remove(uid) is not None
        return self.release_nomination(uid) is not None or held

    def release_nomination(self, uid: str) -> Nomination | None:
        """Gives the room of ``uid``'s nomination back; returns the nomination, if it had one."""
        released = self._nominations.remove(uid)
        if released is not None:
            self._cache.forget(uid)
        return released

    # -- held placements -----------------------------------------------------------------------

    def hold(
        self, pod: PodInfo, node: str, *, group: GroupKey, part: str, since: float, deadline: float
    ) -> None:
        """Keeps a placement the cycle committed, for ``group``, until ``deadline``."""
        self._waiting.add(pod, node, group=group, part=part, since=since, deadline=deadline)

    def to_bind(self, uid: str) -> WaitingPod | None:
        """A held placement whose group is complete: no longer held, bound now (the cache
        keeps it assumed until the binding is seen)."""
        return self._waiting.remove(uid)

    def release_group(self, group: GroupKey, reason: UnreserveReason) -> list[WaitingPod]:
        """Gives up every placement held for ``group``: the room is free again, the plugins
        hear why (Unreserve), and the pods are planned again."""
        released = self._waiting.release_group(group)
        if released:
            self._release(group, released, reason)
        return released

    def release_expired(self, now: float) -> int:
        """Groups whose held placements reached their deadline give them up; returns how many."""
        groups = self._waiting.expired(now)
        for group in groups:
            self.release_group(group, UnreserveReason.TIMEOUT)
        return len(groups)

    def release_on_nodes(self, nodes: Iterable[str]) -> None:
        """Held placements on nodes that are gone are worth nothing (the API server would
        accept a binding to them all the same): given up, and planned again."""
        gone = set(nodes)
        if not gone:
            return
        for waiting in [w for w in self._waiting if w.node in gone]:
            self._waiting.remove(waiting.pod.uid)
            self._release(waiting.group, [waiting], UnreserveReason.NODE_GONE)

    def _release(
        self, group: GroupKey, released: list[WaitingPod], reason: UnreserveReason
    ) -> None:
        for waiting in released:
            self._cache.forget(waiting.pod.uid)
        self._framework.run_unreserve(group, [Placement(w.pod, w.node) for w in released], reason)
        for waiting in released:
            current = self._cache.pod(waiting.pod.uid)
            if current is not None:
                self._requeue(current)
