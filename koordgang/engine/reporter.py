"""Writes what users read: PodScheduled conditions, Events, and a few annotations.

These writes must never slow binding down, so they go through a small pool of workers, are
coalesced (only the newest report per object and reason is written), and skipped when they
would repeat what the object already says.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

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
#: Reports waiting to be written beyond which informational Events are dropped.
MAX_PENDING = 5_000
#: Burst of Normal Events (``Scheduled``) allowed above their steady rate (a setting).
NORMAL_EVENTS_BURST = 500.0


@dataclass(frozen=True, slots=True)
class Report:
    obj: events.ObjectRef
    #: Event type and reason (``Warning``/``FailedScheduling``, ``Normal``/``Scheduled``).
    event_type: str
    reason: str
    message: str
    #: Condition to set on a pod, if any: (status, reason); its message is ``message``.
    condition: tuple[str, str] | None = None
    #: Annotations to merge into a pod's metadata before the Event.
    annotations: dict[str, str] = field(default_factory=dict)
    #: Written even if the pod got bound meanwhile (Scheduled, timeouts).
    always: bool = False

    @staticmethod
    def for_pod(
        pod: PodInfo,
        event_type: str,
        reason: str,
        message: str,
        *,
        condition: tuple[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        always: bool = False,
    ) -> Report:
        ref = events.ObjectRef("Pod", pod.namespace, pod.name, pod.uid)
        return Report(ref, event_type, reason, message, condition, annotations or {}, always)


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
        busy: Callable[[], bool] = lambda: False,
        normal_events_per_second: float = 100.0,
        workers: int = 4,
    ) -> None:
        self._api = api
        self._component = component
        self._metrics = metrics
        self._is_current = is_current
        self._clock = clock
        self._pending: OrderedDict[tuple[str, str], Report] = OrderedDict()
        #: uid -> reason -> (message, when written): what each object was last told.
        self._last: dict[str, dict[str, tuple[str, float]]] = {}
        self._wakeup = asyncio.Event()
        self._workers = workers
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False
        self._writing: set[str] = set()
        # At full speed the API server accepts about 2,000 writes/s in all, and a Scheduled Event
        # per bound pod would take half of them from binding; past this rate such Events are
        # dropped (and counted), as kube-scheduler's event broadcaster drops them when it falls
        # behind. Warnings are never dropped: they are coalesced per pod instead.
        self._normal_rate = normal_events_per_second
        self._busy = busy
        self._tokens = NORMAL_EVENTS_BURST if normal_events_per_second > 0 else 0.0
        self._tokens_at = clock()

    # -- producers (synchronous, called from the scheduling cycle) ---------------------------

    def _take_token(self) -> bool:
        now = self._clock()
        self._tokens = min(
            NORMAL_EVENTS_BURST if self._normal_rate > 0 else 0.0,
            self._tokens + (now - self._tokens_at) * self._normal_rate,
        )
        self._tokens_at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def report(self, report: Report) -> None:
        if _informational(report) and not self._take_token():
            self._metrics.api_writes.labels("event", "dropped").inc()
            return
        if _informational(report) and len(self._pending) >= MAX_PENDING:
            # A long burst of binds: informational Events are the first thing to give up.
            self._metrics.api_writes.labels("event", "dropped").inc()
            return
        key = (report.obj.uid, report.reason)
        last = self._last.get(report.obj.uid, {}).get(report.reason)
        if (
            last is not None
            and last[0] == report.message
            and self._clock() - last[1] < REPEAT_AFTER
        ):
            return
        self._pending[key] = report
        self._pending.move_to_end(key)
        self._wakeup.set()

    def forget(self, uid: str) -> None:
        """Drops what was remembered of an object that is bound or gone. Reports still
        pending are kept: they are checked again just before writing."""
        self._last.pop(uid, None)

    @property
    def backlog(self) -> int:
        return len(self._pending)

    # -- workers -----------------------------------------------------------------------------

    def start(self) -> None:
        for index in range(self._workers):
            self._tasks.append(asyncio.create_task(self._work(), name=f"reporter-{index}"))

    def _next(self) -> Report | None:
        """The oldest pending report for an object no other worker is writing to: two writes to
        one pod must not race, or an older explanation could land after a newer one. While
        binds are in flight, informational Events wait: they would take the API server's
        capacity from binding (measured: 100 Scheduled Events/s cost 10-15% of throughput)."""
        defer = self._busy()
        for key, report in self._pending.items():
            if key[0] in self._writing or (defer and _informational(report)):
                continue
            return self._pending.pop(key)
        return None

    async def _work(self) -> None:
        while True:
            report = self._next()
            if report is None:
                if self._closing and not self._pending:
                    return
                self._wakeup.clear()
                if self._pending:
                    # Only deferred Events are left: look again when binding may have paused.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wakeup.wait(), timeout=0.2)
                else:
                    await self._wakeup.wait()
                continue
            if not report.always and not self._is_current(report):
                continue
            uid = report.obj.uid
            self._writing.add(uid)
            try:
                await self._write(report)
            finally:
                self._writing.discard(uid)
                if self._pending:
                    self._wakeup.set()

    async def _write(self, report: Report) -> None:
        obj = report.obj
        try:
            if report.annotations and obj.kind == "Pod":
                annotations = dict(report.annotations)
                await with_retries(
                    lambda: pods.patch_annotations(self._api, obj.namespace, obj.name, annotations),
                    attempts=5,
                )
                self._metrics.api_writes.labels("annotation", "ok").inc()
            if report.condition is not None and obj.kind == "Pod":
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
                    lambda: pods.patch_condition(self._api, obj.namespace, obj.name, condition),
                    attempts=3,
                )
                self._metrics.api_writes.labels("condition", "ok").inc()
            await with_retries(
                lambda: events.create_event(
                    self._api,
                    obj,
                    type_=report.event_type,
                    reason=report.reason,
                    message=report.message,
                    component=self._component,
                ),
                attempts=3,
            )
            self._metrics.api_writes.labels("event", "ok").inc()
            self._last.setdefault(obj.uid, {})[report.reason] = (report.message, self._clock())
        except ApiError as error:
            if error.not_found:
                self.forget(obj.uid)
                return
            self._metrics.api_writes.labels("report", "error").inc()
            log.warning(
                "report not written", object=obj.name, reason=report.reason, error=str(error)
            )
        except ApiUnavailable as error:
            self._metrics.api_writes.labels("report", "error").inc()
            log.warning(
                "report not written", object=obj.name, reason=report.reason, error=str(error)
            )

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


def _informational(report: Report) -> bool:
    """A Normal Event that changes nothing on the object (``Scheduled``): nice to have."""
    return report.event_type == "Normal" and report.condition is None and not report.annotations
