"""Where a what-if's answer cannot say what the daemon will do: ties.

Where choices are equal a cycle may take either (the node index orders equal scores by a number
drawn at random; alike victims weigh the same), and the daemon's cycle may take the other. So
an answer names the choices that were a tie, and what holds whichever way it is broken:

- alike nodes (same capacity, labels but the hostname, taints, free room and the pod affinity
  terms of the pods there that look at that node alone, before the cycle):
  which of them takes which members is a tie; how many members go to each holds, in some
  order;
- alike victims (pods of one job on one node, asking for the same, holding no claims and
  equal in eviction order, some evicted and some not): which of them goes is a tie; how many
  go holds.

A placed pod that asks for what a node's kind does not hold (node affinity, host ports, pod
affinity, spreading, claims) has no alike nodes: no node tie is told for its group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import NamedTuple

from koordgang.model.pod import PodInfo
from koordgang.model.pod_affinity import PodAffinityTerm, WeightedPodAffinityTerm
from koordgang.model.resources import Resources
from koordgang.model.taints import Taint
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Placement, Snapshot

#: The label every node carries with a value of its own (its name): alike nodes differ in it.
HOSTNAME_LABEL = "kubernetes.io/hostname"

#: How many nodes a tie names before it counts the rest: a homogeneous pool of a thousand
#: nodes is one tie, and a line of a thousand names helps nobody.
NAMED_NODES = 8


class NodeKind(NamedTuple):
    """What a cycle can tell a node by: nodes of one kind are alike to every plugin, for a pod
    that asks for nothing of a node in particular (``tells_nodes_apart``)."""

    allocatable: Resources
    #: The labels but the hostname, as (key, value) pairs.
    labels: frozenset[tuple[str, str]]
    taints: frozenset[Taint]
    #: Ready and not cordoned: a node that takes no pods is no choice, whatever else it is.
    schedulable: bool
    #: What the pods there request, as sorted (resource, amount) pairs.
    used: tuple[tuple[str, int], ...]
    pods: int
    #: The pod (anti-)affinity terms of the pods there keyed on the hostname, with their
    #: owners' namespaces and how many carry each (``_own_terms``).
    own_terms: frozenset[tuple[OwnTerm, int]]


#: An existing pod's term, as the incoming pod meets it: which list it is in ("affinity",
#: "anti-affinity", "preferred affinity", "preferred anti-affinity"), the owner's namespace (a
#: term without namespaces looks only there), and the term with its weight if preferred.
OwnTerm = tuple[str, str, PodAffinityTerm | WeightedPodAffinityTerm]


def node_kinds(snapshot: Snapshot) -> dict[str, NodeKind]:
    """Each node's kind in ``snapshot``; asked before a cycle, since the cycle's own
    placements make the nodes it chose differ from those it did not."""
    return {
        node.name: kind for node in snapshot.nodes if (kind := _kind(node, snapshot)) is not None
    }


def _kind(node: NodeState, snapshot: Snapshot) -> NodeKind | None:
    info = node.info
    if info is None:
        return None
    # Every resource a pod there may request: one the node lacks is never placed there, so
    # the node's own and those already requested cover what this view holds.
    names = sorted({*info.allocatable.names(), *node.requested})
    used = tuple((name, amount) for name in names if (amount := snapshot.used(node, name)))
    return NodeKind(
        allocatable=info.allocatable,
        labels=frozenset((k, v) for k, v in info.labels.items() if k != HOSTNAME_LABEL),
        taints=frozenset(info.taints),
        schedulable=info.ready and not info.unschedulable,
        used=used,
        pods=snapshot.pod_count(node),
        own_terms=_own_terms(node, snapshot),
    )


def _own_terms(node: NodeState, snapshot: Snapshot) -> frozenset[tuple[OwnTerm, int]]:
    """The terms of the pods on ``node`` that can tell it from a node alike in all else.

    An existing pod's required anti-affinity can refuse an incoming pod, and its terms weigh
    in the incoming pod's score, in the term's domain. A domain keyed on any label but the
    hostname holds every node alike to this one (their labels are equal), so such a term
    weighs the same on all of them; a hostname-keyed term weighs on this node alone."""
    terms: Counter[OwnTerm] = Counter()
    for pod in snapshot.pods_on(node):
        affinity = pod.pod_affinity
        if affinity is None:
            continue
        kinds: tuple[tuple[str, Sequence[PodAffinityTerm | WeightedPodAffinityTerm]], ...] = (
            ("affinity", affinity.required_affinity),
            ("anti-affinity", affinity.required_anti_affinity),
            ("preferred affinity", affinity.preferred_affinity),
            ("preferred anti-affinity", affinity.preferred_anti_affinity),
        )
        for kind, listed in kinds:
            for term in listed:
                plain = term.term if isinstance(term, WeightedPodAffinityTerm) else term
                if plain.topology_key == HOSTNAME_LABEL:
                    terms[(kind, pod.namespace, term)] += 1
    return frozenset(terms.items())


def tells_nodes_apart(pod: PodInfo) -> bool:
    """Whether ``pod`` asks for something a node's kind does not hold: node affinity (it may
    name a node), host ports, pod affinity or spreading (they look at the pods there), claims
    (the devices free there). For such a pod alike nodes are not alike, and no tie is told."""
    return bool(
        HOSTNAME_LABEL in pod.node_selector
        or pod.required_affinity is not None
        or pod.preferred_affinity
        or pod.host_ports
        or pod.pod_affinity is not None
        or pod.spread_constraints
        or pod.resource_claims
    )


def node_ties(kinds: Mapping[str, NodeKind], placed: Sequence[Placement]) -> list[str]:
    """One line per kind of node the placements touched that has another node of its kind:
    the counts per node hold, which node of the kind has which count does not. None when a
    placed pod tells alike nodes apart (``tells_nodes_apart``)."""
    if any(tells_nodes_apart(p.pod) for p in placed):
        return []
    used = {p.node_name for p in placed}
    by_kind: dict[NodeKind, list[str]] = {}
    for name, kind in kinds.items():
        by_kind.setdefault(kind, []).append(name)
    ties = []
    for names in by_kind.values():
        if len(names) < 2 or used.isdisjoint(names):
            continue
        ties.append(
            f"nodes {_node_names(names, used)} are alike (capacity, labels, taints and free "
            f"room): which of them takes which members is a tie; the counts per node hold, "
            f"not which node has which"
        )
    return sorted(ties)


def _node_names(names: Sequence[str], used: set[str]) -> str:
    """The nodes of a tie, by name; past ``NAMED_NODES`` those the answer placed members on
    are named before the others (they are the ones a reader looks for), the rest counted."""
    first = sorted(names, key=lambda name: (name not in used, name))[:NAMED_NODES]
    shown = ", ".join(sorted(first))
    rest = len(names) - len(first)
    return f"{shown} and {rest} more" if rest else shown


def victim_ties(
    evict: Sequence[Placement],
    job_key: Callable[[PodInfo], str],
    order: Callable[[PodInfo], Hashable],
    snapshot: Snapshot,
) -> list[str]:
    """One line per set of alike pods on a node of which some are evicted and some stay:
    pods of one job, asking for the same, equal in eviction order (``order``: priority,
    budgets, start time...). Preemption cannot tell them apart, so which of them goes is a
    tie; pods that differ in order are no tie, the order decides. ``snapshot`` is the state
    the cycle saw (a preemption's dry run is never committed into it)."""

    def alike_key(pod: PodInfo, node_name: str) -> tuple[str, str, int, Hashable, Hashable, str]:
        # A pod with claims holds devices its requests do not show (the one a member needs,
        # say): it is alike to no other.
        own = pod.uid if pod.resource_claims else ""
        return (job_key(pod), node_name, pod.priority, order(pod), pod.requests, own)

    chosen: Counter[tuple[str, str, int, Hashable, Hashable, str]] = Counter(
        alike_key(p.pod, p.node_name) for p in evict
    )
    ties = []
    for key, count in sorted(chosen.items(), key=lambda item: item[0][:3]):
        job, node_name, priority = key[:3]
        node = snapshot.node(node_name)
        if node is None:
            continue
        alike = sum(
            1
            for pod in snapshot.pods_on(node)
            # A terminating pod counts as gone already: it was never one to choose.
            if not pod.is_terminating and alike_key(pod, node_name) == key
        )
        if alike > count:
            ties.append(
                f"victims: which of the alike pods of {job} on {node_name} (priority "
                f"{priority}) goes is a tie: {count} of {alike}"
            )
    return ties
