"""The gather algorithm (seed 001): how many members each domain can take ("offer slots"),
which domain the group goes to, and in which order its members fill it.

1. Offer per node: the group's members added one after another with the real filters (a
   member that does not fit ends the count; identical members make this the seed's method
   with a representative pod, and deterministic).
2. Offer per domain: the sum over its nodes; a layer with ``podCountMultiple`` m rounds its
   domains' offers down to a multiple of m.
3. The group goes inside one domain of the highest MustGather layer; within it, the lowest
   layer (at or above the lowest layer any rule names) with a domain offering at least the
   need is chosen, and among those the domain whose offer is closest to the need (binpack;
   ties by depth-first order).
4. Members, in rank order, fill the chosen domain's lowest domains in depth-first order
   (children by name): neighbours in rank are neighbours in the network.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from koordgang.framework.group import Placer
from koordgang.model.gather import GatherRule
from koordgang.model.pod import PodInfo
from koordgang.model.resources import PODS
from koordgang.model.topology import Domain, TopologyTree
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot


@dataclass(slots=True)
class Choice:
    #: The domain chosen (None: no domain, members spread by normal scoring).
    domain: Domain | None = None
    #: Why the group cannot be placed under its MustGather rule ("" when it can).
    failure: str = ""
    #: Domain offers by path (for explanations and the gang view).
    offers: dict[tuple[str, ...], int] = field(default_factory=dict)
    #: Rules naming layers the topology does not have (skipped PreferGather ones included).
    unknown: list[str] = field(default_factory=list)


class OfferCache:
    """Per pod shape, each node's offer for identical members (not capped by a need), with
    the node's version: only nodes that changed since are asked again. Kept for the most
    recent ``SHAPES`` shapes."""

    SHAPES = 64

    def __init__(self) -> None:
        self._by_shape: OrderedDict[object, dict[str, tuple[int, int]]] = OrderedDict()

    def for_shape(self, shape: object) -> dict[str, tuple[int, int]]:
        known = self._by_shape.get(shape)
        if known is None:
            known = self._by_shape[shape] = {}
            if len(self._by_shape) > self.SHAPES:
                self._by_shape.popitem(last=False)
        else:
            self._by_shape.move_to_end(shape)
        return known


def node_offers(
    members: Sequence[PodInfo],
    nodes: Sequence[NodeState],
    snapshot: Snapshot,
    placer: Placer,
    cache: OfferCache | None = None,
) -> dict[str, int]:
    need = len(members)
    offers: dict[str, int] = {}
    uniform = _uniform(members)
    # A remembered offer is right while the node is unchanged, unless a filter looks at other
    # pods' terms (anti-affinity of pods already running) or at the pod's claims.
    known = (
        cache.for_shape(members[0].shape)
        if cache is not None
        and uniform
        and not members[0].pvc_names
        and not snapshot.has_pod_affinity()
        else None
    )
    for node in nodes:
        if uniform:
            if known is None:
                offers[node.name] = min(need, _uniform_offer(members[0], node, snapshot, placer))
                continue
            version = snapshot.version_of(node)
            hit = known.get(node.name)
            if hit is None or hit[0] != version:
                hit = known[node.name] = (
                    version,
                    _uniform_offer(members[0], node, snapshot, placer),
                )
            offers[node.name] = min(need, hit[1])
            continue
        trial = snapshot.fork()
        count = 0
        for member in members:
            if not placer.check(member, node, trial).is_success:
                break
            if not placer.put(member, node, trial).is_success:
                break
            count += 1
        offers[node.name] = count
    return offers


def _uniform(members: Sequence[PodInfo]) -> bool:
    """Members of one shape whose fit on a node depends on room alone: their count follows
    from arithmetic once one of them passes every filter."""
    first = members[0]
    return all(
        m.shape == first.shape
        and m.pod_affinity is None
        and not m.spread_constraints
        and not m.host_ports
        and not m.resource_claims
        for m in members
    )


def _uniform_offer(member: PodInfo, node: NodeState, snapshot: Snapshot, placer: Placer) -> int:
    """How many members like ``member`` fit on ``node`` (not capped by any need)."""
    if not placer.check(member, node, snapshot).is_success:
        return 0
    count = 1 << 30
    for name, amount in member.requests.items():
        if amount > 0:
            count = min(count, snapshot.free(node, name) // amount)
    return max(1, min(count, snapshot.free(node, PODS)))


def domain_offers(
    tree: TopologyTree, offers: dict[str, int], multiples: dict[int, int]
) -> dict[tuple[str, ...], int]:
    """Offer per domain path, bottom-up, rounded down where a layer has a multiple."""
    result: dict[tuple[str, ...], int] = {}

    def visit(domain: Domain) -> int:
        inside = {n for child in domain.children.values() for n in child.nodes}
        total = sum(visit(child) for child in domain.children.values())
        total += sum(offers.get(n, 0) for n in domain.nodes if n not in inside)
        multiple = multiples.get(domain.depth, 1)
        if multiple > 1:
            total = total // multiple * multiple
        result[domain.path] = total
        return total

    visit(tree.root)
    return result


def choose(
    tree: TopologyTree, rules: Sequence[GatherRule], offers: dict[tuple[str, ...], int], need: int
) -> Choice:
    spec = tree.spec
    choice = Choice(offers=offers)
    must_depth: int | None = None
    lowest = -1
    for rule in rules:
        depth = spec.depth(rule.layer)
        if depth < 0:
            choice.unknown.append(rule.layer)
            if rule.must:
                choice.failure = (
                    f"the network-topology spec needs layer {rule.layer}, which the "
                    "ClusterNetworkTopology does not have"
                )
                return choice
            continue
        lowest = max(lowest, depth)
        if rule.must:
            must_depth = depth if must_depth is None else min(must_depth, depth)
    if lowest < 0:
        return choice  # nothing known to gather by
    top = must_depth if must_depth is not None else 0
    for depth in range(lowest, top - 1, -1):
        fitting = [d for d in tree.domains(depth) if offers.get(d.path, 0) >= need]
        if fitting:
            order = {id(d): i for i, d in enumerate(fitting)}
            choice.domain = min(fitting, key=lambda d: (offers[d.path], order[id(d)]))
            return choice
    if must_depth is not None:
        layer = spec.layers[must_depth].name
        domains = tree.domains(must_depth)
        if not domains:
            choice.failure = f"no node is labelled for {layer}"
        else:
            best = max(domains, key=lambda d: offers.get(d.path, 0))
            choice.failure = (
                f"no {layer} domain can hold {need} members "
                f"(best: {'/'.join(best.path)} offers {offers.get(best.path, 0)})"
            )
    return choice


def fill_order(
    domain: Domain, offers: dict[tuple[str, ...], int] | None = None
) -> list[tuple[list[str], int | None]]:
    """The node sets members fill one after another, each with how many it may take (None: as
    many as fit): the lowest domains under ``domain`` in depth-first order, each up to its
    offer (a multiple of ``podCountMultiple`` where a rule asks for one), then the domain's
    nodes that belong to none of them."""
    leaves = [d for d in domain.walk() if not d.children]
    covered = {n for leaf in leaves for n in leaf.nodes}
    groups: list[tuple[list[str], int | None]] = [
        (sorted(leaf.nodes), None if offers is None else offers.get(leaf.path))
        for leaf in leaves
        if leaf.nodes
    ]
    rest = sorted(n for n in domain.nodes if n not in covered)
    if rest:
        groups.append((rest, None))
    return groups
