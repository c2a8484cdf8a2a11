from __future__ import annotations

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.status import SUCCESS, Status
from koordgang.model.pod import PodInfo
from koordgang.model.taints import Taint
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

UNSCHEDULABLE_REASON = "node(s) were unschedulable"
NOT_READY_REASON = "node(s) were not ready"
#: The NoSchedule taints Kubernetes puts on such nodes; a pod that tolerates them may go there
#: anyway (DaemonSet pods do). Every pod carries a NoExecute toleration for not-ready (added by
#: admission, to survive short outages); that one must not let it onto a NotReady node.
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
NOT_READY_TAINT = Taint("node.kubernetes.io/not-ready", "", "NoSchedule")


class NodeUnschedulable:
    name = "NodeUnschedulable"
    scope = Scope.STATIC

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        info = node.info
        if info is None:
            return Status.unresolvable(self.name, NOT_READY_REASON)
        if info.unschedulable and not _tolerates(pod, UNSCHEDULABLE_TAINT):
            return Status.unresolvable(self.name, UNSCHEDULABLE_REASON)
        if not info.ready and not _tolerates(pod, NOT_READY_TAINT):
            return Status.unresolvable(self.name, NOT_READY_REASON)
        return SUCCESS


def _tolerates(pod: PodInfo, taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in pod.tolerations)
