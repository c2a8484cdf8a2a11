"""What a what-if's answer says of claims: the devices each pod placed would get through its
claims, and the claims of upstream PodGroups that the file's pods share (which claim, whether
the controller made it or the what-if did, allocated before the what-if or by it, where)."""

from __future__ import annotations

from collections.abc import Sequence

from koordgang.framework.cycle import CycleOutcome
from koordgang.model.dra import ClaimAllocation, PodClaimRef, PodGroupClaims
from koordgang.model.pod import PodInfo
from koordgang.state.dra import ClaimView, DraManager
from koordgang.whatif.inputs import UID_PREFIX, PodGroupLookup


def devices(claims: ClaimView, outcome: CycleOutcome) -> dict[str, list[str]]:
    """The devices each pod placed by the cycle would get through its claims
    (``node: driver/pool/device``, a share with what it consumes). A claim allocated before
    (a PodGroup's that pods join) gives it none: ``podgroup_claims`` says where it is."""
    found: dict[str, list[str]] = {}
    for placement in (*outcome.bind, *outcome.hold):
        allocations = claims.allocated_for(placement.pod.uid)
        if allocations:
            found[placement.pod.key] = [
                f"{placement.node_name}: {device.describe()}"
                for allocation in allocations.values()
                for device in allocation.devices
            ]
    return found


def podgroup_claims(
    claims: ClaimView, manager: DraManager, groups: PodGroupLookup, pods: Sequence[PodInfo]
) -> list[str]:
    """One line per claim of an upstream PodGroup that ``pods`` (the file's pods of one
    scheduling group) share, as ``groups`` tells which entries are a PodGroup's:
    ``resourceclaim ns/train-gpus-x7k2p of PodGroup ns/train ("gpus"): allocated already on
    n1: <devices>; shared by 3 pods of the file``. ``claims``: the view after the cycle;
    ``manager``: the claims as they were before the what-if."""
    shared: dict[str, tuple[PodGroupClaims, PodClaimRef, int]] = {}
    for pod in pods:
        group = groups(pod.namespace, pod.scheduling_group) if pod.scheduling_group else None
        if group is None:
            continue
        for ref in pod.resource_claims:
            name = ref.claim_name or pod.claim_statuses.get(ref.name, "")
            if not name or not group.binds(ref):
                continue
            key = f"{pod.namespace}/{name}"
            _, _, count = shared.get(key, (group, ref, 0))
            shared[key] = (group, ref, count + 1)
    said = []
    for key, (group, ref, count) in sorted(shared.items()):
        claim = claims.claim(key)
        origin = f'"{ref.name}"'
        if claim is not None and claim.uid.startswith(UID_PREFIX) and ref.template_name:
            origin += f', to be made from template "{ref.template_name}"'
        before = manager.allocation(key)
        after = claims.allocation(key)
        if before is not None:
            state = f"allocated already{_where(before)}"
        elif after is not None:
            state = f"allocated now{_where(after)}"
        elif claim is None:
            state = "not seen yet"
        else:
            state = "not allocated"
        said.append(
            f"resourceclaim {key} of PodGroup {group.key} ({origin}): {state}; "
            f"shared by {count} pods of the file"
        )
    return said


def _where(allocation: ClaimAllocation) -> str:
    """`` on n1: gpu.example.com/n1/gpu-0, ...``; no node for devices that are not local to
    one (a network-attached pool)."""
    node = f" on {allocation.node}" if allocation.node else ""
    return f"{node}: {', '.join(device.describe() for device in allocation.devices)}"
