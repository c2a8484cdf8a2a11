from __future__ import annotations

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.status import SUCCESS, Status
from koordgang.model.affinity import node_matches
from koordgang.model.pod import PodInfo
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

REASON = "node(s) didn't match Pod's node affinity/selector"


class NodeAffinity:
    name = "NodeAffinity"
    static = True

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        info = node.info
        if info is None:
            return Status.unresolvable(self.name, REASON)
        if not pod.node_selector and pod.required_affinity is None:
            return SUCCESS
        if node_matches(info.name, info.labels, pod.node_selector, pod.required_affinity):
            return SUCCESS
        return Status.unresolvable(self.name, REASON)
