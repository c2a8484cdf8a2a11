"""What Karpenter may still add: its NodePools' ``spec.limits`` less what their nodes already
have (``status.resources``), so that members of a group that cannot fit even then stop asking
it for nodes.

Karpenter adds nodes for pods whose PodScheduled condition says ``Unschedulable`` (and that are
not nominated), planning the pods it sees together, up to each NodePool's limits. A gang
beyond those limits would make it add the nodes it may, which the gang, all or nothing, cannot
use; the empty nodes are then removed (consolidation) and added again, in a loop. When the room
a group lacks (its unplaced members' requests, less the free room the nodes have now) exceeds
what every NodePool together may add, its members wait under the reason
``BeyondNodePoolLimits`` instead, which Karpenter (and cluster-autoscaler) leave alone, and are
told which limit stops it. A NodePool's change moves them back to the queue, to be judged
again.

Room on its way counts as room: a NodeClaim whose node has not registered yet (Karpenter
already counts its capacity as in use by its NodePool) adds its allocatable to the free room,
so that a gang does not stop asking while its own nodes boot.

The check is in resources, not in nodes: a group whose requests fit within the limits but whose
members would not pack onto the nodes the limits allow (each node keeps some room back) still
asks, as it may well be right to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from koordgang.framework.group import SchedulingGroup
from koordgang.framework.report import WatchedResource
from koordgang.framework.results import ProvisioningVerdict
from koordgang.model.pod import PodInfo
from koordgang.model.quantity import QuantityError
from koordgang.model.resources import PODS, format_amount, parse_amounts
from koordgang.state.snapshot import Snapshot

log = structlog.get_logger("koordgang.nodepools")

RESOURCE = WatchedResource("karpenter.sh", "v1", "nodepools", "NodePool")
RESOURCE_ID = RESOURCE.id
CLAIMS = WatchedResource("karpenter.sh", "v1", "nodeclaims", "NodeClaim")
CLAIMS_ID = CLAIMS.id
#: The PodScheduled reason of members no NodePool can make room for.
REASON = "BeyondNodePoolLimits"


@dataclass(frozen=True, slots=True)
class PoolRoom:
    """One NodePool: its limits (None: none on that resource) and what its nodes have."""

    name: str
    limits: Mapping[str, int]
    used: Mapping[str, int]

    def headroom(self, resource: str) -> int | None:
        """How much more of ``resource`` it may add; None when it has no limit on it."""
        if resource not in self.limits:
            return None
        return max(0, self.limits[resource] - self.used.get(resource, 0))


def pool_room(obj: Mapping[str, Any]) -> PoolRoom:
    """A NodePool object's room. A limit of 0 is a limit (a paused pool); quantities that
    cannot be read limit nothing (logged): a wrong "cannot" would leave a job waiting."""
    metadata = obj.get("metadata") or {}
    name = str(metadata.get("name") or "")
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    try:
        limits = parse_amounts(spec.get("limits"))
    except QuantityError as error:
        log.warning("NodePool limits not read", nodepool=name, problem=str(error))
        limits = {}
    try:
        used = parse_amounts(status.get("resources"))
    except QuantityError as error:
        log.warning("NodePool usage not read", nodepool=name, problem=str(error))
        limits, used = {}, {}
    return PoolRoom(name, limits, used)


def claim_on_the_way(obj: Mapping[str, Any]) -> dict[str, int]:
    """What a NodeClaim brings that no node shows yet: its allocatable (else what it asked
    for) while it has no registered node; nothing once it has one, or is going."""
    metadata = obj.get("metadata") or {}
    status = obj.get("status") or {}
    if metadata.get("deletionTimestamp") or status.get("nodeName"):
        return {}
    raw = status.get("allocatable") or ((obj.get("spec") or {}).get("resources") or {}).get(
        "requests"
    )
    try:
        return {k: v for k, v in parse_amounts(raw).items() if v > 0}
    except QuantityError:
        return {}


class NodePools:
    """Keeps the NodePools' room and the NodeClaims still booting, and judges whether a
    group's shortfall fits in what the pools may add."""

    name = "NodePools"

    def __init__(self) -> None:
        self._pools: dict[str, PoolRoom] = {}
        self._coming: dict[str, dict[str, int]] = {}

    def watches(self) -> Sequence[WatchedResource]:
        return (RESOURCE, CLAIMS)

    def on_object(self, kind: str, event: str, obj: Mapping[str, Any]) -> bool:
        name = str((obj.get("metadata") or {}).get("name") or "")
        if kind == CLAIMS_ID:
            coming = {} if event == "DELETED" else claim_on_the_way(obj)
            before = self._coming.pop(name, {})
            if coming:
                self._coming[name] = coming
            return coming != before
        if kind != RESOURCE_ID:
            return False
        before_room = self._pools.pop(name, None)
        if event != "DELETED":
            self._pools[name] = pool_room(obj)
        # Pods waiting for room are judged again only when what the pools may add changed
        # (Karpenter rewrites a pool's status often).
        return self._pools.get(name) != before_room

    def provisioning(
        self, group: SchedulingGroup, needed: Sequence[PodInfo], snapshot: Snapshot
    ) -> ProvisioningVerdict | None:
        pools = list(self._pools.values())
        if not pools or not needed:
            return None
        need: dict[str, int] = {}
        for pod in needed:
            for resource, amount in pod.requests.items():
                if resource != PODS:
                    need[resource] = need.get(resource, 0) + amount
        for resource in sorted(need):
            headroom = _total_headroom(pools, resource)
            if headroom is None:
                continue
            free = sum(max(0, snapshot.free(node, resource)) for node in snapshot.nodes)
            free += sum(coming.get(resource, 0) for coming in self._coming.values())
            short = need[resource] - free
            if short > headroom:
                return ProvisioningVerdict(REASON, _note(pools, resource, short, headroom))
        return None


def _total_headroom(pools: Sequence[PoolRoom], resource: str) -> int | None:
    """What all NodePools together may add of ``resource``; None when one of them has no
    limit on it."""
    total = 0
    for pool in pools:
        headroom = pool.headroom(resource)
        if headroom is None:
            return None
        total += headroom
    return total


def _note(pools: Sequence[PoolRoom], resource: str, short: int, headroom: int) -> str:
    each = ", ".join(
        f"{pool.name}: limit {format_amount(resource, pool.limits[resource])}, "
        f"{format_amount(resource, pool.used.get(resource, 0))} in use"
        for pool in sorted(pools, key=lambda p: p.name)
    )
    return (
        f"no NodePool can add the room: {format_amount(resource, short)} {resource} more than "
        f"the nodes have free is needed, and the NodePools may add "
        f"{format_amount(resource, headroom)} ({each}); raise a NodePool's spec.limits, or "
        f"free room"
    )
