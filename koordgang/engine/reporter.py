"""Writes what users read: PodScheduled conditions and Events.

These writes must never slow binding down, so they go through a small pool of workers, are
coalesced per pod (only the newest explanation of a pod is written), and skipped when they would
say what the pod already says.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from koordgang.clients import events, pods
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.clients.retry import with_retries
from koordgang.engine.metrics import Metrics
from koordgang.model.pod import PodInfo

log = structlog.get_logger("koordgang.reporter")

#: The same explanation is written again after this long, so that Events do not age out.
REPEAT_AFTER = 600.0


@dataclass(frozen=True, slots=True)
class Report:
    pod: PodInfo
    #: Event type and reason (``Warning``/``FailedScheduling``, ``Normal``/``Scheduled``).
    event_type: str
    reason: str
    message: str
    #: Condition to set on the pod, if any: (status, reason); the message is ``message``.
    condition: tuple[str, str] | None = None


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Reporter:
    def __init__(
        self,
        api: KubeApi,
        component: str,
        metrics: Metrics,
        *,
        is_current: Callable[[Report], bool],
        clock: Callable[[], float],
        workers: int = 4,
    ) -> None:
        self._api = api
        self._component = component
        self._metrics = metrics
        self._is_current = is_current
        self._clock = clock
        self._pending: OrderedDict[str, Report] = OrderedDict()
        self._last: dict[str, tuple[str, float]] = {}
        self._wakeup = asyncio.Event()
        self._workers = workers
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False
        self._busy = 0

    # -- producers (synchronous, called from the scheduling cycle) ---------------------------

    def report(self, report: Report) -> None:
        uid = report.pod.uid
        last = self._last.get(uid)
        key = f"{report.reason}\x00{report.message}"
        if last is not None and last[0] == key and self._clock() - last[1] < REPEAT_AFTER:
            return
        self._pending[uid] = report
        self._pending.move_to_end(uid)
        self._wakeup.set()

    def forget(self, uid: str) -> None:
        """Drops what was remembered of a pod that is bound or gone. A report still pending is
        kept: it is checked again just before writing."""
        self._last.pop(uid, None)

    # -- workers -----------------------------------------------------------------------------

    def start(self) -> None:
        for index in range(self._workers):
            self._tasks.append(asyncio.create_task(self._work(), name=f"reporter-{index}"))

    async def _work(self) -> None:
        while True:
            while not self._pending:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
            _, report = self._pending.popitem(last=False)
            if not self._is_current(report):
                continue
            self._busy += 1
            try:
                await self._write(report)
            finally:
                self._busy -= 1

    async def _write(self, report: Report) -> None:
        pod = report.pod
        try:
            if report.condition is not None:
                status, reason = report.condition
                condition = {
                    "type": "PodScheduled",
                    "status": status,
                    "reason": reason,
                    "message": report.message,
                    "lastTransitionTime": _now(),
                    "lastProbeTime": None,
                }
                await with_retries(
                    lambda: pods.patch_condition(self._api, pod.namespace, pod.name, condition),
                    attempts=3,
                )
                self._metrics.api_writes.labels("condition", "ok").inc()
            ref = events.ObjectRef("Pod", pod.namespace, pod.name, pod.uid)
            await with_retries(
                lambda: events.create_event(
                    self._api,
                    ref,
                    type_=report.event_type,
                    reason=report.reason,
                    message=report.message,
                    component=self._component,
                ),
                attempts=3,
            )
            self._metrics.api_writes.labels("event", "ok").inc()
            self._last[pod.uid] = (f"{report.reason}\x00{report.message}", self._clock())
        except ApiError as error:
            if error.not_found:
                self._last.pop(pod.uid, None)
                return
            self._metrics.api_writes.labels("report", "error").inc()
            log.warning("report not written", pod=pod.key, reason=report.reason, error=str(error))
        except ApiUnavailable as error:
            self._metrics.api_writes.labels("report", "error").inc()
            log.warning("report not written", pod=pod.key, reason=report.reason, error=str(error))

    async def close(self, timeout: float) -> None:
        """Writes what is pending (for up to ``timeout`` seconds), then stops the workers."""
        self._closing = True
        self._wakeup.set()
        if self._tasks:
            _, still = await asyncio.wait(self._tasks, timeout=timeout)
            for task in still:
                task.cancel()
            await asyncio.gather(*still, return_exceptions=True)
        self._tasks.clear()
