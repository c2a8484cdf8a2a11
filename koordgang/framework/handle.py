"""What plugins may ask of the scheduler that runs them (kube-scheduler calls it the Handle).

The engine implements it; plugins receive it through ``attach``. Everything here is synchronous
and returns at once: a report is queued for writing, an activation moves pods in the queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from koordgang.framework.group import Placer, SchedulingGroup
from koordgang.framework.jobs import Budget, JobRef
from koordgang.framework.report import Report
from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache
from koordgang.state.nominations import Nominations
from koordgang.state.snapshot import Snapshot
from koordgang.state.waiting import WaitingPods


class EngineServices(Protocol):
    """What the engine itself offers plugins: its cache, clocks, writes, queue and metrics.
    What plugins learn from each other (placer, held pods, nominations, jobs, scopes, what
    preemption could free) the framework answers (``Framework.attach`` joins the two)."""

    @property
    def cache(self) -> SchedulerCache:
        """The scheduler's cache (read it; only the engine changes it)."""

    def now(self) -> float:
        """Monotonic seconds (deadlines, waiting times)."""

    def wall(self) -> float:
        """Seconds since the epoch (times shown to users)."""

    def report(self, report: Report) -> None:
        """Queues a write of what a user should read (condition, Event, annotations)."""

    def record(self, metric: str, value: float = 1.0) -> None:
        """An event for a metric a plugin declared."""

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """PreEnqueue again for these pods (its verdict may have changed): the active queue if
        it lets them in, else they wait outside the queue."""

    def request_move(self) -> None:
        """Something changed that may let parked pods fit: retry them."""

    def is_pending(self, pod: PodInfo) -> bool:
        """Ours, alive, unbound and not placed by this scheduler: it needs a node."""

    def budgets_of(self, pod: PodInfo) -> Sequence[Budget]:
        """The PodDisruptionBudgets that cover ``pod``."""


class Handle(Protocol):
    @property
    def cache(self) -> SchedulerCache:
        """The scheduler's cache (read it; only the engine changes it)."""

    @property
    def waiting(self) -> WaitingPods:
        """Pods held for their group (read it; only the engine changes it)."""

    def now(self) -> float:
        """Monotonic seconds (deadlines, waiting times)."""

    def wall(self) -> float:
        """Seconds since the epoch (times shown to users)."""

    def report(self, report: Report) -> None:
        """Queues a write of what a user should read (condition, Event, annotations)."""

    def record(self, metric: str, value: float = 1.0) -> None:
        """An event for a metric the plugin declared (``MetricsPlugin``), by its name: a
        counter counts ``value``, a histogram observes it."""

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """PreEnqueue again for these pods (its verdict may have changed): the active queue if
        it lets them in, else they wait outside the queue."""

    def request_move(self) -> None:
        """Something changed that may let pods parked as unschedulable fit: retry them."""

    def is_pending(self, pod: PodInfo) -> bool:
        """Ours, alive, unbound and not placed by this scheduler: it needs a node."""

    def reclaimable(self, group: SchedulingGroup, snapshot: Snapshot) -> Mapping[str, int]:
        """Resources that preemption could free for ``group`` (ReclaimPlugins, summed)."""

    @property
    def placer(self) -> Placer:
        """Places one pod on a snapshot, or checks it on one node (for what-ifs)."""

    @property
    def nominations(self) -> Nominations:
        """Pods nominated to nodes while room is made (read it; only the engine changes it)."""

    def job_of(self, pod: PodInfo) -> JobRef | None:
        """The job a running pod belongs to (its gang), if a plugin knows it."""

    def placement_scopes(
        self, group: SchedulingGroup, snapshot: Snapshot
    ) -> list[frozenset[str]] | None:
        """The node sets ``group`` must stay inside one of (None: anywhere)."""

    def budgets_of(self, pod: PodInfo) -> Sequence[Budget]:
        """The PodDisruptionBudgets that cover ``pod``."""


@runtime_checkable
class HandleUser(Protocol):
    def attach(self, handle: Handle) -> None:
        """Called once, before the first event or cycle."""
