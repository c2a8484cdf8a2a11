from __future__ import annotations

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.normalize import default_normalize
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.pod import PodInfo
from koordgang.model.taints import (
    EFFECT_PREFER_NO_SCHEDULE,
    OP_EXISTS,
    Taint,
    Toleration,
    first_untolerated,
)
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot


def untolerated_reason(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def tolerates_any_soft_taint(toleration: Toleration) -> bool:
    """Whether ``toleration`` tolerates every PreferNoSchedule taint, whatever the node."""
    return (
        not toleration.key
        and toleration.operator == OP_EXISTS
        and toleration.effect in ("", EFFECT_PREFER_NO_SCHEDULE)
    )


class TaintToleration:
    """Filters out nodes with an untolerated NoSchedule or NoExecute taint; scores lower the
    nodes with more untolerated PreferNoSchedule taints.

    Both read only the pod's tolerations and the node's taints, hence STATIC.
    """

    name = "TaintToleration"
    scope = Scope.STATIC
    #: Its score depends on the node's spec only.
    rises_with_usage = False
    #: kube-scheduler's default weight for this score.
    weight = 3

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

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        # Looking at the nodes here would cost a pass over them for every pod; the one case
        # known from the pod alone is a toleration of every soft taint: all nodes score 100.
        for toleration in pod.tolerations:
            if tolerates_any_soft_taint(toleration):
                return Status(Code.SKIP, plugin=self.name)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        """The number of the node's PreferNoSchedule taints the pod does not tolerate (higher is
        worse: ``normalize`` turns it around)."""
        info = node.info
        if info is None or not info.taints:
            return 0
        # Only tolerations with an empty or PreferNoSchedule effect can match such a taint:
        # ``tolerates`` checks the effect, so no separate selection of them is needed.
        count = 0
        for taint in info.taints:
            if taint.effect != EFFECT_PREFER_NO_SCHEDULE:
                continue
            if not any(t.tolerates(taint) for t in pod.tolerations):
                count += 1
        return count

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        """kube-scheduler's reverse normalization: the node with the most untolerated taints
        gets 0, one with none 100; when no node has any, all get 100."""
        default_normalize(scores, reverse=True)
