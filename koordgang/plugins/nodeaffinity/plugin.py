from __future__ import annotations

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.normalize import default_normalize
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.affinity import node_matches
from koordgang.model.pod import PodInfo
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

REASON = "node(s) didn't match Pod's node affinity/selector"


class NodeAffinity:
    """Filters by nodeSelector and required node affinity; scores by preferred node affinity.

    Both read only the pod's spec and the node's name and labels, hence STATIC.
    """

    name = "NodeAffinity"
    scope = Scope.STATIC
    #: Its score depends on the node's spec only.
    rises_with_usage = False
    #: kube-scheduler's default weight for this score.
    weight = 2

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

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        # Without preferences every node scores 0: not scoring changes no ranking.
        if not pod.preferred_affinity:
            return Status(Code.SKIP, plugin=self.name)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        """The sum of the weights of the preferred terms the node matches."""
        info = node.info
        if info is None:
            return 0
        total = 0
        for preferred in pod.preferred_affinity:
            if preferred.term.matches(info.name, info.labels):
                total += preferred.weight
        return total

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        """Scales so that the best node gets 100 (kube-scheduler's default normalization);
        when no node matches any term, all stay 0."""
        default_normalize(scores)
