from __future__ import annotations

from koordgang.framework.interfaces import SortKey
from koordgang.model.pod import PodInfo


def priority_sort_key(pod: PodInfo) -> SortKey:
    """Priority (high first), creation time (old first), namespace, name: a total, stable order."""
    return (-pod.priority, pod.creation_timestamp, pod.namespace, pod.name)


class PrioritySort:
    """Orders pods by priority, then age (see ``priority_sort_key``)."""

    name = "PrioritySort"

    def sort_key(self, pod: PodInfo) -> SortKey:
        return priority_sort_key(pod)
