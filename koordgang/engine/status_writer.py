"""Keeps custom resources' status current (PodGroup phase and counts): written when it changed,
one write at a time, newest status per object, off the scheduling path."""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

import structlog

from koordgang.clients import custom
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.clients.retry import with_retries
from koordgang.engine.metrics import Metrics
from koordgang.framework.report import StatusUpdate

log = structlog.get_logger("koordgang.status")

_Key = tuple[str, str, str, str]


class StatusWriter:
    def __init__(self, api: KubeApi, metrics: Metrics) -> None:
        self._api = api
        self._metrics = metrics
        self._written: dict[_Key, dict[str, Any]] = {}
        self._pending: OrderedDict[_Key, StatusUpdate] = OrderedDict()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False

    def submit(self, updates: Iterable[StatusUpdate]) -> None:
        """Queues the writes of statuses that differ from what was last written."""
        for update in updates:
            if self._written.get(update.key) == update.status and _agrees(
                update.observed, update.status
            ):
                self._pending.pop(update.key, None)
                continue
            self._pending[update.key] = update
            self._idle.clear()
            self._wakeup.set()

    async def work(self) -> None:
        """The writer; returns once ``close`` was called and nothing is left to write."""
        while True:
            while not self._pending:
                self._idle.set()
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
            key, update = self._pending.popitem(last=False)
            kind = update.plural
            try:
                await with_retries(
                    partial(
                        custom.patch_status,
                        self._api,
                        update.api_version,
                        update.plural,
                        update.namespace,
                        update.name,
                        update.status,
                        subresource=update.subresource,
                    ),
                    attempts=3,
                )
                self._written[key] = update.status
                self._metrics.api_writes.labels(f"{kind}-status", "ok").inc()
            except ApiError as error:
                if error.not_found:
                    self._written.pop(key, None)
                else:
                    log.warning(
                        "status not written", object=f"{kind}/{update.name}", error=str(error)
                    )
                    self._metrics.api_writes.labels(f"{kind}-status", "error").inc()
            except ApiUnavailable as error:
                log.warning("status not written", object=f"{kind}/{update.name}", error=str(error))

    async def close(self, timeout: float) -> None:
        self._closing = True
        self._wakeup.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout=timeout)


def _agrees(observed: Mapping[str, Any] | None, status: Mapping[str, Any]) -> bool:
    """Whether the object as last read shows ``status`` (unknown counts as yes)."""
    if observed is None:
        return True
    # A key the server does not keep (a CRD without it prunes it) cannot disagree; an
    # object with none of the keys was overwritten.
    present = [key for key in status if key in observed]
    return bool(present) and all(observed[key] == status[key] for key in present)
