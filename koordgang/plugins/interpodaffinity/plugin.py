"""InterPodAffinity: required pod (anti-)affinity as a filter, preferred terms as a score.

What is known about the other pods is gathered once per pod (PreFilter for the filter, PreScore
or the start of scoring for the score) as sets of topology domains, so that checking one node
costs a few dictionary lookups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import MAX_NODE_SCORE, Scope
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.pod import PodInfo
from koordgang.model.pod_affinity import PodAffinityTerm, WeightedPodAffinityTerm
from koordgang.plugins.interpodaffinity.matching import (
    NO_NAMESPACES,
    NamespaceLabels,
    Pairs,
    Scores,
    add_pair,
    add_score,
    has_pair,
    matches_all,
    node_labels,
    pods_of_term,
)
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

NAME = "InterPodAffinity"
AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"
#: kube-scheduler's default ``hardPodAffinityWeight``: what an existing pod's required affinity
#: term that selects the incoming pod adds to the score of its domain.
HARD_POD_AFFINITY_WEIGHT = 1

_FILTER_KEY = f"{NAME}/filter"
_SCORE_KEY = f"{NAME}/score"
_SKIP = Status(Code.SKIP, (), NAME)


@dataclass(frozen=True, slots=True)
class _FilterState:
    affinity_terms: tuple[PodAffinityTerm, ...]
    anti_affinity_terms: tuple[PodAffinityTerm, ...]
    #: Domains holding a pod selected by every required affinity term of the pod.
    affinity: Pairs
    #: Domains holding a pod selected by one of the pod's required anti-affinity terms.
    anti_affinity: Pairs
    #: Domains of existing pods whose required anti-affinity terms select the pod.
    existing_anti_affinity: Pairs
    #: No pod anywhere is selected by the affinity terms, and the pod selects itself: the
    #: first pod of a group that wants to be together may go to any node with the keys.
    first_of_group: bool


@dataclass(frozen=True, slots=True)
class _ScoreState:
    """The existing pods' share of the scores, for one state of one snapshot."""

    snapshot: Snapshot
    position: int
    scores: Scores


class InterPodAffinity:
    """kube-scheduler's InterPodAffinity: PreFilter, Filter, PreScore and Score."""

    name = NAME
    scope = Scope.CLUSTER
    weight = 2

    def __init__(
        self,
        hard_pod_affinity_weight: int = HARD_POD_AFFINITY_WEIGHT,
        namespace_labels: NamespaceLabels = NO_NAMESPACES,
    ) -> None:
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        #: The labels of a namespace, as the namespaces' store knows them (terms may select
        #: namespaces by label).
        self._labels_of = namespace_labels

    # -- filter --------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        prepared = self._prepare(pod, snapshot)
        if prepared is None:
            return _SKIP
        state.write(_FILTER_KEY, prepared)
        return SUCCESS

    def _prepare(self, pod: PodInfo, snapshot: Snapshot) -> _FilterState | None:
        """What the filter needs; None when it has nothing to check (most pods)."""
        if pod.pod_affinity is None and not snapshot.has_pod_affinity():
            return None  # the common case, decided without building anything
        labels_of = self._labels_of
        namespace_labels = labels_of(pod.namespace)
        existing = _existing_anti_affinity(pod, snapshot, namespace_labels)
        affinity = pod.pod_affinity
        if affinity is None:
            required: tuple[PodAffinityTerm, ...] = ()
            anti: tuple[PodAffinityTerm, ...] = ()
        else:
            required = affinity.required_affinity
            anti = affinity.required_anti_affinity
        if not existing and not required and not anti:
            return None
        matched = _affinity_pairs(pod, required, snapshot, labels_of)
        first = (
            bool(required)
            and not matched
            and matches_all(required, pod.namespace, pod, namespace_labels)
        )
        return _FilterState(
            required,
            anti,
            matched,
            _anti_affinity_pairs(pod, anti, snapshot, labels_of),
            existing,
            first,
        )

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        prepared = state.read(_FILTER_KEY, _FilterState)
        if prepared is None:
            prepared = self._prepare(pod, snapshot)
            if prepared is None:
                return SUCCESS
            state.write(_FILTER_KEY, prepared)
        labels = node.info.labels if node.info is not None else {}
        # kube-scheduler's order: the pod's affinity, its anti-affinity, then the others'.
        if prepared.affinity_terms:
            found = True
            for term in prepared.affinity_terms:
                value = labels.get(term.topology_key)
                # Every topology key must be on the node, even for the first pod of a group.
                if value is None:
                    return Status.unresolvable(NAME, AFFINITY_REASON)
                if not has_pair(prepared.affinity, term.topology_key, value):
                    found = False
            if not found and not prepared.first_of_group:
                return Status.unresolvable(NAME, AFFINITY_REASON)
        if prepared.anti_affinity:
            for term in prepared.anti_affinity_terms:
                value = labels.get(term.topology_key)
                if value is not None and has_pair(prepared.anti_affinity, term.topology_key, value):
                    return Status.unschedulable(NAME, ANTI_AFFINITY_REASON)
        for key, values in prepared.existing_anti_affinity.items():
            value = labels.get(key)
            if value is not None and value in values:
                return Status.unschedulable(NAME, EXISTING_ANTI_AFFINITY_REASON)
        return SUCCESS

    # -- score ---------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        affinity = pod.pod_affinity
        if affinity is not None and affinity.has_preferred:
            # Its own terms look at every pod of their namespaces: left to scoring, which runs
            # only over the nodes that pass the filters.
            return SUCCESS
        # Otherwise only pods with terms can say anything, and they are few: as kube-scheduler
        # does, say SKIP unless one of their terms selects this pod somewhere.
        if not snapshot.has_pod_affinity():
            return _SKIP
        scores = self._existing_scores(pod, snapshot)
        if not scores:
            return _SKIP
        state.write(_SCORE_KEY, _ScoreState(snapshot, snapshot.log_position, scores))
        return SUCCESS

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeState], snapshot: Snapshot
    ) -> dict[str, int]:
        scores = self._scores(state, pod, snapshot)
        raw: dict[str, int] = {}
        for node in nodes:
            total = 0
            if scores and node.info is not None:
                labels = node.info.labels
                for key, by_value in scores.items():
                    value = labels.get(key)
                    if value is not None:
                        total += by_value.get(value, 0)
            raw[node.name] = total
        return normalize(raw)

    def _scores(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Scores:
        cached = state.read(_SCORE_KEY, _ScoreState)
        if (
            cached is not None
            and cached.snapshot is snapshot
            and cached.position == snapshot.log_position
        ):
            scores = {key: dict(by_value) for key, by_value in cached.scores.items()}
        else:
            scores = self._existing_scores(pod, snapshot)
        affinity = pod.pod_affinity
        if affinity is not None:
            labels_of = self._labels_of
            _add_preferred(scores, pod, affinity.preferred_affinity, 1, snapshot, labels_of)
            _add_preferred(scores, pod, affinity.preferred_anti_affinity, -1, snapshot, labels_of)
        return scores

    def _existing_scores(self, pod: PodInfo, snapshot: Snapshot) -> Scores:
        """What the terms of pods with pod affinity add to (or take from) each domain."""
        scores: Scores = {}
        namespace_labels = self._labels_of(pod.namespace)
        hard_weight = self.hard_pod_affinity_weight
        for existing, node_name in snapshot.pods_with_pod_affinity():
            affinity = existing.pod_affinity
            if affinity is None:
                continue
            owner = existing.namespace
            labels = node_labels(snapshot, node_name)
            if not labels:
                continue
            if hard_weight > 0:
                for term in affinity.required_affinity:
                    if term.matches_pod(owner, pod.namespace, pod.labels, namespace_labels):
                        add_score(scores, term.topology_key, labels, hard_weight)
            for sign, weighted_terms in (
                (1, affinity.preferred_affinity),
                (-1, affinity.preferred_anti_affinity),
            ):
                for weighted in weighted_terms:
                    term = weighted.term
                    if term.matches_pod(owner, pod.namespace, pod.labels, namespace_labels):
                        add_score(scores, term.topology_key, labels, sign * weighted.weight)
        return scores


def normalize(raw: dict[str, int]) -> dict[str, int]:
    """Maps raw scores onto 0..100 between their minimum and maximum, all 0 when they are
    equal; computed in floating point and truncated, as kube-scheduler does."""
    if not raw:
        return raw
    low = min(raw.values())
    spread = max(raw.values()) - low
    if spread <= 0:
        return dict.fromkeys(raw, 0)
    return {name: int(MAX_NODE_SCORE * ((value - low) / spread)) for name, value in raw.items()}


def _existing_anti_affinity(
    pod: PodInfo, snapshot: Snapshot, namespace_labels: Mapping[str, str] | None
) -> Pairs:
    """Domains where a counted pod's required anti-affinity term selects ``pod`` (labelled
    ``namespace_labels`` for its namespace)."""
    pairs: Pairs = {}
    for existing, node_name in snapshot.pods_with_pod_affinity():
        affinity = existing.pod_affinity
        if affinity is None or not affinity.required_anti_affinity:
            continue
        for term in affinity.required_anti_affinity:
            if term.matches_pod(existing.namespace, pod.namespace, pod.labels, namespace_labels):
                add_pair(pairs, term.topology_key, node_labels(snapshot, node_name))
    return pairs


def _affinity_pairs(
    pod: PodInfo,
    terms: tuple[PodAffinityTerm, ...],
    snapshot: Snapshot,
    labels_of: NamespaceLabels,
) -> Pairs:
    """Domains, per term, of the pods that every one of the pod's affinity terms selects (a
    pod counts only if it satisfies them all, as in kube-scheduler)."""
    pairs: Pairs = {}
    if not terms:
        return pairs
    first, rest = terms[0], terms[1:]
    for other, node_name in pods_of_term(first, pod.namespace, snapshot, labels_of):
        if rest and not matches_all(rest, pod.namespace, other, labels_of(other.namespace)):
            continue
        labels = node_labels(snapshot, node_name)
        for term in terms:
            add_pair(pairs, term.topology_key, labels)
    return pairs


def _anti_affinity_pairs(
    pod: PodInfo,
    terms: tuple[PodAffinityTerm, ...],
    snapshot: Snapshot,
    labels_of: NamespaceLabels,
) -> Pairs:
    """Domains of the pods that one of the pod's anti-affinity terms selects."""
    pairs: Pairs = {}
    for term in terms:
        for _other, node_name in pods_of_term(term, pod.namespace, snapshot, labels_of):
            add_pair(pairs, term.topology_key, node_labels(snapshot, node_name))
    return pairs


def _add_preferred(
    scores: Scores,
    pod: PodInfo,
    terms: tuple[WeightedPodAffinityTerm, ...],
    sign: int,
    snapshot: Snapshot,
    labels_of: NamespaceLabels,
) -> None:
    """The pod's own preferred terms: their weight for every pod they select, in its domain."""
    for weighted in terms:
        term = weighted.term
        delta = sign * weighted.weight
        for _other, node_name in pods_of_term(term, pod.namespace, snapshot, labels_of):
            add_score(scores, term.topology_key, node_labels(snapshot, node_name), delta)
