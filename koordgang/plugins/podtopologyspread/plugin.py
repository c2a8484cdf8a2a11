"""PodTopologySpread: DoNotSchedule constraints filter nodes, ScheduleAnyway ones score them.

Only the pod's own ``topologySpreadConstraints`` apply. kube-scheduler gives pods without any
its system default constraints, whose selectors come from the Services, ReplicaSets and
StatefulSets that select the pod; this scheduler does not watch those, so it has no defaults.

Matching pods are counted once per pod (PreFilter, or the start of scoring), so that checking
one node costs a lookup per constraint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import MAX_NODE_SCORE, Scope
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.pod import PodInfo
from koordgang.model.spread import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, TopologySpreadConstraint
from koordgang.plugins.podtopologyspread.counting import (
    Domains,
    count_matching,
    eligible_domains,
    has_keys,
)
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

NAME = "PodTopologySpread"
REASON = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL_REASON = f"{REASON} (missing required label)"
#: Spreading over this key counts the pods of each node itself (kube-scheduler does so too).
HOSTNAME = "kubernetes.io/hostname"

_FILTER_KEY = f"{NAME}/filter"
_SKIP = Status(Code.SKIP, (), NAME)


@dataclass(frozen=True, slots=True)
class _Hard:
    """One DoNotSchedule constraint, counted."""

    key: str
    max_skew: int
    #: domain -> matching pods, over the eligible nodes.
    counts: dict[str, int]
    #: The global minimum (0 when there are fewer domains than minDomains).
    minimum: int
    #: 1 if the pod itself matches the selector: placing it adds one to the domain.
    self_match: int


@dataclass(frozen=True, slots=True)
class _FilterState:
    constraints: tuple[_Hard, ...]


def _constraints(pod: PodInfo, when: str) -> tuple[TopologySpreadConstraint, ...]:
    if not pod.spread_constraints:
        return ()  # most pods: no tuple built for every pod that passes
    return tuple(c for c in pod.spread_constraints if c.when_unsatisfiable == when)


def _self_match(constraint: TopologySpreadConstraint, pod: PodInfo) -> int:
    selector = constraint.selector
    return 1 if selector is not None and selector.matches(pod.labels) else 0


class PodTopologySpread:
    """kube-scheduler's PodTopologySpread: PreFilter, Filter, PreScore and Score."""

    name = NAME
    scope = Scope.CLUSTER
    weight = 2

    # -- filter --------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        hard = _constraints(pod, DO_NOT_SCHEDULE)
        if not hard:
            return _SKIP
        state.write(_FILTER_KEY, _prepare(pod, hard, snapshot))
        return SUCCESS

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        prepared = state.read(_FILTER_KEY, _FilterState)
        if prepared is None:
            hard = _constraints(pod, DO_NOT_SCHEDULE)
            if not hard:
                return SUCCESS
            prepared = _prepare(pod, hard, snapshot)
            state.write(_FILTER_KEY, prepared)
        labels = node.info.labels if node.info is not None else {}
        for constraint in prepared.constraints:
            value = labels.get(constraint.key)
            if value is None:
                return Status.unresolvable(NAME, MISSING_LABEL_REASON)
            skew = constraint.counts.get(value, 0) + constraint.self_match - constraint.minimum
            if skew > constraint.max_skew:
                return Status.unschedulable(NAME, REASON)
        return SUCCESS

    # -- score ---------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        if not _constraints(pod, SCHEDULE_ANYWAY):
            return _SKIP
        return SUCCESS

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeState], snapshot: Snapshot
    ) -> dict[str, int]:
        soft = _constraints(pod, SCHEDULE_ANYWAY)
        # Nodes without every key are not compared with the others; they end with 0.
        scored = [
            node for node in nodes if node.info is not None and has_keys(node.info.labels, soft)
        ]
        result = dict.fromkeys((node.name for node in nodes), 0)
        if not soft or not scored:
            return result
        domains = eligible_domains(pod, soft, snapshot)
        weights: list[float] = []
        for index, constraint in enumerate(soft):
            if constraint.topology_key == HOSTNAME:
                # Each scored node is its own domain, whatever the inclusion policies say.
                domains[index] = {node.name: node.name for node in scored}
                size = len(scored)
            else:
                wanted = {_label(node, constraint.topology_key) for node in scored}
                domains[index] = _within(domains[index], wanted)
                size = len(wanted)
            # Counts in a topology with many domains weigh more than in one with few.
            weights.append(math.log(size + 2))
        counts = count_matching(pod, soft, domains, snapshot)
        raw: dict[str, int] = {}
        for node in scored:
            total = 0.0
            for constraint, weight, counted in zip(soft, weights, counts, strict=True):
                key = constraint.topology_key
                domain = node.name if key == HOSTNAME else _label(node, key)
                total += counted.get(domain, 0) * weight + (constraint.max_skew - 1)
            raw[node.name] = _round(total)
        low = min(raw.values())
        high = max(raw.values())
        for name, value in raw.items():
            # Fewer matching pods score higher; all alike score the maximum.
            result[name] = (
                MAX_NODE_SCORE if high == 0 else MAX_NODE_SCORE * (high + low - value) // high
            )
        return result


def _prepare(
    pod: PodInfo, hard: tuple[TopologySpreadConstraint, ...], snapshot: Snapshot
) -> _FilterState:
    counts = count_matching(pod, hard, eligible_domains(pod, hard, snapshot), snapshot)
    prepared = []
    for constraint, counted in zip(hard, counts, strict=True):
        # Fewer domains than minDomains (1 when unset) make the global minimum 0: the missing
        # domains count as empty ones.
        enough = len(counted) >= (constraint.min_domains or 1)
        minimum = min(counted.values()) if enough else 0
        prepared.append(
            _Hard(
                constraint.topology_key,
                constraint.max_skew,
                counted,
                minimum,
                _self_match(constraint, pod),
            )
        )
    return _FilterState(tuple(prepared))


def _label(node: NodeState, key: str) -> str:
    assert node.info is not None
    return node.info.labels[key]


def _within(domains: Domains, wanted: set[str]) -> Domains:
    """Only the nodes of the domains that a scored node is in: the others change no score."""
    return {name: value for name, value in domains.items() if value in wanted}


def _round(value: float) -> int:
    """Rounds half away from zero (Go's ``math.Round``), not to even as ``round`` does."""
    floor = math.floor(value)
    return floor + 1 if value - floor >= 0.5 else floor
