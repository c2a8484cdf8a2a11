"""The scheduler: cache, queue and framework, and the engine parts around them.

    informer events --> Intake ------> cache, queue, plugins' state
                                        |
    SchedulingLoop: pop -> cycle (framework, synchronous) -> bind / hold / park
                                        |                         |
                    Binder (binds in flight) -> BindOutcomes   Reporter, StatusWriter (writes)

This module only builds and wires them; each part is a module of its own.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable

import structlog

from koordgang.clients.api import KubeApi
from koordgang.engine.bind_outcomes import BindOutcomes
from koordgang.engine.binder import Binder
from koordgang.engine.evictor import Evictor
from koordgang.engine.gang_status import GangStatus
from koordgang.engine.held_room import HeldRoom
from koordgang.engine.intake import Intake
from koordgang.engine.loop import SchedulingLoop
from koordgang.engine.metrics import Metrics
from koordgang.engine.parts import EngineParts
from koordgang.engine.pending import PendingRule
from koordgang.engine.relevance import ReportRelevance
from koordgang.engine.reporter import Reporter
from koordgang.engine.signals import Signals
from koordgang.engine.status_writer import StatusWriter
from koordgang.engine.tasks import Supervisor
from koordgang.engine.topology_status import TopologyStatus
from koordgang.engine.watch_lag import WatchLag
from koordgang.framework.framework import Framework
from koordgang.framework.handle import Services
from koordgang.framework.report import StatusUpdate
from koordgang.model.pod import PodInfo
from koordgang.settings import Settings
from koordgang.state.gangs import GangRegistry
from koordgang.state.in_flight import InFlight
from koordgang.state.network_topology import ClusterTopology
from koordgang.state.queue import SchedulingQueue
from koordgang.state.stores import Stores

log = structlog.get_logger("koordgang.scheduler")


class Scheduler:
    def __init__(
        self,
        settings: Settings,
        api: KubeApi,
        framework: Framework,
        *,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        gangs: GangRegistry | None = None,
        topology: ClusterTopology | None = None,
    ) -> None:
        self.settings = settings
        self.framework = framework
        self.metrics = metrics or Metrics(settings.scheduler_name, framework.metric_specs())
        self.clock = clock
        #: The watched kinds besides nodes and pods; the cache's pods take devices from the
        #: DRA manager among them.
        self.stores = Stores()
        #: Pods of other schedulers count where those nominated them (kube-scheduler holds
        #: that room, and so do we), and, not tried yet, where they are likely to go.
        in_flight = (
            InFlight(settings.others_in_flight_for, wall)
            if settings.others_in_flight_for > 0
            else None
        )
        self.cache = self.stores.new_cache(settings.scheduler_names, in_flight)
        self.queue = SchedulingQueue(
            framework.sort_key,
            initial_backoff=settings.initial_backoff,
            max_backoff=settings.max_backoff,
            unschedulable_retry_interval=settings.unschedulable_retry_interval,
        )
        self.signals = Signals()
        self.pending = PendingRule(settings.scheduler_names, self.cache, framework.nominations)
        self.reporter = Reporter(
            api,
            settings.scheduler_name,
            self.metrics,
            relevance=ReportRelevance(
                self.cache,
                framework.waiting,
                lambda: self.binder.in_flight,
                framework.nominations,
            ),
            clock=clock,
            normal_events_per_second=settings.scheduled_events_per_second,
            explain_after=settings.explain_after,
        )
        self.status_writer = StatusWriter(api, self.metrics)
        #: Statuses of custom objects, asked once a second: the gang APIs' group objects and
        #: the ClusterNetworkTopology, each from the state the plugins share with the engine.
        self.gang_status = GangStatus(gangs, self.cache, clock, wall) if gangs is not None else None
        self.topology_status = (
            TopologyStatus(topology, self.cache) if topology is not None else None
        )
        parts = EngineParts(
            cache=self.cache,
            stores=self.stores,
            queue=self.queue,
            framework=framework,
            reporter=self.reporter,
            pending=self.pending,
            signals=self.signals,
            clock=clock,
        )
        #: Room held for pods not bound yet (held placements, nominations): its one owner,
        #: handed to the intake and the loop. A pod whose room is released goes back through
        #: the intake (to the queue, or gated).
        self.held = HeldRoom(parts, requeue=lambda pod: self.intake.enqueue(pod))
        self.watch_lag = WatchLag(self.metrics, clock)
        self.intake = Intake(parts, self.held, self.watch_lag)
        self.bind_outcomes = BindOutcomes(parts, api, self.metrics, self.watch_lag)
        self.binder = Binder(
            api,
            self.metrics,
            concurrency=settings.bind_concurrency,
            listener=self.bind_outcomes,
            clock=clock,
            on_idle=self.reporter.binding_idle,
        )
        self.evictor = Evictor(api, settings.scheduler_name, self.metrics)
        self.loop = SchedulingLoop(
            parts,
            intake=self.intake,
            binder=self.binder,
            evictor=self.evictor,
            status_writer=self.status_writer,
            metrics=self.metrics,
            statuses=self.status_updates,
            held=self.held,
        )
        framework.serve(
            Services(
                cache=self.cache,
                stores=self.stores,
                now=clock,
                wall=wall,
                report=self.reporter.report,
                record=self.metrics.record,
                activate=self.intake.activate,
                request_move=self.signals.request_move,
                is_pending=self.pending.is_pending,
                retry_at=self._retry_at,
            )
        )

    def _retry_at(self, pods: Iterable[PodInfo], when: float) -> None:
        for pod in pods:
            self.queue.retry_at(pod.uid, when)

    def status_updates(self) -> list[StatusUpdate]:
        updates = [] if self.gang_status is None else self.gang_status.updates()
        if self.topology_status is not None:
            updates += self.topology_status.updates()
        return updates

    @property
    def ready(self) -> bool:
        return self.intake.ready.is_set()

    def start(self, supervisor: Supervisor) -> None:
        """Starts the loop, the writers and the plugins' work off the cycle as guarded tasks,
        and opens the bind connections."""
        for index in range(self.reporter.workers):
            supervisor.spawn(f"reporter-{index}", self.reporter.work)
        for index in range(self.reporter.event_workers):
            supervisor.spawn(f"event-writer-{index}", functools.partial(self.reporter.work, True))
        supervisor.spawn("status-writer", self.status_writer.work)
        for index in range(self.evictor.workers):
            supervisor.spawn(f"evictor-{index}", self.evictor.work)
        supervisor.spawn("scheduling-loop", self.loop.run)
        for name, work in self.framework.background().items():
            supervisor.spawn(name, work)
        supervisor.start_once("warm-bind-connections", self.binder.warm)

    async def stop(self, grace: float | None = None) -> None:
        """Stops taking pods, lets binds in flight finish, writes pending reports."""
        self.loop.stop()
        self.bind_outcomes.stopping = True
        grace = self.settings.shutdown_grace if grace is None else grace
        unfinished = await self.binder.drain(grace)
        if unfinished:
            log.warning("binds cut off by shutdown", count=unfinished)
        await self.bind_outcomes.drain(timeout=5.0)
        self.status_writer.submit(self.status_updates())
        await self.reporter.close(timeout=min(5.0, grace))
        await self.status_writer.close(timeout=2.0)
        log.info("scheduler stopped")
