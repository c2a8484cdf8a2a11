from __future__ import annotations

from koordgang.framework.interfaces import SortKey
from koordgang.model.pod import PodInfo
from koordgang.plugins.prioritysort import PrioritySort
from koordgang.state.gangs import GangRegistry


class GangSort:
    """Priority first; then the older gang (PodGroup creation, or its first member's); then
    namespace and gang name, so that the members of one gang leave the queue together.
    A pod outside any gang is its own gang of one."""

    name = "GangSort"

    def __init__(self, gangs: GangRegistry) -> None:
        self.gangs = gangs
        self._plain = PrioritySort()

    def sort_key(self, pod: PodInfo) -> SortKey:
        gang = self.gangs.gang_of(pod.uid)
        if gang is None:
            return self._plain.sort_key(pod)
        return (-pod.priority, gang.created_at(), gang.ref.namespace, gang.ref.name, pod.name)
