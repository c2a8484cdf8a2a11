"""Plugins that count their calls or answer as a test sets, for the framework's own tests
(the real plugins live in a layer above the framework): filters and scores of each scope, a
PreFilter, a queue sort, and group plugins that write what they did in a shared ``Journal``.
``runner`` makes a ``PodRunner`` of some of them."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.group import GroupPlan, SchedulingGroup
from koordgang.framework.interfaces import Scope
from koordgang.framework.results import PermitResult, PostFilterResult, UnreserveReason
from koordgang.framework.runner import PodRunner
from koordgang.framework.status import SUCCESS, Status
from koordgang.model.group_key import GroupKey
from koordgang.model.pod import PodInfo
from koordgang.model.taints import first_untolerated
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Placement, Snapshot

# -- one pod: filters, scores, PreFilter -----------------------------------------------------


class CountingTaintFilter:
    """STATIC: rejects nodes with an untolerated NoSchedule/NoExecute taint."""

    name = "Taints"
    scope = Scope.STATIC

    def __init__(self) -> None:
        self.calls = 0

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        self.calls += 1
        assert node.info is not None
        taint = first_untolerated(node.info.taints, pod.tolerations)
        if taint is None:
            return SUCCESS
        return Status.unresolvable(
            self.name, f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
        )


class CountingFit:
    """NODE: room for the pod's requests in the snapshot."""

    name = "Fit"
    scope = Scope.NODE

    def __init__(self) -> None:
        self.calls = 0

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        self.calls += 1
        short = snapshot.insufficient(node, pod.requests)
        return (
            SUCCESS
            if not short
            else Status.unschedulable(self.name, *(f"Insufficient {n}" for n in short))
        )


class OnePerNode:
    """CLUSTER: no two pods with the same ``app`` label on one node (a toy anti-affinity)."""

    name = "OnePerNode"
    scope = Scope.CLUSTER

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        app = pod.labels.get("app")
        if app is not None and any(p.labels.get("app") == app for p in snapshot.pods_on(node)):
            return Status.unschedulable(self.name, "node(s) already run this app")
        return SUCCESS


class FixedPreFilter:
    name = "Gate"

    def __init__(self, status: Status) -> None:
        self.status = status
        self.calls = 0

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        self.calls += 1
        return self.status


class LabelScore:
    """STATIC: scores a node by its label ``score-<key>`` (0 when absent)."""

    scope = Scope.STATIC
    rises_with_usage = False

    def __init__(self, key: str = "a", weight: int = 1) -> None:
        self.name = f"LabelScore-{key}"
        self.key = key
        self.weight = weight
        self.calls = 0

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        self.calls += 1
        assert node.info is not None
        return int(node.info.labels.get(f"score-{self.key}", "0"))


class FreeCpuScore:
    """NODE: prefers the node with the most free cpu (after placing), like LeastAllocated."""

    name = "FreeCpuScore"
    weight = 1
    scope = Scope.NODE
    rises_with_usage = False

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        return snapshot.free(node, "cpu") - pod.requests.get("cpu")


def runner(
    *,
    filters: tuple[Any, ...] = (),
    scores: tuple[Any, ...] = (),
    pre_filters: tuple[Any, ...] = (),
    pre_scores: tuple[Any, ...] = (),
    cluster_scores: tuple[Any, ...] = (),
    rng: random.Random | None = None,
) -> PodRunner:
    return PodRunner(
        pre_filters=pre_filters,
        filters=filters,
        pre_scores=pre_scores,
        scores=scores,
        cluster_scores=cluster_scores,
        rng=rng or random.Random(7),
    )


# -- a group: sort, PreFilter, PostFilter, Reserve, Permit -----------------------------------


class NameSort:
    name = "NameSort"

    def sort_key(self, pod: PodInfo) -> tuple[Any, ...]:
        return (pod.name,)


class Journal(list[str]):
    """What the fake group plugins did, in order, across plugins."""


class GroupGate:
    def __init__(self, name: str, status: Status, journal: Journal) -> None:
        self.name, self.status, self.journal = name, status, journal

    def pre_filter_group(
        self, state: CycleState, group: SchedulingGroup, snapshot: Snapshot
    ) -> Status:
        self.journal.append(f"{self.name}.pre_filter_group")
        return self.status


class FixedPostFilter:
    def __init__(self, name: str, result: PostFilterResult, journal: Journal) -> None:
        self.name, self.result, self.journal = name, result, journal

    def post_filter(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> PostFilterResult:
        self.journal.append(f"{self.name}.post_filter")
        return self.result


class RecordingReserve:
    def __init__(self, name: str, journal: Journal, status: Status = SUCCESS) -> None:
        self.name, self.journal, self.status = name, journal, status
        self.placements: list[Sequence[Placement]] = []

    def reserve(
        self, state: CycleState, group: SchedulingGroup, placements: Sequence[Placement]
    ) -> Status:
        self.journal.append(f"{self.name}.reserve")
        self.placements.append(placements)
        return self.status

    def unreserve(
        self, group_key: GroupKey, placements: Sequence[Placement], reason: UnreserveReason
    ) -> None:
        self.journal.append(f"{self.name}.unreserve({group_key}, {len(placements)}, {reason})")


class FixedPermit:
    def __init__(self, name: str, result: PermitResult, journal: Journal | None = None) -> None:
        self.name, self.result, self.journal = name, result, journal

    def permit(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, now: float
    ) -> PermitResult:
        if self.journal is not None:
            self.journal.append(f"{self.name}.permit")
        return self.result
