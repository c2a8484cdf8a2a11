"""Wiring: settings -> API client -> cache, queue, framework, scheduler -> informers, kopf."""

from __future__ import annotations

import asyncio
import os
import socket
import time

import structlog

from koordgang.adapters.discovery import resolve_versions
from koordgang.adapters.feeds import Feed
from koordgang.adapters.http import HealthServer
from koordgang.adapters.informer import Informer
from koordgang.adapters.kopf_runtime import (
    OperatorHooks,
    build_registry,
    quiet_kopf_logs,
    run_operator,
)
from koordgang.adapters.memory import AllocatorTrim, MemoryTracer, release_free_memory
from koordgang.clients import custom
from koordgang.clients.api import KubeApi
from koordgang.clients.config import load_connection
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.engine.kinds import KINDS
from koordgang.engine.leader import LeaderElector, LeaseConfig
from koordgang.engine.reporter import EVENT_WORKERS
from koordgang.engine.scheduler import Scheduler
from koordgang.engine.tasks import Supervisor
from koordgang.framework.report import WatchedResource
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.gang_rows import gang_rows
from koordgang.state.gangs import GangRegistry
from koordgang.state.network_topology import ClusterTopology
from koordgang.whatif.fork import DaemonState
from koordgang.whatif.service import WhatIfService

log = structlog.get_logger("koordgang.app")

#: How often the versions the API server serves are asked again (a cluster upgrade).
VERSION_CHECK_SECONDS = 60.0


class App:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.connection = load_connection(settings.kubeconfig)
        #: Who this replica is (the Lease holder's name; the user agent of its requests).
        self.identity = os.environ.get("POD_NAME") or f"{socket.gethostname()}_{os.getpid()}"
        self.api = KubeApi(
            self.connection,
            # Binds, the informational Events' writers, and 16 for the rest (conditions,
            # evictions, leases, status).
            pool_size=settings.bind_concurrency + EVENT_WORKERS + 16,
            user_agent=f"koordgang/{self.identity}",
        )
        # The state plugins share with the engine's status controllers.
        gangs = GangRegistry(settings.default_gang_waiting_time, resolve=Resolve(GANG_APIS))
        topology = ClusterTopology()
        self.scheduler = Scheduler(
            settings,
            self.api,
            default_framework(settings, gangs, topology=topology),
            gangs=gangs,
            topology=topology,
        )
        intake = self.scheduler.intake
        self.informers = tuple(
            Informer(
                self.api, kind.path, name=kind.name, sink=Feed(kind, intake), optional=kind.optional
            )
            for kind in KINDS
        )
        self.supervisor = Supervisor(on_fatal=self._fatal, clock=time.monotonic)
        self.http: HealthServer | None = None
        self.memory: MemoryTracer | None = None
        if settings.trace_memory:
            self.memory = MemoryTracer()
            self.memory.start()
        if settings.http_port:
            cache = self.scheduler.cache
            framework = self.scheduler.framework
            whatif = WhatIfService(
                settings,
                self.api,
                lambda: DaemonState(
                    cache,
                    self.scheduler.stores,
                    intake.objects.items(),
                    framework.waiting,
                    framework.nominations,
                    framework.carried(),
                ),
            )
            self.http = HealthServer(
                settings.http_host,
                settings.http_port,
                problems=self.supervisor.problems,
                is_ready=lambda: self.scheduler.ready,
                render_metrics=self.scheduler.metrics.render,
                render_gangs=lambda with_basic: gang_rows(
                    gangs,
                    cache,
                    self.scheduler.stores.dra,
                    self.scheduler.framework.gang_facts,
                    with_basic=with_basic,
                ),
                role=lambda: self.role,
                whatif=whatif.answer,
                memory=self.memory.report if self.memory is not None else None,
            )
        self.stop_flag = asyncio.Event()
        self.failed = False
        self.leading = False
        #: The kinds plugins watch, at the versions the API server serves (set by ``run``).
        self.watched: list[WatchedResource] = []
        self.elector: LeaderElector | None = None
        if settings.leader_elect:
            self.elector = LeaderElector(
                self.api,
                LeaseConfig(
                    namespace=settings.leader_elect_resource_namespace
                    or os.environ.get("POD_NAMESPACE")
                    or "default",
                    name=settings.leader_elect_resource_name,
                    identity=self.identity,
                    lease_duration=settings.leader_elect_lease_duration,
                    renew_deadline=settings.leader_elect_renew_deadline,
                    retry_period=settings.leader_elect_retry_period,
                ),
                on_started=self._lead,
                on_lost=self._lost,
                clock=time.monotonic,
            )

    @property
    def role(self) -> str:
        return "leader" if self.elector is None else self.elector.role.value

    async def _read_watched(self) -> None:
        """Every resource a plugin watches (PodGroups of each gang API, the
        ClusterNetworkTopology), listed once before the first cycle: kopf delivers them only
        some time after start, and a gang tried meanwhile would wait for a PodGroup that
        exists (and a job placed meanwhile would not be gathered). kopf's own events follow
        and change nothing that was read here."""
        intake = self.scheduler.intake
        for resource in self.watched:
            try:
                items = await custom.list_all(self.api, resource.path)
            except ApiError as error:
                if not error.not_found:  # a kind not served here is fine
                    log.warning("not read at start", resource=resource.id, error=str(error))
                continue
            except ApiUnavailable as error:
                log.warning("not read at start", resource=resource.id, error=str(error))
                continue
            for obj in items:
                intake.on_object(resource.id, "ADDED", obj)

    async def _watch_versions(self) -> None:
        """A cluster upgraded under the daemon may serve a kind in another version now (1.37
        serves upstream's PodGroup as v1beta1, and v1alpha2 no more): asked again every
        minute; on a change the daemon stops (non-zero) and, restarted, reads the new one."""
        declared = self.scheduler.framework.watched_resources()
        while True:
            await asyncio.sleep(VERSION_CHECK_SECONDS)
            now = await resolve_versions(self.api, declared, keep=self.watched)
            changed = [
                f"{before.id}: {before.version} -> {after.version}"
                for before, after in zip(self.watched, now, strict=True)
                if before.version != after.version
            ]
            if changed:
                log.error(
                    "the API server serves a watched kind in another version now: restarting "
                    "to read it",
                    changed=changed,
                )
                self._fatal("api-versions", "; ".join(changed))
                return

    async def _lead(self) -> None:
        """This replica took the lease: it schedules and writes from now on (its caches are
        warm; gang state is rebuilt from them as after a restart)."""
        self.scheduler.metrics.leader.set(1)
        self.leading = True
        self.scheduler.start(self.supervisor)
        log.info("scheduling from now on", scheduler=self.settings.scheduler_name)

    def _lost(self) -> None:
        """Another replica may hold the lease now: not one more write. The kubelet restarts
        this process, which comes back as a follower."""
        self.scheduler.metrics.leader.set(0)
        log.error("leader lease lost: exiting at once")
        os._exit(3)

    def _fatal(self, task: str, error: str) -> None:
        """A guarded task failed more often than it may: stop, and exit non-zero."""
        self.failed = True
        self.stop_flag.set()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        if self.http is not None:
            await self.http.start()
            log.info("serving /healthz /readyz /metrics", port=self.settings.http_port)
        # Until the first full view is in (the watched objects, then the informers' lists).
        self.scheduler.intake.collector.relax()
        await self._read_watched()
        for informer in self.informers:
            self.supervisor.spawn(f"informer:{informer.name}", informer.run)
        if any(r.older_versions for r in self.scheduler.framework.watched_resources()):
            self.supervisor.spawn("api-versions", self._watch_versions)
        trimmer = AllocatorTrim()
        self.supervisor.spawn("memory-release", lambda: release_free_memory(trimmer))
        if self.elector is None:
            await self._lead()
        else:
            log.info("running for the leader lease", identity=self.identity)
            self.supervisor.spawn("leader-election", self.elector.run)

    async def stop(self) -> None:
        # SIGTERM and SIGINT, however many, raise the stop flag once and are only logged after
        # (``StopSignals``, in place of kopf's handlers), before and during this shutdown.
        log.info("shutting down: letting binds in flight finish")
        self.supervisor.stand_down()
        if self.leading:
            await self.scheduler.stop()
        if self.elector is not None:
            # After the last write: the other replica may take over at once.
            await self.elector.release()
        await self.supervisor.stop()
        if self.http is not None:
            await self.http.stop()
        await self.api.close()
        # kopf waits on this flag in a task of its own; when kopf stopped for a reason of its
        # own (not a signal, not ``_fatal``) nobody else sets it, and kopf would give that
        # task 5 s before cancelling it.
        self.stop_flag.set()

    async def run(self) -> int:
        quiet_kopf_logs()
        intake = self.scheduler.intake
        declared = self.scheduler.framework.watched_resources()
        self.watched = await resolve_versions(self.api, declared)
        for before, chosen in zip(declared, self.watched, strict=True):
            if before.older_versions:
                log.info("reading", resource=chosen.id, version=chosen.version)
        hooks = OperatorHooks(
            connection=self.connection,
            start=self.start,
            stop=self.stop,
            resources=self.watched,
            on_object=intake.on_object,
        )
        await run_operator(build_registry(hooks), self.stop_flag)
        return 1 if self.failed else 0


def run(settings: Settings) -> int:
    async def main() -> int:
        return await App(settings).run()

    return asyncio.run(main())
