"""The engine's services to plugins (``EngineServices``): its cache, clocks, writes, queue and
metrics, and nothing more. What plugins learn from each other the framework answers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from koordgang.engine.intake import Intake
from koordgang.engine.metrics import Metrics
from koordgang.engine.pending import PendingRule
from koordgang.engine.reporter import Reporter
from koordgang.engine.signals import Signals
from koordgang.framework.jobs import Budget
from koordgang.framework.report import Report
from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache
from koordgang.state.nominations import Nominations
from koordgang.state.waiting import WaitingPods


class EngineHandle:
    def __init__(
        self,
        *,
        cache: SchedulerCache,
        intake: Intake,
        reporter: Reporter,
        pending: PendingRule,
        signals: Signals,
        clock: Callable[[], float],
        wall: Callable[[], float],
        metrics: Metrics,
    ) -> None:
        self._metrics = metrics
        self._cache = cache
        self._intake = intake
        self._reporter = reporter
        self._pending = pending
        self._signals = signals
        self._clock = clock
        self._wall = wall

    @property
    def cache(self) -> SchedulerCache:
        return self._cache

    def now(self) -> float:
        return self._clock()

    def wall(self) -> float:
        return self._wall()

    def report(self, report: Report) -> None:
        self._reporter.report(report)

    def record(self, metric: str, value: float = 1.0) -> None:
        self._metrics.record(metric, value)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        self._intake.activate(pods)

    def request_move(self) -> None:
        self._signals.request_move()

    def is_pending(self, pod: PodInfo) -> bool:
        return self._pending.is_pending(pod)

    def budgets_of(self, pod: PodInfo) -> Sequence[Budget]:
        return [Budget(b.key, b.disruptions_allowed) for b in self._cache.budgets_of(pod)]


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
