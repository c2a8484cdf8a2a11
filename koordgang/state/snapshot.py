"""A view of the cache for one scheduling cycle, with tentative placements on top.

A cycle may place several pods (all members of a gang group) before deciding whether to keep
any of them. Tentative placements live in this overlay, not in the cache; committing turns them
into assumed pods, and dropping the snapshot forgets them. Since the cycle runs without awaiting,
the cache underneath cannot change while the snapshot is in use.
"""

from __future__ import annotations

from dataclasses import dataclass

from koordgang.model.pod import PodInfo
from koordgang.model.resources import PODS, Resources
from koordgang.state.cache import SchedulerCache
from koordgang.state.node_state import NodeState


@dataclass(frozen=True, slots=True)
class Placement:
    pod: PodInfo
    node_name: str


class Snapshot:
    __slots__ = ("_extra", "_extra_pods", "cache", "nodes", "placements")

    def __init__(self, cache: SchedulerCache) -> None:
        self.cache = cache
        self.nodes: list[NodeState] = cache.nodes()
        self._extra: dict[str, dict[str, int]] = {}
        self._extra_pods: dict[str, int] = {}
        self.placements: list[Placement] = []

    def free(self, node: NodeState, name: str) -> int:
        free = node.free(name)
        extra = self._extra.get(node.name)
        if extra is None:
            return free
        if name == PODS:
            return free - self._extra_pods.get(node.name, 0)
        return free - extra.get(name, 0)

    def insufficient(self, node: NodeState, requests: Resources) -> tuple[str, ...]:
        """Resources (and ``pods``) that ``node`` lacks for ``requests``; empty if it fits."""
        info = node.info
        if info is None:
            return ()
        allocatable = info.allocatable
        requested = node.requested
        extra = self._extra.get(node.name)
        short: list[str] | None = None
        for name, amount in requests.items():
            used = requested.get(name, 0)
            if extra is not None:
                used += extra.get(name, 0)
            if used + amount > allocatable.get(name):
                if short is None:
                    short = []
                short.append(name)
        pods = node.pod_count + (self._extra_pods.get(node.name, 0) if extra is not None else 0)
        if pods + 1 > allocatable.get(PODS):
            if short is None:
                short = []
            short.append(PODS)
        return () if short is None else tuple(short)

    def used(self, node: NodeState, name: str) -> int:
        """Requested amount of ``name`` on ``node`` including tentative placements."""
        used = node.requested.get(name, 0)
        extra = self._extra.get(node.name)
        if extra is not None:
            used += extra.get(name, 0)
        return used

    def place(self, pod: PodInfo, node: NodeState) -> None:
        extra = self._extra.setdefault(node.name, {})
        for name, amount in pod.requests.items():
            extra[name] = extra.get(name, 0) + amount
        self._extra_pods[node.name] = self._extra_pods.get(node.name, 0) + 1
        self.placements.append(Placement(pod, node.name))

    def overlay_count(self, name: str) -> int:
        """Pods tentatively placed on ``name`` in this snapshot."""
        return self._extra_pods.get(name, 0)

    def unplace_all(self) -> None:
        for name in self._extra_pods:
            self.cache.note_freed(name)
        self._extra.clear()
        self._extra_pods.clear()
        self.placements.clear()

    def commit(self) -> list[Placement]:
        """Turns every tentative placement into an assumed pod in the cache."""
        placements = list(self.placements)
        for placement in placements:
            self.cache.assume(placement.pod, placement.node_name)
        self._extra.clear()
        self._extra_pods.clear()
        self.placements.clear()
        return placements
