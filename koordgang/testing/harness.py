"""The one engine fake: a whole ``Scheduler`` with no cluster, run by the test.

``Harness`` builds ``Scheduler(Settings, FakeApi, default_framework(...))`` over the fake API
and clock, feeds it listings as the informers would, and runs it deterministically: ``step``
runs one round of the scheduling loop, ``settle`` turns the event loop (no real sleep) until
binds, follow-ups and writes are done. The reporter's workers and the status writer run as
tasks once started. What the plugins ask of the engine through their handle (reports, metric
events, activations, moves) is also kept in ``asked``, in order.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from koordgang.engine.intake import Intake
from koordgang.engine.kinds import KINDS
from koordgang.engine.loop import SchedulingLoop
from koordgang.engine.scheduler import Scheduler
from koordgang.framework.handle import Services
from koordgang.framework.report import Report
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.model.budgets import BudgetInfo
from koordgang.model.dra import (
    DeviceClassInfo,
    DeviceTaintRuleInfo,
    ResourceClaimInfo,
    ResourceSliceInfo,
)
from koordgang.model.job import JobInfo
from koordgang.model.namespace import NamespaceInfo
from koordgang.model.node import NodeInfo
from koordgang.model.pod import PodInfo
from koordgang.model.volumes import ClaimInfo
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.network_topology import ClusterTopology
from koordgang.state.queue import SchedulingQueue
from koordgang.state.waiting import WaitingPods
from koordgang.testing.api import FakeApi
from koordgang.testing.builders.pods import NS, bound
from koordgang.testing.clock import FakeClock
from koordgang.whatif.fork import DaemonState


@dataclass
class PluginRequests:
    """What the plugins asked of the engine through their handle, in the order asked; each
    request is also passed on to the engine."""

    reports: list[Report] = field(default_factory=list)
    #: Metric events: (metric, value, label value).
    recorded: list[tuple[str, float, str]] = field(default_factory=list)
    #: Names of the pods given to ``activate``.
    activated: list[str] = field(default_factory=list)
    #: How many times a move of parked pods was asked for.
    moves: int = 0

    def tap(self, services: Services) -> Services:
        """``services`` that also keep here what is asked of them."""

        def report(report: Report) -> None:
            self.reports.append(report)
            services.report(report)

        def record(metric: str, value: float, label: str) -> None:
            self.recorded.append((metric, value, label))
            services.record(metric, value, label)

        def activate(pods: Iterable[PodInfo]) -> None:
            listed = list(pods)
            self.activated.extend(pod.name for pod in listed)
            services.activate(listed)

        def request_move() -> None:
            self.moves += 1
            services.request_move()

        return replace(
            services, report=report, record=record, activate=activate, request_move=request_move
        )


class Harness:
    """One Scheduler over the fake API and clock, driven by the test."""

    def __init__(self, api: FakeApi, clock: FakeClock, settings: Settings) -> None:
        self.api = api
        self.clock = clock
        self.settings = settings
        self.gangs = GangRegistry(settings.default_gang_waiting_time, resolve=Resolve(GANG_APIS))
        self.topology = ClusterTopology()
        self.framework = default_framework(
            settings, self.gangs, rng=random.Random(7), topology=self.topology
        )
        self.scheduler = Scheduler(
            settings,
            api,  # type: ignore[arg-type]  # FakeApi stands for KubeApi
            self.framework,
            clock=clock,
            wall=clock.wall,
            gangs=self.gangs,
            topology=self.topology,
        )
        self.asked = PluginRequests()
        self.framework.serve(self.asked.tap(self.framework.handle.services))
        self.tasks: list[asyncio.Task[None]] = []

    # -- parts -------------------------------------------------------------------------------

    @property
    def cache(self) -> SchedulerCache:
        return self.scheduler.cache

    @property
    def queue(self) -> SchedulingQueue:
        return self.scheduler.queue

    @property
    def intake(self) -> Intake:
        return self.scheduler.intake

    @property
    def loop(self) -> SchedulingLoop:
        return self.scheduler.loop

    @property
    def waiting(self) -> WaitingPods:
        return self.framework.waiting

    def daemon_state(self) -> DaemonState:
        """What a what-if forks, as the daemon gives it (``app.py``): the cache and stores, the
        objects the plugins were fed, the held placements and nominations, what the plugins
        carry over."""
        framework = self.framework
        return DaemonState(
            self.cache,
            self.scheduler.stores,
            self.intake.objects.items(),
            framework.waiting,
            framework.nominations,
            framework.carried(),
        )

    def start_writers(self, workers: int | None = None, event_workers: int | None = None) -> None:
        """The reporter's workers, the status writer and the plugins' work off the cycle, as
        the daemon runs them (a test giving ``workers`` gets no event writers unless it asks
        for them too)."""
        reporter = self.scheduler.reporter
        for index in range(reporter.workers if workers is None else workers):
            self.tasks.append(asyncio.create_task(reporter.work(), name=f"reporter-{index}"))
        if event_workers is None:
            event_workers = reporter.event_workers if workers is None else 0
        for index in range(event_workers):
            self.tasks.append(
                asyncio.create_task(reporter.work(events_only=True), name=f"event-writer-{index}")
            )
        self.tasks.append(
            asyncio.create_task(self.scheduler.status_writer.work(), name="status-writer")
        )
        evictor = self.scheduler.evictor
        for index in range(evictor.workers):
            self.tasks.append(asyncio.create_task(evictor.work(), name=f"evictor-{index}"))
        for name, work in self.framework.background().items():
            self.tasks.append(asyncio.create_task(work(), name=name))

    # -- informers ---------------------------------------------------------------------------

    def list(
        self,
        *,
        nodes: Iterable[NodeInfo] = (),
        pods: Iterable[PodInfo] = (),
        namespaces: Iterable[NamespaceInfo] = (NamespaceInfo(NS, {}),),
        claims: Iterable[ClaimInfo] = (),
        budgets: Iterable[BudgetInfo] = (),
        resource_slices: Iterable[ResourceSliceInfo] = (),
        device_classes: Iterable[DeviceClassInfo] = (),
        resource_claims: Iterable[ResourceClaimInfo] = (),
        device_taint_rules: Iterable[DeviceTaintRuleInfo] = (),
        jobs: Iterable[JobInfo] = (),
    ) -> None:
        """The initial listings of every watched kind; the loop is ready after them."""
        listed: dict[str, Iterable[Any]] = {
            "nodes": nodes,
            "pods": pods,
            "namespaces": namespaces,
            "claims": claims,
            "budgets": budgets,
            "resourceslices": resource_slices,
            "deviceclasses": device_classes,
            "resourceclaims": resource_claims,
            "devicetaintrules": device_taint_rules,
            "jobs": jobs,
        }
        for kind in KINDS:
            self.intake.kind(kind.name).listed(list(listed[kind.name]))

    def add(self, *pods: PodInfo) -> None:
        for info in pods:
            self.intake.on_pod_upsert(info)

    def observe_binds(self) -> None:
        """What the pod informer shows after binds landed: each bound pod with its node."""
        for name, node_name in self.api.binds():
            for info in list(self.cache.pods()):
                if info.name == name and not info.node_name:
                    self.intake.on_pod_upsert(bound(info, node_name))

    # -- running -----------------------------------------------------------------------------

    def step(self, limit: int = 100) -> int:
        return self.scheduler.loop.step(limit)

    def nudge_reporter(self) -> None:
        """Reports held (until due, or while binds are in flight) are looked at again only
        when something wakes the workers, or after a 0.2 s poll in real time; neither the fake
        clock nor the end of the last bind wakes anybody. Here the harness wakes them instead
        of waiting."""
        reporter = self.scheduler.reporter
        if reporter.backlog:
            reporter.nudge()

    def quiet(self) -> bool:
        return (
            self.api.idle
            and self.scheduler.binder.in_flight == 0
            and self.scheduler.reporter.backlog == 0
            and self.scheduler.evictor.backlog == 0
            and not self.framework.working()
        )

    async def settle(self, turns: int = 2_000) -> bool:
        """Turns the event loop until binds, their follow-ups and writes are done (quiet for
        a few turns in a row), or ``turns`` ran out; no real time passes."""
        calm = 0
        for _ in range(turns):
            await asyncio.sleep(0)
            self.nudge_reporter()
            calm = calm + 1 if self.quiet() else 0
            if calm >= 10:
                return True
        return False

    async def run(self, limit: int = 100) -> int:
        """One round of the loop, then everything it started is carried out."""
        done = self.step(limit)
        await self.settle()
        return done

    async def close(self) -> None:
        self.api.release_all()
        scheduler = self.scheduler
        scheduler.loop.stop()
        await scheduler.binder.drain(1.0)
        await scheduler.bind_outcomes.drain(1.0)
        await scheduler.reporter.close(0.05)
        await scheduler.status_writer.close(0.05)
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def turns(count: int = 20) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def until(predicate: Callable[[], bool], *, turns: int = 2_000) -> bool:
    for _ in range(turns):
        if predicate():
            return True
        await asyncio.sleep(0)
    return predicate()


#: Makes harnesses over a test's API and clock (the ``make_scheduler`` fixture).
MakeScheduler = Callable[..., Harness]
