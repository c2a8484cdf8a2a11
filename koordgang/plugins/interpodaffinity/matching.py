"""Which counted pods a pod affinity term refers to, and in which topology domains they are.

Every pod that counts on a node in the snapshot is looked at, terminating ones included:
kube-scheduler does the same for inter-pod affinity (a terminating pod still runs, and its
anti-affinity still protects it until it is gone), unlike topology spreading, which skips them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from koordgang.model.pod import PodInfo
from koordgang.model.pod_affinity import PodAffinityTerm
from koordgang.state.snapshot import Snapshot

#: topology key -> the values (domains) where something holds.
Pairs = dict[str, set[str]]
#: topology key -> value -> summed weight.
Scores = dict[str, dict[str, int]]

#: The labels of a namespace by its name; None for a namespace not known (yet).
NamespaceLabels = Callable[[str], Mapping[str, str] | None]

_NO_LABELS: Mapping[str, str] = {}


def NO_NAMESPACES(name: str) -> Mapping[str, str] | None:
    """No namespace is known: a term's namespace selector selects none."""
    return None


def node_labels(snapshot: Snapshot, name: str) -> Mapping[str, str]:
    """The labels of node ``name``; none for a node the informer has not shown (yet)."""
    node = snapshot.node(name)
    if node is None or node.info is None:
        return _NO_LABELS
    return node.info.labels


def add_pair(pairs: Pairs, key: str, labels: Mapping[str, str]) -> None:
    """Records the node's domain of ``key``; a node without the label has none."""
    value = labels.get(key)
    if value is not None:
        pairs.setdefault(key, set()).add(value)


def has_pair(pairs: Pairs, key: str, value: str) -> bool:
    values = pairs.get(key)
    return values is not None and value in values


def add_score(scores: Scores, key: str, labels: Mapping[str, str], weight: int) -> None:
    value = labels.get(key)
    if value is not None:
        by_value = scores.setdefault(key, {})
        by_value[value] = by_value.get(value, 0) + weight


def term_namespaces(
    term: PodAffinityTerm, owner: str, snapshot: Snapshot, labels_of: NamespaceLabels
) -> Iterable[str]:
    """The namespaces whose pods ``term`` (of a pod in namespace ``owner``) may select."""
    if term.namespace_selector is None:
        return term.namespaces or (owner,)
    # A namespace selector, even an empty one (every namespace): every namespace that holds
    # a pod in this view, those of pods placed in it included, is a candidate.
    known = set(snapshot.cache.namespaces())
    known.update(placement.pod.namespace for placement in snapshot.placements)
    known.update(term.namespaces)
    return [
        namespace
        for namespace in known
        if term.namespace_matches(owner, namespace, labels_of(namespace))
    ]


def pods_of_term(
    term: PodAffinityTerm, owner: str, snapshot: Snapshot, labels_of: NamespaceLabels
) -> Iterator[tuple[PodInfo, str]]:
    """(pod, node) for every counted pod that ``term`` (of a pod in ``owner``) selects."""
    selector = term.selector
    if selector is None:
        return
    for namespace in term_namespaces(term, owner, snapshot, labels_of):
        for pod, node_name in snapshot.pods_in_namespace(namespace):
            if selector.matches(pod.labels):
                yield pod, node_name


def matches_all(
    terms: Iterable[PodAffinityTerm],
    owner: str,
    pod: PodInfo,
    namespace_labels: Mapping[str, str] | None,
) -> bool:
    """Whether ``pod`` is selected by every one of ``terms`` (of a pod in ``owner``)."""
    # A plain loop: this runs per pod, and a generator costs more than the calls it wraps.
    for term in terms:
        if not term.matches_pod(owner, pod.namespace, pod.labels, namespace_labels):
            return False
    return True
