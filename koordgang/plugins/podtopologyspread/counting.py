"""Matching pods per topology domain, over the nodes a set of spread constraints counts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from koordgang.model.affinity import node_matches
from koordgang.model.pod import PodInfo
from koordgang.model.spread import HONOR, TopologySpreadConstraint
from koordgang.model.taints import first_untolerated
from koordgang.state.snapshot import Snapshot

#: node name -> the node's domain (value of the constraint's topology key).
Domains = dict[str, str]


def has_keys(labels: Mapping[str, str], constraints: Sequence[TopologySpreadConstraint]) -> bool:
    """Whether a node carries the topology key of every constraint."""
    for constraint in constraints:  # noqa: SIM110 - per node: a generator costs more
        if constraint.topology_key not in labels:
            return False
    return True


def eligible_domains(
    pod: PodInfo, constraints: Sequence[TopologySpreadConstraint], snapshot: Snapshot
) -> list[Domains]:
    """For each constraint, the domain of every node whose pods it counts: the node has the
    keys of all the constraints (kube-scheduler requires all of them) and passes the inclusion
    policies: with ``nodeAffinityPolicy`` Honor the pod's nodeSelector and required node
    affinity, with ``nodeTaintsPolicy`` Honor its tolerations (NoSchedule, NoExecute)."""
    result: list[Domains] = [{} for _ in constraints]
    selector = pod.node_selector
    required = pod.required_affinity
    tolerations = pod.tolerations
    for node in snapshot.nodes:
        info = node.info
        if info is None:
            continue
        labels = info.labels
        if not has_keys(labels, constraints):
            continue
        # Each check runs at most once per node, and only if a constraint honours it.
        affinity_ok: bool | None = None
        taints_ok: bool | None = None
        for index, constraint in enumerate(constraints):
            if constraint.node_affinity_policy == HONOR:
                if affinity_ok is None:
                    affinity_ok = node_matches(info.name, labels, selector, required)
                if not affinity_ok:
                    continue
            if constraint.node_taints_policy == HONOR:
                if taints_ok is None:
                    taints_ok = first_untolerated(info.scheduling_taints, tolerations) is None
                if not taints_ok:
                    continue
            result[index][node.name] = labels[constraint.topology_key]
    return result


def count_matching(
    pod: PodInfo,
    constraints: Sequence[TopologySpreadConstraint],
    domains: Sequence[Domains],
    snapshot: Snapshot,
) -> list[dict[str, int]]:
    """For each constraint, domain -> the pods it selects on the nodes of ``domains`` (every
    domain is there, with 0 when it holds none). Only pods of the pod's namespace count, and
    not terminating ones (kube-scheduler skips them: they are about to go away)."""
    counts = [dict.fromkeys(by_node.values(), 0) for by_node in domains]
    pairs = [
        (constraint.selector, by_node, counted)
        for constraint, by_node, counted in zip(constraints, domains, counts, strict=True)
        if constraint.selector is not None and by_node
    ]
    if not pairs:
        return counts
    for other, node_name in snapshot.pods_in_namespace(pod.namespace):
        if other.is_terminating:
            continue
        for selector, by_node, counted in pairs:
            value = by_node.get(node_name)
            if value is not None and selector.matches(other.labels):
                counted[value] += 1
    return counts
