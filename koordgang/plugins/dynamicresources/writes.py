"""The writes of DRA, as data the engine carries out (``framework/prebind.py``): what a claim
gets before its pods bind, how a claim is given back, and the check that no device given here
is held by another claim (nor a shared device's capacity overdrawn)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from koordgang.framework.prebind import ObjectWrite, PatchStep
from koordgang.model.dra import (
    API_VERSION,
    CLAIM_FINALIZER,
    ClaimAllocation,
    Consumer,
    ResourceClaimInfo,
)
from koordgang.model.objects import ObjectRef
from koordgang.model.pod import PodInfo
from koordgang.model.time import format_rfc3339
from koordgang.state.dra import DraManager


def claim_path(namespace: str, name: str) -> str:
    return f"/apis/{API_VERSION}/namespaces/{namespace}/resourceclaims/{name}"


def _ref(claim: ResourceClaimInfo) -> ObjectRef:
    return ObjectRef("ResourceClaim", claim.namespace, claim.name, claim.uid, API_VERSION)


def reserve(
    claim: ResourceClaimInfo,
    pods: Sequence[PodInfo],
    allocation: ClaimAllocation | None,
    wall: float,
    group: Consumer | None = None,
) -> ObjectWrite | None:
    """What ``claim`` gets before ``pods`` bind, in upstream's order: the delete-protection
    finalizer (if missing), then ``allocation`` (when this scheduler allocated it; with the
    time) with the pods added to ``reservedFor`` (or ``group``, the upstream PodGroup the
    claim is reserved for instead, once). None when there is nothing to write (a restart after
    the writes)."""
    existing = [c.to_api() for c in claim.reserved_for]
    if group is not None:
        new = [] if claim.reserved_for_uid(group.uid) else [group.to_api()]
    else:
        new = [
            Consumer("pods", p.name, p.uid).to_api()
            for p in pods
            if not claim.reserved_for_uid(p.uid)
        ]
    if allocation is None and not new:
        return None
    steps: list[PatchStep] = []
    if CLAIM_FINALIZER not in claim.finalizers:
        steps.append(
            PatchStep(
                {"metadata": {"finalizers": [*claim.finalizers, CLAIM_FINALIZER]}},
                {"metadata": {"finalizers": list(claim.finalizers) or None}},
                what="add finalizer",
            )
        )
    status: dict[str, Any] = {"reservedFor": existing + new}
    undo: dict[str, Any] = {"reservedFor": existing or None}
    what = "reserve"
    if allocation is not None:
        written = allocation.to_api()
        written["allocationTimestamp"] = format_rfc3339(wall)
        status["allocation"] = written
        undo["allocation"] = None
        if any(d.binding_conditions for d in allocation.devices):
            # What the driver wrote of the devices goes with them (binding conditions).
            undo["devices"] = None
        what = "write allocation"
    steps.append(PatchStep({"status": status}, {"status": undo}, "status", what))
    path = claim_path(claim.namespace, claim.name)
    return ObjectWrite(
        _ref(claim), path, claim.resource_version, tuple(steps), tuple(p.uid for p in pods)
    )


def give_back(claim: ResourceClaimInfo, pod: PodInfo) -> ObjectWrite:
    """Clears ``claim``'s allocation and consumers (its finalizer stays, for its next one)."""
    step = PatchStep(
        {"status": {"allocation": None, "reservedFor": None}},
        what="give back the allocation",
        subresource="status",
    )
    path = claim_path(claim.namespace, claim.name)
    return ObjectWrite(_ref(claim), path, claim.resource_version, (step,), (pod.uid,))


def conflict(allocations: dict[str, ClaimAllocation], dra: DraManager) -> str:
    """A device of ``allocations`` (claim key -> its allocation) that another claim holds
    too, said for the pod; "" when there is none."""
    for key, allocation in allocations.items():
        for device_id in allocation.held_ids():
            others = dra.holders(device_id) - {key}
            if others:
                return (
                    f"device {device_id} given to resourceclaim {key} is held by "
                    f"resourceclaim {sorted(others)[0]} now (allocated by another scheduler?)"
                )
        for share in allocation.shares():
            holders = dra.holders(share.id)
            over = dra.overdrawn(share.id)
            if holders or over:
                why = (
                    f"resourceclaim {sorted(holders)[0]} holds it whole"
                    if holders
                    else f"its shares take more than it has ({over})"
                )
                return (
                    f"device {share.id} shared with resourceclaim {key}: {why} now "
                    "(allocated by another scheduler?)"
                )
    return ""
