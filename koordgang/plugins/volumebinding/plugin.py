from __future__ import annotations

from collections.abc import Callable, Sequence

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.pod import PodInfo
from koordgang.model.volumes import ClaimInfo
from koordgang.state.snapshot import Snapshot

#: A PersistentVolumeClaim by namespace and name; None when it is not known.
ClaimLookup = Callable[[str, str], ClaimInfo | None]

#: kube-scheduler's reason for claims that nobody has bound yet.
UNBOUND_REASON = "pod has unbound immediate PersistentVolumeClaims"


def not_found_reason(claim: str) -> str:
    return f'persistentvolumeclaim "{claim}" not found'


def unbound_reason(claims: Sequence[str]) -> str:
    """kube-scheduler's words, then what this scheduler cannot do and what the user can."""
    names = ", ".join(f'"{c}"' for c in claims)
    noun = "claim" if len(claims) == 1 else "claims"
    return (
        f"{UNBOUND_REASON}; koordgang does not bind volumes: bind the {noun} {names} first, "
        "or use a scheduler that does"
    )


class VolumeBinding:
    """Every claim the pod mounts must exist and be bound to a volume.

    This scheduler binds no volumes: a claim that waits for its first consumer
    (``WaitForFirstConsumer``) is refused like any unbound claim, since nothing here would
    provision it. The node affinity of a bound volume is not checked either (the claim model
    does not carry it): a pod whose volume is reachable from some nodes only may be placed
    where the kubelet cannot attach it.

    Both refusals are UNSCHEDULABLE_AND_UNRESOLVABLE: no node and no preemption helps; the
    pod is tried again when a claim is added or changes.
    """

    name = "VolumeBinding"

    def __init__(self, claim_of: ClaimLookup = lambda namespace, name: None) -> None:
        #: A volume claim by namespace and name, as the volume claims' store knows it.
        self._claim_of = claim_of

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        claims = pod.pvc_names
        if not claims:
            return Status(Code.SKIP, plugin=self.name)
        unbound: list[str] = []
        for claim_name in claims:
            claim = self._claim_of(pod.namespace, claim_name)
            # A missing claim is reported first, as kube-scheduler does: binding the others
            # would not be enough.
            if claim is None:
                return Status.unresolvable(self.name, not_found_reason(claim_name))
            if not claim.bound:
                unbound.append(claim_name)
        if unbound:
            return Status.unresolvable(self.name, unbound_reason(unbound))
        return SUCCESS
