from __future__ import annotations

from koordgang.framework.interfaces import SortKey
from koordgang.model.pod import PodInfo
from koordgang.plugins.prioritysort import priority_sort_key
from koordgang.state.gangs import GangRegistry


def gang_sort_key(gangs: GangRegistry, pod: PodInfo) -> SortKey:
    """Priority first (the group object's, where it has one, else the pod's); then the older
    gang (PodGroup creation, or its first member's); then namespace and gang name, so that the
    members of one gang leave the queue together. A pod outside any gang is ordered as
    PrioritySort orders it (its own gang of one)."""
    gang = gangs.gang_of(pod.uid)
    if gang is None:
        return priority_sort_key(pod)
    # A group object with a priority of its own (upstream's PodGroup) orders the whole gang.
    own = gang.podgroup.policy.priority if gang.podgroup is not None else None
    priority = own if own is not None else pod.priority
    return (-priority, gang.created_at(), gang.ref.namespace, gang.ref.name, pod.name)
