from __future__ import annotations

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.status import SUCCESS, Status
from koordgang.model.pod import PodInfo
from koordgang.model.resources import PODS
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot


def insufficient_reason(name: str) -> str:
    return "Too many pods" if name == PODS else f"Insufficient {name}"


class Fit:
    """The node must have room for the pod's requests, counting bound and assumed pods."""

    name = "NodeResourcesFit"
    scope = Scope.NODE

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        short = snapshot.insufficient(node, pod.requests)
        if not short:
            return SUCCESS
        return Status.unschedulable(self.name, *(insufficient_reason(n) for n in short))
