"""Which pods are ours, and which of ours still need a node."""

from __future__ import annotations

from collections.abc import Iterable

from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache
from koordgang.state.nominations import Nominations


class PendingRule:
    def __init__(
        self, scheduler_names: Iterable[str], cache: SchedulerCache, nominations: Nominations
    ) -> None:
        #: The names we answer to (``spec.schedulerName``).
        self.names = frozenset(scheduler_names)
        self._cache = cache
        self._nominations = nominations

    def is_ours(self, pod: PodInfo) -> bool:
        return pod.scheduler_name in self.names

    def is_pending(self, pod: PodInfo) -> bool:
        """Ours, alive, unbound, and not placed by this scheduler already (binding or held).
        A nominated pod counts on its node too, but is still pending: it binds once its room
        is free."""
        return (
            pod.scheduler_name in self.names
            and not pod.node_name
            and not pod.is_terminal
            and not pod.is_terminating
            and (not self._cache.is_assumed(pod.uid) or pod.uid in self._nominations)
        )
