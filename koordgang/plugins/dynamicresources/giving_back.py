"""Which allocated claims a pod that found no node gives back (PostFilter), as kube-scheduler
does: a claim allocated where the pod may no longer go (its node gone or full) would hold it
there forever.

- The pod's own claim, reserved for nobody else.
- Its upstream PodGroup's claim, reserved for nobody or for the PodGroup alone, while no
  member of the PodGroup is bound or placed: none runs on the devices yet, so the gang may
  start over anywhere.
"""

from __future__ import annotations

from koordgang.model.pod import PodInfo
from koordgang.plugins.dynamicresources.claims import PodClaim
from koordgang.plugins.dynamicresources.messages import pinned_reason
from koordgang.state.cache import SchedulerCache
from koordgang.state.dra import DraManager


def gives_back(
    pod: PodInfo, pod_claim: PodClaim, message: str, dra: DraManager, cache: SchedulerCache
) -> bool:
    """Whether ``pod``, told ``message`` when it found no node, gives ``pod_claim`` back."""
    claim = pod_claim.claim
    if (
        claim.allocation is None
        or dra.is_in_flight(claim.key)
        or pinned_reason(claim.name) not in message
    ):
        return False
    group = pod_claim.group
    if group is None:
        return all(c.uid == pod.uid for c in claim.reserved_for)
    if any(c.uid != group.uid for c in claim.reserved_for):
        return False
    return not any(
        member.scheduling_group == group.name and cache.node_of(member.uid)
        for member in cache.pods_in_namespace(pod.namespace)
    )
