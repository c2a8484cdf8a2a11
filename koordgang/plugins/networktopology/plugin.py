"""Network-topology-aware placement as a GroupPlacement plugin, and the keeper of the
``ClusterNetworkTopology`` status.

A group whose gangs carry ``gang.scheduling.koordinator.sh/network-topology-spec`` is placed by
the gather algorithm (``gather.py``) inside one domain; other groups are left to the default
member-by-member placement. The ``default`` ClusterNetworkTopology's ``status.detailStatus`` is
recomputed from the nodes' labels whenever nodes change, and written when it differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.group import GroupPlan, PartPlan, Placer, PodResult, SchedulingGroup
from koordgang.framework.handle import Handle
from koordgang.framework.report import Report, StatusUpdate
from koordgang.framework.status import Code, Status
from koordgang.model.gang import NETWORK_TOPOLOGY_SPEC_KEY, gather_rules, topology_index
from koordgang.model.objects import ObjectRef
from koordgang.model.pod import PodInfo
from koordgang.model.topology import (
    DEFAULT_NAME,
    TopologySpec,
    TopologySpecError,
    TopologyTree,
    parse_topology_spec,
)
from koordgang.plugins.networktopology.gather import choose, domain_offers, fill_order, node_offers
from koordgang.state.snapshot import Placement, Snapshot

log = structlog.get_logger("koordgang.topology")

KIND = "ClusterNetworkTopology"
API_VERSION = "scheduling.koordinator.sh/v1alpha1"
PLURAL = "clusternetworktopologies"
NAME = "NetworkTopology"


class NetworkTopology:
    name = NAME

    def __init__(self) -> None:
        self._handle: Handle | None = None
        #: The ``default`` object as last seen (None: there is none).
        self._object: Mapping[str, Any] | None = None
        self._spec: TopologySpec | None = None
        self._problem = ""
        self._tree: TopologyTree | None = None
        self._tree_generation: object = None
        self._detail: tuple[TopologyTree, list[dict[str, Any]]] | None = None

    def attach(self, handle: Handle) -> None:
        self._handle = handle

    @property
    def handle(self) -> Handle:
        assert self._handle is not None, "attach() first"
        return self._handle

    # -- the ClusterNetworkTopology ------------------------------------------------------------

    def on_pod(self, old: PodInfo | None, pod: PodInfo | None) -> None:
        return None

    def on_object(self, kind: str, event: str, obj: Mapping[str, Any]) -> bool:
        if kind != KIND or (obj.get("metadata") or {}).get("name") != DEFAULT_NAME:
            return False
        if event == "DELETED":
            self._object, self._spec, self._problem = None, None, ""
            self._tree = None
            return True
        self._object = obj
        try:
            spec = parse_topology_spec(obj)
        except TopologySpecError as error:
            problem = str(error)
            if problem != self._problem:
                log.warning("ClusterNetworkTopology not used", problem=problem)
                self.handle.report(
                    Report(self._ref(), "Warning", "InvalidTopologySpec", problem, event=True)
                )
            self._spec, self._problem = None, problem
        else:
            if spec != self._spec:
                self._tree = None
            self._spec, self._problem = spec, ""
        return True

    def _ref(self) -> ObjectRef:
        metadata = (self._object or {}).get("metadata") or {}
        return ObjectRef(
            KIND, "", DEFAULT_NAME, str(metadata.get("uid") or ""), api_version=API_VERSION
        )

    def tree(self, snapshot: Snapshot) -> TopologyTree | None:
        """The domains of the current nodes (rebuilt when the node set or labels change)."""
        if self._spec is None:
            return None
        generation = snapshot.cache.node_generation
        if self._tree is None or self._tree_generation != generation:
            nodes = [(n.name, n.info.labels) for n in snapshot.nodes if n.info is not None]
            self._tree = TopologyTree(self._spec, nodes)
            self._tree_generation = generation
        return self._tree

    def status_updates(self) -> list[StatusUpdate]:
        if self._object is None:
            return []
        condition = {
            "type": "Valid",
            "status": "False" if self._problem else "True",
            "reason": "InvalidTopologySpec" if self._problem else "Valid",
            "message": self._problem or "layers form one chain",
        }
        status: dict[str, Any] = {"conditions": [condition]}
        if self._spec is not None:
            tree = self.tree(Snapshot(self.handle.cache))
            if tree is not None:
                if self._detail is None or self._detail[0] is not tree:
                    self._detail = (tree, tree.detail_status())
                status["detailStatus"] = self._detail[1]
        return [StatusUpdate(API_VERSION, PLURAL, "", DEFAULT_NAME, status)]

    # -- GroupPlacement ------------------------------------------------------------------------

    def place_group(
        self, state: CycleState, group: SchedulingGroup, snapshot: Snapshot, placer: Placer
    ) -> GroupPlan | None:
        text = group.hints.get(NETWORK_TOPOLOGY_SPEC_KEY)
        rules = gather_rules(text)
        if not rules:
            return None
        members = sorted(group.members(), key=_rank)
        if not members:
            return None
        tree = self.tree(snapshot)
        must = [r for r in rules if r.must]
        if tree is None:
            if not must:
                return None  # PreferGather without a topology: placed as if it had none
            why = self._problem or f"no ClusterNetworkTopology named {DEFAULT_NAME} exists"
            return _all_failed(group, snapshot, f"network-topology spec cannot be met: {why}")
        offers = node_offers(members, snapshot.nodes, snapshot, placer)
        multiples = {
            tree.spec.depth(r.layer): r.pod_count_multiple
            for r in rules
            if r.pod_count_multiple > 1 and tree.spec.depth(r.layer) >= 0
        }
        by_domain = domain_offers(tree, offers, multiples)
        choice = choose(tree, rules, by_domain, len(members))
        if choice.failure:
            return _all_failed(group, snapshot, choice.failure)
        if choice.domain is None:
            return None  # PreferGather and no domain can hold the group: spread
        return _fill(group, members, snapshot, placer, fill_order(choice.domain))


def _rank(pod: PodInfo) -> tuple[int, int, str]:
    index = topology_index(pod.annotations)[0]
    return (0 if index is not None else 1, index or 0, pod.name)


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
    node_sets: list[list[str]],
) -> GroupPlan:
    plans, by_uid = _plans(group)
    sets = [frozenset(names) for names in node_sets]
    everywhere = frozenset(n for names in node_sets for n in names)
    current = 0
    for member in members:
        placed = None
        while current < len(sets):
            result = placer.place(member, snapshot, within=sets[current], diagnose=False)
            if result.node is not None:
                placed = result.node
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
