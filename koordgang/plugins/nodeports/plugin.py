from __future__ import annotations

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.pod import PodInfo
from koordgang.model.ports import ports_conflict
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

REASON = "node(s) didn't have free ports for the requested pod ports"


class NodePorts:
    """A node must have every host port the pod asks for free, counting bound, assumed and
    tentatively placed pods. A port bound on ``0.0.0.0`` takes that port and protocol on
    every host IP; ports of different protocols never collide."""

    name = "NodePorts"
    #: The verdict depends on the pods of the node, so it is computed again when they change.
    scope = Scope.NODE

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        # Most pods ask for no host port: leaving the filter out keeps them off this path.
        if not pod.host_ports:
            return Status(Code.SKIP, plugin=self.name)
        return SUCCESS

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        wanted = pod.host_ports
        if not wanted:
            return SUCCESS
        in_use = snapshot.ports_in_use(node)
        if not in_use:
            return SUCCESS
        # A pod asks for a few ports and a node holds few: the pairwise check is cheap.
        for port in wanted:
            for used in in_use:
                if ports_conflict(port, used):
                    # Not unresolvable: preempting the pod that holds the port frees it.
                    return Status.unschedulable(self.name, REASON)
        return SUCCESS
