"""Which ResourceClaims a pod uses, and whether it can use them now.

A pod names claims in ``spec.resourceClaims``: by name, or by template, in which case the
resourceclaim controller makes one claim per pod and names it in the pod's
``status.resourceClaimStatuses``. Until a claim exists (and, for a template, was made for this
very pod) the pod waits, and is told which one it waits for.

A member of an upstream PodGroup (``spec.schedulingGroup.podGroupName``) whose claim entry is
one of its PodGroup's (``DRAWorkloadResourceClaims``: same name, same claim or template) uses
the PodGroup's claim: the controller makes it once for the PodGroup (owned by it) and names it
in every member's status, and it is reserved for the PodGroup, not for each member.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from koordgang.model.dra import Consumer, PodClaimRef, PodGroupClaims, ResourceClaimInfo
from koordgang.model.pod import PodInfo


@dataclass(frozen=True, slots=True)
class PodClaim:
    ref: PodClaimRef
    claim: ResourceClaimInfo
    #: The PodGroup the claim is reserved for instead of the pod (None: the pod).
    group: Consumer | None = None

    @property
    def key(self) -> str:
        return self.claim.key

    def reserved_for(self, pod: PodInfo) -> bool:
        """The claim names its consumer here (the pod, or its PodGroup) already."""
        uid = self.group.uid if self.group is not None else pod.uid
        return self.claim.reserved_for_uid(uid)


@dataclass(frozen=True, slots=True)
class Resolved:
    claims: tuple[PodClaim, ...] = ()
    #: Why the pod cannot use its claims now ("" if it can), said to the pod.
    problem: str = ""


#: The PodGroup of a pod (its claims), None when not seen.
GroupOf = Callable[[PodInfo], PodGroupClaims | None]


def resolve(
    pod: PodInfo,
    claim_of: Callable[[str], ResourceClaimInfo | None],
    group_of: GroupOf,
) -> Resolved:
    """The pod's claims as ``claim_of`` finds them by key (the DRA manager, or a what-if's
    view, where claims of pods not submitted yet exist too), or why the pod cannot use them
    now. ``group_of`` finds the pod's upstream PodGroup."""
    group = group_of(pod) if pod.scheduling_group and pod.resource_claims else None
    if pod.scheduling_group and pod.resource_claims and group is None:
        # Whether a claim is the PodGroup's (reserved for it) or the pod's own depends on it.
        return Resolved(
            problem=f'waiting for PodGroup "{pod.scheduling_group}" '
            "(spec.schedulingGroup.podGroupName) to be seen: its claims are shared by its pods"
        )
    if group is not None and group.problem:
        return Resolved(
            problem=f'PodGroup "{group.name}" has claims that cannot be read: {group.problem}'
        )
    claims: list[PodClaim] = []
    for ref in pod.resource_claims:
        bound_to = group.consumer if group is not None and group.binds(ref) else None
        if ref.claim_name:
            name = ref.claim_name
        else:
            made = pod.claim_statuses.get(ref.name)
            if made is None:
                return Resolved(problem=_not_made(ref, group if bound_to else None))
            if not made:
                continue  # the controller found that none is needed
            name = made
        key = f"{pod.namespace}/{name}"
        claim = claim_of(key)
        if claim is None:
            return Resolved(problem=_missing(ref, name))
        if ref.template_name and not _made_for(claim, pod):
            return Resolved(
                problem=f'resourceclaim "{name}" was not made for this pod (spec.resourceClaims '
                f'"{ref.name}" names it through template "{ref.template_name}")'
            )
        if claim.deleting:
            return Resolved(problem=f'resourceclaim "{name}" is being deleted')
        if claim.problem:
            return Resolved(problem=f'resourceclaim "{name}" cannot be read: {claim.problem}')
        claims.append(PodClaim(ref, claim, bound_to))
    return Resolved(tuple(claims))


def _made_for(claim: ResourceClaimInfo, pod: PodInfo) -> bool:
    """Made from a template for this pod, or for its PodGroup (as Kubernetes checks it: the
    pod knows its PodGroup's name, not its uid)."""
    if claim.owner_pod_uid == pod.uid:
        return True
    return bool(pod.scheduling_group) and claim.owner_podgroup == pod.scheduling_group


def _not_made(ref: PodClaimRef, group: PodGroupClaims | None) -> str:
    if group is not None:
        return (
            f"waiting for the resourceclaim controller to make the claim of PodGroup "
            f'"{group.name}" spec.resourceClaims "{ref.name}" from template '
            f'"{ref.template_name}" and name it in this pod\'s status'
        )
    return (
        f"waiting for the resourceclaim controller to make the claim of "
        f'spec.resourceClaims "{ref.name}" from template "{ref.template_name}"'
    )


def _missing(ref: PodClaimRef, name: str) -> str:
    if ref.template_name:
        return (
            f'waiting for resourceclaim "{name}" (made from template "{ref.template_name}" for '
            f'spec.resourceClaims "{ref.name}") to be seen'
        )
    return f'resourceclaim "{name}" not found (spec.resourceClaims "{ref.name}")'
