"""What the scheduler knows of one node: its spec plus the requests of the pods on it."""

from __future__ import annotations

from koordgang.model.node import NodeInfo
from koordgang.model.resources import PODS, Resources


class NodeState:
    """A node and the sum of requests of every pod that counts on it (bound or assumed).

    ``info`` is None for a node that pods are bound to but that the informer has not shown
    yet (or has deleted): its usage is kept so that nothing is forgotten when it appears.
    """

    __slots__ = ("generation", "info", "name", "pod_count", "pods", "requested")

    def __init__(self, name: str, info: NodeInfo | None = None) -> None:
        self.name = name
        self.info = info
        self.requested: dict[str, int] = {}
        self.pod_count = 0
        self.pods: set[str] = set()
        #: Bumped on every change, so that derived data can tell it is stale.
        self.generation = 0

    def add(self, uid: str, requests: Resources) -> None:
        if uid in self.pods:
            return
        self.pods.add(uid)
        self.pod_count += 1
        requested = self.requested
        for name, amount in requests.items():
            requested[name] = requested.get(name, 0) + amount
        self.generation += 1

    def remove(self, uid: str, requests: Resources) -> None:
        if uid not in self.pods:
            return
        self.pods.discard(uid)
        self.pod_count -= 1
        requested = self.requested
        for name, amount in requests.items():
            left = requested.get(name, 0) - amount
            if left:
                requested[name] = left
            else:
                requested.pop(name, None)
        self.generation += 1

    def allocatable(self, name: str) -> int:
        return 0 if self.info is None else self.info.allocatable.get(name)

    def free(self, name: str) -> int:
        if name == PODS:
            return self.allocatable(PODS) - self.pod_count
        return self.allocatable(name) - self.requested.get(name, 0)

    def is_overcommitted(self) -> tuple[str, ...]:
        """Names of resources whose requests exceed allocatable (must always be empty)."""
        if self.info is None:
            return ()
        over = [n for n, v in self.requested.items() if v > self.info.allocatable.get(n)]
        if self.pod_count > self.info.allocatable.get(PODS):
            over.append(PODS)
        return tuple(over)
