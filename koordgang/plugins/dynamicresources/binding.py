"""What a batch's claims get written before its pods bind (PreBind), in upstream's order, and
the check just before the bindings go (verify): the finalizer
``resource.kubernetes.io/delete-protection``, then ``status.allocation`` with the pods in
``status.reservedFor`` (or, for a claim of an upstream PodGroup's, the PodGroup: one entry for
all its members). Nothing is written for a batch that a claim cannot take (deleted, named
by 256 consumers, allocated for another batch and not written yet), so the API server never
refuses a write that would be undone and sent again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from koordgang.framework.handle import Handle
from koordgang.framework.prebind import NO_WRITES, ObjectWrite, PreBindPlan, PreBindWait
from koordgang.model.dra import MAX_RESERVED_FOR, ClaimAllocation, Consumer, pending_key
from koordgang.model.pod import PodInfo
from koordgang.plugins.dynamicresources.claims import GroupOf, resolve
from koordgang.plugins.dynamicresources.conditions import BindingConditions, awaited
from koordgang.plugins.dynamicresources.extended import (
    ExtendedResources,
    create_write,
    delete_write,
    stale_claims,
)
from koordgang.plugins.dynamicresources.messages import full_reason
from koordgang.plugins.dynamicresources.metrics import ALLOCATIONS, CONFLICTS
from koordgang.plugins.dynamicresources.writes import conflict, reserve
from koordgang.state.dra import DraManager
from koordgang.state.snapshot import Placement

__all__ = ["ClaimWrites"]


class ClaimWrites:
    def __init__(
        self,
        handle: Handle,
        extended: ExtendedResources,
        group_of: GroupOf,
        binding_timeout: float = 600.0,
    ) -> None:
        self._handle = handle
        self._extended = extended
        self._group_of = group_of
        self._binding_timeout = binding_timeout

    def pre_bind(self, placements: Sequence[Placement]) -> PreBindPlan:
        claims = self._claims_pre_bind(placements)
        if claims.refused:
            return claims
        special = self._extended_pre_bind(placements)
        if special.refused:
            return special
        writes = claims.writes + special.writes
        if not writes and not claims.waits:
            return NO_WRITES
        return PreBindPlan(writes, waits=claims.waits)

    def _extended_pre_bind(self, placements: Sequence[Placement]) -> PreBindPlan:
        """The special claims of the pods whose extended resources were allocated through
        DRA: made, allocated, named in the pod's status; those of earlier attempts deleted."""
        dra = self._handle.dra
        writes: list[ObjectWrite] = []
        refused: dict[str, str] = {}
        for placement in placements:
            pod = placement.pod
            if not pod.extended_containers:
                continue
            key = pending_key(pod.namespace, pod.uid)
            allocation = dra.in_flight_for(pod.uid).get(key)
            if allocation is None:
                continue
            node = self._handle.cache.node(placement.node_name)
            wanted = self._extended.wanted(pod, dra)
            special = self._extended.on_node(pod, wanted, node.info if node else None)
            if special is None:
                refused[pod.uid] = "the extended resources allocated through DRA changed meanwhile"
                continue
            problem = conflict({key: allocation}, dra)
            if problem:
                refused[pod.uid] = problem
                continue
            writes.extend(delete_write(c, pod) for c in stale_claims(pod, dra))
            writes.append(create_write(pod, special, allocation, self._wall()))
            self._handle.record(ALLOCATIONS)
        if refused:
            self._handle.record(CONFLICTS)
            return PreBindPlan((), refused)
        return PreBindPlan(tuple(writes))

    def _claims_pre_bind(self, placements: Sequence[Placement]) -> PreBindPlan:
        dra = self._handle.dra
        ours = [p for p in placements if p.pod.resource_claims]
        if not ours:
            return NO_WRITES
        # Allocated in this batch, whichever member's placement allocated it: members that
        # share a claim allocated in the same decision are its consumers too.
        fresh: dict[str, ClaimAllocation] = {}
        for placement in ours:
            fresh.update(dra.in_flight_for(placement.pod.uid))
        consumers: dict[str, list[PodInfo]] = {}
        #: Claims reserved for a PodGroup instead of their pods: key -> the PodGroup.
        groups: dict[str, Consumer] = {}
        refused: dict[str, str] = {}
        for placement in ours:
            pod = placement.pod
            problem, keys = self._claims_for(placement, fresh)
            if problem:
                refused[pod.uid] = problem
                continue
            for key, group in keys:
                consumers.setdefault(key, []).append(pod)
                if group is not None:
                    groups[key] = group
        if refused:
            if any("held by" in r for r in refused.values()):
                self._handle.record(CONFLICTS)
            return PreBindPlan((), refused)
        refused = _unwritable(consumers, groups, fresh, dra)
        if refused:
            return PreBindPlan((), refused)
        writes = self._writes(consumers, groups, fresh)
        waits = self._waits(fresh, consumers)
        if not writes and not waits:
            return NO_WRITES
        return PreBindPlan(writes, waits=waits)

    def _writes(
        self,
        consumers: Mapping[str, Sequence[PodInfo]],
        groups: Mapping[str, Consumer],
        fresh: Mapping[str, ClaimAllocation],
    ) -> tuple[ObjectWrite, ...]:
        writes: list[ObjectWrite] = []
        for key, pods in consumers.items():
            claim = self._handle.dra.claim(key)
            assert claim is not None
            allocation = fresh.get(key)
            write = reserve(claim, pods, allocation, self._wall(), groups.get(key))
            if write is not None:
                writes.append(write)
                if allocation is not None:
                    self._handle.record(ALLOCATIONS)
        return tuple(writes)

    def _waits(
        self, fresh: Mapping[str, ClaimAllocation], consumers: Mapping[str, Sequence[PodInfo]]
    ) -> tuple[PreBindWait, ...]:
        """The wait for the binding conditions of the batch's devices: those allocated in it,
        and those of claims allocated earlier (by this scheduler before a restart, say)."""
        dra = self._handle.dra
        allocations = {k: fresh.get(k) or dra.allocation(k) for k in consumers}
        devices = awaited({k: a for k, a in allocations.items() if a is not None})
        if not devices:
            return ()
        pods = list({p.uid: p for k in devices for p in consumers[k]}.values())
        handle = self._handle
        wait = BindingConditions(
            handle.dra, devices, pods, handle.now, self._binding_timeout, handle.report
        )
        return (wait,)

    def verify(self, placements: Sequence[Placement]) -> Mapping[str, str]:
        refused: dict[str, str] = {}
        for placement in placements:
            if not placement.pod.resource_claims:
                continue
            current = self._handle.cache.pod(placement.pod.uid) or placement.pod
            problem, _ = self._claims_for(Placement(current, placement.node_name), {})
            if problem:
                refused[current.uid] = problem
        if refused:
            self._handle.record(CONFLICTS)
        return refused

    def _claims_for(
        self,
        placement: Placement,
        fresh: Mapping[str, ClaimAllocation],
    ) -> tuple[str, list[tuple[str, Consumer | None]]]:
        """The keys of the claims ``placement``'s pod binds with (each with the PodGroup it is
        reserved for instead of the pod, if any), or why it may not bind: a claim gone or not
        allocated any more, allocated where its node is not (another writer changed it), or a
        device of it held by another claim too."""
        pod = placement.pod
        dra = self._handle.dra
        resolved = resolve(pod, dra.claim, self._group_of)
        if resolved.problem:
            return resolved.problem, []
        node = self._handle.cache.node(placement.node_name)
        labels = node.info.labels if node is not None and node.info is not None else {}
        keys: list[tuple[str, Consumer | None]] = []
        allocations: dict[str, ClaimAllocation] = {}
        for pod_claim in resolved.claims:
            key = pod_claim.key
            allocation = fresh.get(key) or dra.allocation(key)
            if allocation is None:
                return f'resourceclaim "{pod_claim.claim.name}" is not allocated any more', []
            if not allocation.allows(placement.node_name, labels):
                return (
                    f'resourceclaim "{pod_claim.claim.name}" is allocated where node '
                    f"{placement.node_name} is not (it changed meanwhile)",
                    [],
                )
            allocations[key] = allocation
            keys.append((key, pod_claim.group))
        return conflict(allocations, dra), keys

    def _wall(self) -> float:
        return self._handle.wall()


def _unwritable(
    consumers: Mapping[str, Sequence[PodInfo]],
    groups: Mapping[str, Consumer],
    fresh: Mapping[str, ClaimAllocation],
    dra: DraManager,
) -> dict[str, str]:
    """Pods whose claim cannot take them now, checked before any write (a status the API
    server refuses would be written and undone again and again): a claim deleted, one naming
    the most consumers a claim can, or one allocated for a pod of another batch whose
    allocation is not written yet (the API server takes consumers of an allocated claim only).
    A claim reserved for a PodGroup takes one consumer, the PodGroup, for all its pods.
    """
    refused: dict[str, str] = {}
    for key, pods in consumers.items():
        claim = dra.claim(key)
        if claim is None:
            refused.update({p.uid: f"resourceclaim {key} was deleted" for p in pods})
            continue
        if claim.allocation is None and key not in fresh:
            why = (
                f'resourceclaim "{claim.name}" is being allocated for another pod: waiting for '
                "its allocation to be written"
            )
            refused.update({p.uid: why for p in pods})
            continue
        room = MAX_RESERVED_FOR - len(claim.reserved_for)
        group = groups.get(key)
        if group is not None:
            if room < 1 and not claim.reserved_for_uid(group.uid):
                refused.update({p.uid: full_reason(claim.name) for p in pods})
            continue
        new = [p for p in pods if not claim.reserved_for_uid(p.uid)]
        refused.update({p.uid: full_reason(claim.name) for p in new[max(room, 0) :]})
    return refused
