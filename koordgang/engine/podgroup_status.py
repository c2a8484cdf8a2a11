"""Keeps each PodGroup's status current: phase and member counts, written when they change."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterable
from functools import partial
from typing import Any

import structlog

from koordgang.clients import podgroups
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.clients.retry import with_retries
from koordgang.engine.metrics import Metrics
from koordgang.plugins.coscheduling.status import podgroup_status
from koordgang.state.gangs import GangRegistry

log = structlog.get_logger("koordgang.podgroups")


class PodGroupStatusWriter:
    def __init__(self, api: KubeApi, gangs: GangRegistry, metrics: Metrics) -> None:
        self._api = api
        self._gangs = gangs
        self._metrics = metrics
        self._written: dict[str, dict[str, Any]] = {}
        self._pending: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    def refresh(self, keys: Iterable[str]) -> None:
        """Recomputes the status of these gangs; queues a write where it changed."""
        for key in keys:
            gang = self._gangs.get(key)
            if gang is None or gang.podgroup is None:
                self._written.pop(key, None)
                continue
            status = podgroup_status(gang)
            if self._written.get(key) != status:
                self._pending[key] = status
                self._wakeup.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._work(), name="podgroup-status")

    async def _work(self) -> None:
        while True:
            while not self._pending:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
            key, status = self._pending.popitem(last=False)
            namespace, name = key.split("/", 1)
            try:
                await with_retries(
                    partial(podgroups.patch_status, self._api, namespace, name, status), attempts=3
                )
                self._written[key] = status
                self._metrics.api_writes.labels("podgroup-status", "ok").inc()
            except ApiError as error:
                if not error.not_found:
                    log.warning("PodGroup status not written", podgroup=key, error=str(error))
                    self._metrics.api_writes.labels("podgroup-status", "error").inc()
            except ApiUnavailable as error:
                log.warning("PodGroup status not written", podgroup=key, error=str(error))

    async def close(self, timeout: float) -> None:
        self._closing = True
        self._wakeup.set()
        if self._task is not None:
            done, _ = await asyncio.wait({self._task}, timeout=timeout)
            if not done:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
