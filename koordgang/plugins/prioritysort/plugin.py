from __future__ import annotations

from koordgang.framework.interfaces import SortKey
from koordgang.model.pod import PodInfo


class PrioritySort:
    """Orders pods by priority (high first), creation time (old first), namespace, name.

    The tail of the key is the pod's own name so that the order is total and stable.
    """

    name = "PrioritySort"

    def sort_key(self, pod: PodInfo) -> SortKey:
        return (-pod.priority, pod.creation_timestamp, pod.namespace, pod.name)
