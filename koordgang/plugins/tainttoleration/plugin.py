from __future__ import annotations

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.status import SUCCESS, Status
from koordgang.model.pod import PodInfo
from koordgang.model.taints import Taint, first_untolerated
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot


def untolerated_reason(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


class TaintToleration:
    name = "TaintToleration"
    static = True

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        info = node.info
        if info is None or not info.taints:
            return SUCCESS
        taint = first_untolerated(info.taints, pod.tolerations)
        if taint is None:
            return SUCCESS
        return Status.unresolvable(self.name, untolerated_reason(taint))
