"""Wiring: settings -> API client -> cache, queue, framework, scheduler -> informers, kopf."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import structlog

from koordgang.adapters.feeds import node_feed, pod_feed
from koordgang.adapters.http import HealthServer
from koordgang.adapters.informer import Informer
from koordgang.adapters.kopf_runtime import (
    OperatorHooks,
    build_registry,
    quiet_kopf_logs,
    run_operator,
)
from koordgang.clients.api import KubeApi
from koordgang.clients.config import load_connection
from koordgang.engine.scheduler import Scheduler
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.gangs import GangRegistry

log = structlog.get_logger("koordgang.app")


class App:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.connection = load_connection(settings.kubeconfig)
        self.api = KubeApi(self.connection, pool_size=settings.bind_concurrency + 16)
        gangs = GangRegistry(settings.default_gang_waiting_time)
        self.scheduler = Scheduler(
            settings, self.api, default_framework(settings, gangs), gangs=gangs
        )
        pods, nodes = pod_feed(self.scheduler), node_feed(self.scheduler)
        self.informers = (
            Informer(self.api, "/api/v1/pods", name="pods", sink=pods),
            Informer(self.api, "/api/v1/nodes", name="nodes", sink=nodes),
        )
        self.http: HealthServer | None = None
        if settings.http_port:
            self.http = HealthServer(
                settings.http_host,
                settings.http_port,
                is_alive=self._is_alive,
                is_ready=self.scheduler.ready.is_set,
                render_metrics=self.scheduler.metrics.render,
                render_gangs=self.scheduler.gang_view,
            )
        self.stop_flag = asyncio.Event()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.failed = False
        self._stopping = False

    # -- guarded tasks -----------------------------------------------------------------------

    def _spawn(self, name: str, coro: Coroutine[Any, Any, None]) -> None:
        """Starts a task that must run for the daemon's whole life; if it dies, the daemon
        stops (and exits non-zero) instead of limping on half-blind."""
        task = asyncio.create_task(coro, name=name)
        self._tasks[name] = task
        task.add_done_callback(self._task_ended)

    def _task_ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or self._stopping:
            return
        error = task.exception()
        log.error(
            "essential task ended; stopping",
            task=task.get_name(),
            error=repr(error),
            exc_info=error,
        )
        self.failed = True
        self.stop_flag.set()

    def _is_alive(self) -> bool:
        return all(not t.done() for t in self._tasks.values())

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        if self.http is not None:
            await self.http.start()
            log.info("serving /healthz /readyz /metrics", port=self.settings.http_port)
        for informer in self.informers:
            self._spawn(f"informer:{informer.name}", informer.run())
        self._spawn("scheduling-loop", self.scheduler.run())

    async def stop(self) -> None:
        self._stopping = True
        log.info("shutting down: letting binds in flight finish")
        loop_task = self._tasks.pop("scheduling-loop", None)
        await self.scheduler.stop()
        tasks = list(self._tasks.values())
        if loop_task is not None:
            tasks.append(loop_task)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        if self.http is not None:
            await self.http.stop()
        await self.api.close()
        # kopf waits on this flag in a task of its own; after a signal nobody else sets it,
        # and kopf would give that task 5 s before cancelling it.
        self.stop_flag.set()

    async def run(self) -> int:
        quiet_kopf_logs()
        hooks = OperatorHooks(
            connection=self.connection,
            start=self.start,
            stop=self.stop,
            on_podgroup=self.scheduler.on_podgroup_event,
        )
        await run_operator(build_registry(hooks), self.stop_flag)
        return 1 if self.failed else 0


def run(settings: Settings) -> int:
    async def main() -> int:
        return await App(settings).run()

    return asyncio.run(main())
