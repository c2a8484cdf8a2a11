"""The ``default`` ClusterNetworkTopology: the object as last seen, its layers parsed, and its
domains over the current nodes.

One owner for these facts: the NetworkTopology plugin feeds it the object's events and places
gangs in its domains; the engine's status controller writes its status from it
(``engine/topology_status.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.model.topology import (
    TopologySpec,
    TopologySpecError,
    TopologyTree,
    parse_topology_spec,
)
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot

__all__ = ["ClusterTopology"]


class ClusterTopology:
    def __init__(self) -> None:
        #: The object as last seen (None: there is none).
        self.object: Mapping[str, Any] | None = None
        #: Its layers, when they can be used.
        self.spec: TopologySpec | None = None
        #: Why its layers cannot be used ("" when they can).
        self.problem = ""
        self._tree: TopologyTree | None = None
        self._tree_generation: object = None
        self._detail: tuple[TopologyTree, list[dict[str, Any]]] | None = None

    def update(self, obj: Mapping[str, Any]) -> str:
        """A new version of the object; returns its problem when it is a new one (to be told
        once), else ""."""
        self.object = obj
        try:
            spec = parse_topology_spec(obj)
        except TopologySpecError as error:
            problem = str(error)
            new = problem if problem != self.problem else ""
            self.spec, self.problem = None, problem
            return new
        if spec != self.spec:
            self._tree = None
        self.spec, self.problem = spec, ""
        return ""

    def delete(self) -> None:
        self.object, self.spec, self.problem = None, None, ""
        self._tree = None

    def tree(self, snapshot: Snapshot) -> TopologyTree | None:
        """The domains of the current nodes (rebuilt when the node set or labels change)."""
        if self.spec is None:
            return None
        generation = snapshot.cache.node_generation
        if self._tree is None or self._tree_generation != generation:
            nodes = [(n.name, n.info.labels) for n in snapshot.nodes if n.info is not None]
            self._tree = TopologyTree(self.spec, nodes)
            self._tree_generation = generation
        return self._tree

    def status(self, cache: SchedulerCache) -> dict[str, Any] | None:
        """What the object's status says: whether its layers form one chain and, when they do,
        the domains over the current nodes (None: there is no object)."""
        if self.object is None:
            return None
        condition = {
            "type": "Valid",
            "status": "False" if self.problem else "True",
            "reason": "InvalidTopologySpec" if self.problem else "Valid",
            "message": self.problem or "layers form one chain",
        }
        status: dict[str, Any] = {"conditions": [condition]}
        if self.spec is not None:
            tree = self.tree(Snapshot(cache))
            if tree is not None:
                if self._detail is None or self._detail[0] is not tree:
                    self._detail = (tree, tree.detail_status())
                status["detailStatus"] = self._detail[1]
        return status
