"""What plugins may ask of the scheduler that runs them (kube-scheduler calls it the Handle).

A framework builds one :class:`Handle` and gives it to every plugin's factory, so a plugin holds
it from birth. The handle answers from two places: the :class:`Services` of whoever runs the
framework (the engine's cache, clocks, writes and queue; the what-if's read-only stand-ins),
handed over once with ``Framework.serve`` before the first event or cycle, and the framework
itself (what plugins learn from each other: placement, held pods, nominations, jobs, scopes,
what preemption could free). Everything here is synchronous and returns at once: a report is
queued for writing, an activation moves pods in the queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from koordgang.framework.group import Placer, SchedulingGroup
from koordgang.framework.jobs import Budget, JobRef
from koordgang.framework.report import Report
from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache
from koordgang.state.dra import DraManager
from koordgang.state.nominations import Nominations
from koordgang.state.snapshot import Snapshot
from koordgang.state.stores import Stores
from koordgang.state.waiting import WaitingPods

__all__ = ["FrameworkAnswers", "Handle", "Services"]


@dataclass(frozen=True, slots=True)
class Services:
    """What the runner of a framework offers its plugins: one value, built where the parts
    are (the engine's scheduler, the what-if), no class of its own per runner."""

    #: The scheduler's cache: nodes and pods (plugins read it; only the runner changes it).
    cache: SchedulerCache
    #: The other watched kinds, each in its store (plugins read them; the runner feeds them).
    stores: Stores
    #: Monotonic seconds (deadlines, waiting times).
    now: Callable[[], float]
    #: Seconds since the epoch (times shown to users).
    wall: Callable[[], float]
    #: Queues a write of what a user should read (condition, Event, annotations).
    report: Callable[[Report], None]
    #: An event for a metric a plugin declared: a counter counts the value, a histogram
    #: observes it.
    record: Callable[[str, float, str], None]
    #: PreEnqueue again for these pods (its verdict may have changed): the active queue if it
    #: lets them in, else they wait outside the queue.
    activate: Callable[[Iterable[PodInfo]], None]
    #: Something changed that may let pods parked as unschedulable fit: retry them.
    request_move: Callable[[], None]
    #: Ours, alive, unbound and not placed by this scheduler: it needs a node.
    is_pending: Callable[[PodInfo], bool]
    #: Retry these pods at this monotonic moment if they are parked then (a plugin's verdict
    #: changes at a time, not on an event); a runner without a queue ignores it.
    retry_at: Callable[[Iterable[PodInfo], float], None] = lambda pods, when: None


class FrameworkAnswers(Protocol):
    """What the framework answers plugins about each other and the state it holds."""

    @property
    def waiting(self) -> WaitingPods: ...

    @property
    def nominations(self) -> Nominations: ...

    @property
    def placer(self) -> Placer: ...

    def reclaimable(self, group: SchedulingGroup, snapshot: Snapshot) -> Mapping[str, int]: ...

    def job_of(self, pod: PodInfo) -> JobRef | None: ...

    def placement_scopes(
        self, group: SchedulingGroup, snapshot: Snapshot
    ) -> list[frozenset[str]] | None: ...


class Handle:
    """A plugin's view of the scheduler: the runner's services and the framework's answers."""

    def __init__(self, framework: FrameworkAnswers) -> None:
        self._framework = framework
        self._services: Services | None = None

    def serve(self, services: Services) -> None:
        """The runner's services, once, before the first event or cycle."""
        self._services = services

    @property
    def services(self) -> Services:
        if self._services is None:
            raise RuntimeError("the framework is not served yet: call Framework.serve first")
        return self._services

    # -- the runner's services -----------------------------------------------------------------

    @property
    def cache(self) -> SchedulerCache:
        """The scheduler's cache (read it; only the engine changes it)."""
        return self.services.cache

    @property
    def stores(self) -> Stores:
        """The watched kinds besides nodes and pods (read them; only the engine feeds them)."""
        return self.services.stores

    @property
    def dra(self) -> DraManager:
        """Dynamic Resource Allocation: devices, classes, claims, what is in use."""
        return self.services.stores.dra

    def now(self) -> float:
        return self.services.now()

    def wall(self) -> float:
        return self.services.wall()

    def report(self, report: Report) -> None:
        self.services.report(report)

    def record(self, metric: str, value: float = 1.0, label: str = "") -> None:
        """An event for a metric the plugin declared (``MetricsPlugin``), by its name (and the
        value of its label, where it has one)."""
        self.services.record(metric, value, label)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        self.services.activate(pods)

    def request_move(self) -> None:
        self.services.request_move()

    def retry_at(self, pods: Iterable[PodInfo], when: float) -> None:
        self.services.retry_at(pods, when)

    def is_pending(self, pod: PodInfo) -> bool:
        return self.services.is_pending(pod)

    def budgets_of(self, pod: PodInfo) -> Sequence[Budget]:
        """The PodDisruptionBudgets that cover ``pod``."""
        covering = self.services.stores.budgets.covering(pod)
        return [Budget(b.key, b.disruptions_allowed) for b in covering]

    # -- what the framework knows ----------------------------------------------------------------

    @property
    def waiting(self) -> WaitingPods:
        """Pods held for their group (read it; only the engine changes it)."""
        return self._framework.waiting

    @property
    def nominations(self) -> Nominations:
        """Pods nominated to nodes while room is made (read it; only the engine changes it)."""
        return self._framework.nominations

    @property
    def placer(self) -> Placer:
        """Places one pod on a snapshot, or checks it on one node (for what-ifs)."""
        return self._framework.placer

    def reclaimable(self, group: SchedulingGroup, snapshot: Snapshot) -> Mapping[str, int]:
        """Resources that preemption could free for ``group`` (ReclaimPlugins, summed)."""
        return self._framework.reclaimable(group, snapshot)

    def job_of(self, pod: PodInfo) -> JobRef | None:
        """The job a running pod belongs to (its gang), if a plugin knows it."""
        return self._framework.job_of(pod)

    def placement_scopes(
        self, group: SchedulingGroup, snapshot: Snapshot
    ) -> list[frozenset[str]] | None:
        """The node sets ``group`` must stay inside one of (None: anywhere)."""
        return self._framework.placement_scopes(group, snapshot)
