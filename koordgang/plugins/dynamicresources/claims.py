"""Which ResourceClaims a pod uses, and whether it can use them now.

A pod names claims in ``spec.resourceClaims``: by name, or by template, in which case the
resourceclaim controller makes one claim per pod and names it in the pod's
``status.resourceClaimStatuses``. Until a claim exists (and, for a template, was made for this
very pod) the pod waits, and is told which one it waits for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from koordgang.model.dra import PodClaimRef, ResourceClaimInfo
from koordgang.model.pod import PodInfo


@dataclass(frozen=True, slots=True)
class PodClaim:
    ref: PodClaimRef
    claim: ResourceClaimInfo

    @property
    def key(self) -> str:
        return self.claim.key


@dataclass(frozen=True, slots=True)
class Resolved:
    claims: tuple[PodClaim, ...] = ()
    #: Why the pod cannot use its claims now ("" if it can), said to the pod.
    problem: str = ""


def resolve(pod: PodInfo, claim_of: Callable[[str], ResourceClaimInfo | None]) -> Resolved:
    """The pod's claims as ``claim_of`` finds them by key (the DRA manager, or a what-if's
    view, where claims of pods not submitted yet exist too), or why the pod cannot use them
    now."""
    claims: list[PodClaim] = []
    for ref in pod.resource_claims:
        if ref.claim_name:
            name = ref.claim_name
        else:
            made = pod.claim_statuses.get(ref.name)
            if made is None:
                return Resolved(
                    problem=f"waiting for the resourceclaim controller to make the claim of "
                    f'spec.resourceClaims "{ref.name}" from template "{ref.template_name}"'
                )
            if not made:
                continue  # the controller found that none is needed
            name = made
        key = f"{pod.namespace}/{name}"
        claim = claim_of(key)
        if claim is None:
            return Resolved(problem=_missing(ref, name))
        if ref.template_name and claim.owner_pod_uid != pod.uid:
            return Resolved(
                problem=f'resourceclaim "{name}" was not made for this pod (spec.resourceClaims '
                f'"{ref.name}" names it through template "{ref.template_name}")'
            )
        if claim.deleting:
            return Resolved(problem=f'resourceclaim "{name}" is being deleted')
        if claim.problem:
            return Resolved(problem=f'resourceclaim "{name}" cannot be read: {claim.problem}')
        claims.append(PodClaim(ref, claim))
    return Resolved(tuple(claims))


def _missing(ref: PodClaimRef, name: str) -> str:
    if ref.template_name:
        return (
            f'waiting for resourceclaim "{name}" (made from template "{ref.template_name}" for '
            f'spec.resourceClaims "{ref.name}") to be seen'
        )
    return f'resourceclaim "{name}" not found (spec.resourceClaims "{ref.name}")'
