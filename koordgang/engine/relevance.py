"""Which reports are still worth writing when their turn comes (see ``Reporter``)."""

from __future__ import annotations

from collections.abc import Callable

from koordgang.framework.report import Report
from koordgang.state.cache import SchedulerCache
from koordgang.state.nominations import Nominations
from koordgang.state.waiting import WaitingPods


class ReportRelevance:
    """Explanations for a pod that got bound or deleted meanwhile are not written; neither are
    informational Events while binds are in flight (see ``Reporter``)."""

    def __init__(
        self,
        cache: SchedulerCache,
        waiting: WaitingPods,
        in_flight: Callable[[], int],
        nominations: Nominations | None = None,
    ) -> None:
        self._cache = cache
        self._waiting = waiting
        self._nominations = nominations if nominations is not None else Nominations()
        self._in_flight = in_flight

    def is_current(self, report: Report) -> bool:
        if report.obj.kind != "Pod":
            return True
        uid = report.obj.uid
        pod = self._cache.pod(uid)
        if pod is None or pod.node_name or pod.is_terminal:
            return False
        # Assumed: either held for its group (still waiting: explain) or binding (about to be
        # bound: a "not scheduled" condition now would contradict the binding).
        return not self._cache.is_assumed(uid) or uid in self._waiting or uid in self._nominations

    def binding_busy(self) -> bool:
        return self._in_flight() > 0
