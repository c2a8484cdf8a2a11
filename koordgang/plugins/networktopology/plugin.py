"""Network-topology-aware placement as a GroupPlacement plugin.

A group whose gangs carry ``gang.scheduling.koordinator.sh/network-topology-spec`` is placed by
the gather algorithm (``gather.py``) inside one domain; other groups are left to the default
member-by-member placement. The plugin watches the ``default`` ClusterNetworkTopology and feeds
it to :class:`~koordgang.state.network_topology.ClusterTopology`, whose status the engine's
controller writes (``engine/topology_status.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.group import (
    GroupPlan,
    PartPlan,
    Placer,
    PodResult,
    SchedulingGroup,
)
from koordgang.framework.handle import Handle
from koordgang.framework.report import Report, WatchedResource
from koordgang.framework.status import Code, Status
from koordgang.model.gather import GatherRule
from koordgang.model.koordinator import (
    NETWORK_TOPOLOGY_INDEX_KEY,
    NETWORK_TOPOLOGY_SPEC_KEY,
    topology_index,
)
from koordgang.model.objects import ObjectRef
from koordgang.model.pod import PodInfo
from koordgang.model.topology import (
    DEFAULT_NAME,
    TopologySpec,
    TopologyTree,
)
from koordgang.plugins.networktopology.gather import (
    OfferCache,
    choose,
    domain_offers,
    fill_order,
    node_offers,
)
from koordgang.plugins.networktopology.levels import has_levels, level_scopes, place_levels
from koordgang.state.network_topology import ClusterTopology
from koordgang.state.snapshot import Placement, Snapshot

log = structlog.get_logger("koordgang.topology")

RESOURCE = WatchedResource(
    "scheduling.koordinator.sh", "v1alpha1", "clusternetworktopologies", "ClusterNetworkTopology"
)
KIND = RESOURCE.kind
API_VERSION = RESOURCE.api_version
PLURAL = RESOURCE.plural
#: What its events arrive under (``on_object``'s ``kind``).
RESOURCE_ID = RESOURCE.id
NAME = "NetworkTopology"
#: Gangs whose domain the gang view can show.
_REMEMBERED = 10_000


class NetworkTopology:
    name = NAME

    def __init__(self, handle: Handle, topology: ClusterTopology) -> None:
        self.handle = handle
        #: The ``default`` object, its layers and domains (shared with the status controller).
        self.topology = topology
        self._offers = OfferCache()
        #: gang key -> the domain its group was last placed in (for the gang view), the most
        #: recent ``_REMEMBERED`` gangs.
        self._placed_in: OrderedDict[str, str] = OrderedDict()

    def domain_of(self, gang_key: str) -> str:
        """Where the gang's group was last gathered ("" if it was not)."""
        return self._placed_in.get(gang_key, "")

    def gang_facts(self, gang_key: str) -> Mapping[str, Any]:
        return {"domain": self.domain_of(gang_key)}

    # -- the ClusterNetworkTopology ------------------------------------------------------------

    def watches(self) -> Sequence[WatchedResource]:
        return (RESOURCE,)

    def on_object(self, kind: str, event: str, obj: Mapping[str, Any]) -> bool:
        if kind != RESOURCE_ID or (obj.get("metadata") or {}).get("name") != DEFAULT_NAME:
            return False
        if event == "DELETED":
            self.topology.delete()
            return True
        problem = self.topology.update(obj)
        if problem:
            log.warning("ClusterNetworkTopology not used", problem=problem)
            self.handle.report(
                Report(self._ref(), "Warning", "InvalidTopologySpec", problem, event=True)
            )
        return True

    def _ref(self) -> ObjectRef:
        metadata = (self.topology.object or {}).get("metadata") or {}
        return ObjectRef(
            KIND, "", DEFAULT_NAME, str(metadata.get("uid") or ""), api_version=API_VERSION
        )

    def tree(self, snapshot: Snapshot) -> TopologyTree | None:
        """The domains of the current nodes (None: no usable ClusterNetworkTopology)."""
        return self.topology.tree(snapshot)

    # -- what users are told --------------------------------------------------------------------

    def _tell_about_layers(self, pod: PodInfo, rules: list[GatherRule], spec: TopologySpec) -> None:
        for rule in rules:
            layer = spec.layer(rule.layer)
            if layer is None and not rule.must:
                _say(
                    self,
                    pod,
                    "Warning",
                    "TopologyRuleSkipped",
                    f"{NETWORK_TOPOLOGY_SPEC_KEY}: layer {rule.layer} is not in "
                    f"ClusterNetworkTopology {DEFAULT_NAME}; this PreferGather rule is skipped",
                )
            elif layer is not None and layer.name != rule.layer:
                _say(
                    self,
                    pod,
                    "Normal",
                    "TopologyLayerMatched",
                    f"{NETWORK_TOPOLOGY_SPEC_KEY}: layer {rule.layer} taken as {layer.name}",
                )

    def _tell_about_ranks(self, pod: PodInfo, members: list[PodInfo]) -> None:
        seen: dict[int, str] = {}
        unranked: list[str] = []
        duplicated: list[str] = []
        for member in members:
            index = topology_index(member.annotations)[0]
            if index is None:
                unranked.append(member.name)
            elif index in seen:
                duplicated.append(f"{member.name} ({index}, as {seen[index]})")
            else:
                seen[index] = member.name
        if seen and (unranked or duplicated):
            parts = []
            if unranked:
                parts.append(f"without an index: {', '.join(unranked)}")
            if duplicated:
                parts.append(f"with a duplicate index: {', '.join(duplicated)}")
            _say(
                self,
                pod,
                "Warning",
                "TopologyIndexIncomplete",
                f"{NETWORK_TOPOLOGY_INDEX_KEY}: members {'; '.join(parts)} are placed after "
                "the indexed ones, by name",
            )

    # -- PlacementScope: where preemption may make room ---------------------------------------

    def placement_scopes(
        self, group: SchedulingGroup, snapshot: Snapshot
    ) -> list[frozenset[str]] | None:
        topology = group.topology
        if topology is not None and topology.near:
            return None  # a replacement prefers its gang's domain, never requires it
        if has_levels(group):
            return level_scopes(group, snapshot)
        rules = topology.spec.rules if topology is not None else ()
        network = [r for r in rules if r.must and not r.label_key]
        labelled = [r for r in rules if r.must and r.label_key]
        if not network and not labelled:
            return None
        partitions = [frozenset(names) for _, names in _partitions(snapshot, labelled)]
        if not network:
            return partitions
        tree = self.tree(snapshot)
        if tree is None:
            return []
        depths = [tree.spec.depth(r.layer) for r in network]
        if min(depths) < 0:
            return []
        scopes = []
        for domain in tree.domains(min(depths)):
            nodes = frozenset(domain.nodes)
            scopes += [nodes & part for part in partitions if nodes & part]
        return scopes

    # -- GroupPlacement ------------------------------------------------------------------------

    def _near(
        self,
        group: SchedulingGroup,
        rules: tuple[GatherRule, ...],
        running: Sequence[str],
        snapshot: Snapshot,
        placer: Placer,
    ) -> GroupPlan | None:
        """A replacement in a gathered gang: inside the lowest ruled domain that holds most of
        the gang's running members, if it fits there; else wherever the default placement
        puts it."""
        tree = self.tree(snapshot)
        depths = [tree.spec.depth(r.layer) for r in rules if not r.label_key] if tree else []
        known = [d for d in depths if d >= 0]
        if tree is None or not known:
            return None
        depth = max(known)
        counts: dict[tuple[str, ...], int] = {}
        for name in running:
            path = tree.path_of.get(name, ())
            if len(path) > depth:
                counts[path[: depth + 1]] = counts.get(path[: depth + 1], 0) + 1
        if not counts:
            return None
        target = max(sorted(counts), key=lambda p: counts[p])
        nodes = frozenset(n for n, path in tree.path_of.items() if path[: depth + 1] == target)
        pod = group.trigger
        result = placer.place(pod, snapshot, within=nodes, diagnose=False)
        if result.node is None:
            return None
        plans, by_uid = _plans(group)
        by_uid[pod.uid].placed.append(Placement(pod, result.node))
        return GroupPlan(snapshot, plans)

    def place_group(
        self, state: CycleState, group: SchedulingGroup, snapshot: Snapshot, placer: Placer
    ) -> GroupPlan | None:
        if has_levels(group):
            # Upstream's topology keys, at each level of the group (and where its running
            # members hold it); a Koordinator spec of the same gangs is not combined with them.
            return place_levels(group, snapshot, placer)
        topology = group.topology
        rules = topology.spec.rules if topology is not None else ()
        if topology is None or not rules:
            return None
        if topology.near:
            return self._near(group, rules, topology.near, snapshot, placer)
        members = _ranked(list(group.members()))
        if not members:
            return None
        network = [r for r in rules if not r.label_key]
        labelled = [r for r in rules if r.label_key]
        tree = self.tree(snapshot) if network else None
        if network and tree is None:
            if any(r.must for r in network):
                why = (
                    self.topology.problem
                    or f"no ClusterNetworkTopology named {DEFAULT_NAME} exists"
                )
                return _all_failed(group, snapshot, f"network-topology spec cannot be met: {why}")
            network = []  # PreferGather without a topology: placed as if it had none
        if tree is not None:
            self._tell_about_layers(group.trigger, network, tree.spec)
        self._tell_about_ranks(group.trigger, members)
        if not network and not labelled:
            return None
        offers = node_offers(members, snapshot.nodes, snapshot, placer, self._offers)
        need = len(members)
        candidates: list[tuple[int, int, list[tuple[list[str], int | None]], str]] = []
        failures: list[str] = []
        for order, (value, names) in enumerate(_partitions(snapshot, labelled)):
            total = sum(offers.get(n, 0) for n in names)
            if not network:
                if total >= need:
                    candidates.append((total, order, [(sorted(names), None)], value))
                else:
                    failures.append(f"{value} offers {total}")
                continue
            assert tree is not None
            sub = tree if not labelled else tree.restricted(names)
            multiples = {
                sub.spec.depth(r.layer): r.pod_count_multiple
                for r in network
                if r.pod_count_multiple > 1 and sub.spec.depth(r.layer) >= 0
            }
            by_domain = domain_offers(sub, offers, multiples)
            choice = choose(sub, network, by_domain, need)
            if choice.failure:
                failures.append(choice.failure)
            elif choice.domain is not None:
                candidates.append(
                    (
                        by_domain[choice.domain.path],
                        order,
                        fill_order(choice.domain, by_domain if multiples else None),
                        _describe(sub, choice.domain.depth, choice.domain.path, value),
                    )
                )
            elif total >= need:
                # PreferGather: spread.
                candidates.append((total, order, [(sorted(names), None)], value))
        if candidates:
            _, _, node_sets, where = min(candidates, key=lambda c: (c[0], c[1]))
            if not labelled and len(node_sets) == 1 and set(node_sets[0][0]) == set(offers):
                return None  # spread over the whole cluster: the default placement does that
            for part in group.parts:
                self._placed_in[part.key] = where
                self._placed_in.move_to_end(part.key)
            while len(self._placed_in) > _REMEMBERED:
                self._placed_in.popitem(last=False)
            return _fill(group, members, snapshot, placer, node_sets)
        if labelled and any(r.must for r in labelled):
            keys = ", ".join(r.label_key for r in labelled)
            detail = f" ({'; '.join(failures)})" if failures else ""
            return _all_failed(
                group, snapshot, f"no nodes of one {keys} value can hold {need} members{detail}"
            )
        if failures and not labelled:
            return _all_failed(group, snapshot, failures[0])
        return None  # only PreferGather rules, and no domain can hold the group: spread


def _partitions(snapshot: Snapshot, labelled: list[GatherRule]) -> list[tuple[str, list[str]]]:
    """The node sets a group may be confined to by rules naming node labels: one per value (or
    combination of values) of the labels; the whole cluster when there are none. Nodes missing
    a label of a MustGather rule are in no set; PreferGather label rules add the whole cluster
    as the last resort."""
    names = [n.name for n in snapshot.nodes if n.info is not None]
    if not labelled:
        return [("the cluster", names)]
    keys = [r.label_key for r in labelled]
    by_value: dict[tuple[str, ...], list[str]] = {}
    for node in snapshot.nodes:
        if node.info is None:
            continue
        labels = node.info.labels
        if any(key not in labels for key in keys):
            continue
        by_value.setdefault(tuple(labels[key] for key in keys), []).append(node.name)
    parts = [("/".join(v), by_value[v]) for v in sorted(by_value)]
    if not any(r.must for r in labelled):
        parts.append(("the cluster", names))
    return parts


def _say(self: NetworkTopology, pod: PodInfo, event_type: str, reason: str, text: str) -> None:
    self.handle.report(Report.for_pod(pod, event_type, reason, text))


def _describe(tree: TopologyTree, depth: int, path: tuple[str, ...], value: str) -> str:
    """``SpineLayer s1 / BlockLayer b2`` (with the label value first, when there is one)."""
    layers = tree.spec.layers
    parts = [f"{layers[i].name} {name}" for i, name in enumerate(path[: depth + 1])]
    if value != "the cluster":
        parts.insert(0, value)
    return " / ".join(parts)


def _ranked(members: list[PodInfo]) -> list[PodInfo]:
    """Members by index; those without one, or with an index an earlier name already has,
    after them by name."""
    taken: set[int] = set()
    keys: dict[str, tuple[int, int, str]] = {}
    for pod in sorted(members, key=lambda p: p.name):
        index = topology_index(pod.annotations)[0]
        if index is not None and index not in taken:
            taken.add(index)
            keys[pod.uid] = (0, index, pod.name)
        else:
            keys[pod.uid] = (1, 0, pod.name)
    return sorted(members, key=lambda p: keys[p.uid])


def _plans(group: SchedulingGroup) -> tuple[list[PartPlan], dict[str, PartPlan]]:
    plans = [PartPlan(part) for part in group.parts]
    by_uid = {pod.uid: plan for plan in plans for pod in plan.part.pending}
    return plans, by_uid


def _all_failed(group: SchedulingGroup, snapshot: Snapshot, message: str) -> GroupPlan:
    plans, by_uid = _plans(group)
    status = Status(Code.UNSCHEDULABLE, (message,), NAME)
    for pod in group.members():
        by_uid[pod.uid].failed.append(PodResult(pod, None, status, None, monotone=False))
    return GroupPlan(snapshot, plans)


def _fill(
    group: SchedulingGroup,
    members: list[PodInfo],
    snapshot: Snapshot,
    placer: Placer,
    node_sets: list[tuple[list[str], int | None]],
) -> GroupPlan:
    plans, by_uid = _plans(group)
    sets = [frozenset(names) for names, _ in node_sets]
    caps = [cap for _, cap in node_sets]
    taken = [0] * len(sets)
    everywhere = frozenset(n for names, _ in node_sets for n in names)
    current = 0
    for member in members:
        placed = None
        while current < len(sets):
            cap = caps[current]
            if cap is None or taken[current] < cap:
                result = placer.place(member, snapshot, within=sets[current], diagnose=False)
                if result.node is not None:
                    placed = result.node
                    taken[current] += 1
                    break
            current += 1
        plan = by_uid[member.uid]
        if placed is not None:
            plan.placed.append(Placement(member, placed))
        else:
            why = placer.find(member, snapshot, within=everywhere)
            plan.failed.append(
                PodResult(member, None, why.status, why.diagnosis, monotone=False)
                if why.node is None
                else PodResult(
                    member, None, Status(Code.UNSCHEDULABLE, ("no room left in the domain",))
                )
            )
            current = 0  # a later (smaller) member may still fit an earlier node set
    return GroupPlan(snapshot, plans)
