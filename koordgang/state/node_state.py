"""What the scheduler knows of one node: its spec plus the requests of the pods on it."""

from __future__ import annotations

import itertools
from collections import Counter

from koordgang.model.node import NodeInfo
from koordgang.model.pod import HostPort
from koordgang.model.resources import PODS, Resources

#: One counter for every version of every node, in the cache and in snapshots alike, so that a
#: version number names one state of one node wherever it was made (see ``NodeState.version``).
_versions = itertools.count(1)


def next_version() -> int:
    return next(_versions)


class NodeState:
    """A node and the sum of requests of every pod that counts on it (bound or assumed).

    ``info`` is None for a node that pods are bound to but that the informer has not shown
    yet (or has deleted): its usage is kept so that nothing is forgotten when it appears.
    """

    __slots__ = ("info", "name", "pod_count", "pods", "ports", "requested", "version")

    def __init__(self, name: str, info: NodeInfo | None = None) -> None:
        self.name = name
        self.info = info
        self.requested: dict[str, int] = {}
        self.pod_count = 0
        self.pods: set[str] = set()
        #: Host ports in use by the pods on the node (only pods that ask for one are counted).
        self.ports: Counter[HostPort] = Counter()
        #: Changes on every change of spec or usage, to a number never used before for any node:
        #: derived data (a score) made at one version is stale at any other.
        self.version = next_version()

    def add(self, uid: str, requests: Resources, ports: tuple[HostPort, ...] = ()) -> None:
        if uid in self.pods:
            return
        self.pods.add(uid)
        self.pod_count += 1
        requested = self.requested
        for name, amount in requests.items():
            requested[name] = requested.get(name, 0) + amount
        if ports:
            self.ports.update(ports)
        self.version = next_version()

    def remove(self, uid: str, requests: Resources, ports: tuple[HostPort, ...] = ()) -> None:
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
        if ports:
            self.ports.subtract(ports)
            for port in ports:
                if self.ports[port] <= 0:
                    del self.ports[port]
        self.version = next_version()

    def touch(self) -> None:
        """The spec changed: everything derived from the old one is stale."""
        self.version = next_version()

    def allocatable(self, name: str) -> int:
        return 0 if self.info is None else self.info.allocatable.get(name)

    def free(self, name: str) -> int:
        if name == PODS:
            return self.allocatable(PODS) - self.pod_count
        return self.allocatable(name) - self.requested.get(name, 0)
