"""Writes what users read: PodScheduled conditions, Events, and a few annotations.

These writes must never slow binding down, so they go through writers of their own (a few
for conditions and explanations, more for informational Events after a burst of binds), are
coalesced (only the newest report per object and reason is written), and skipped when they
would repeat what the object already says. A pod's first "why I wait" is held for
``explain_after`` seconds: most waits are over by then (the members of a gang that a Job
creates one by one wait for the last one), and a bound pod is not told anything; while binds
are in flight it waits up to ``explain_after`` more.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Protocol

import structlog

from koordgang.clients import events, pods
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.clients.retry import with_retries
from koordgang.engine.metrics import Metrics
from koordgang.framework.report import Report

log = structlog.get_logger("koordgang.reporter")

#: The same explanation is written again after this long, so that Events do not age out.
REPEAT_AFTER = 600.0
#: Reports waiting to be written beyond which informational Events are dropped.
MAX_PENDING = 5_000
#: Writers of informational Events alone (``Reporter.event_workers``); the API client's pool
#: has room for their requests besides the binds'.
EVENT_WORKERS = 48
#: Seconds after which a parked event writer looks again at Events deferred while binding.
EVENT_POLL = 1.0
#: Burst of Normal Events (``Scheduled``) allowed above their steady rate (a setting).
NORMAL_EVENTS_BURST = 500.0
#: Objects forgotten lately, kept so that a write queued or in flight when its object was
#: forgotten (a deleted PodGroup's last Event, a bound pod's ``Scheduled``) does not bring
#: back what it was told: uids never come back, and over hours of jobs that memory grew.
FORGOTTEN_KEPT = 20_000


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Relevance(Protocol):
    """Says whether a report still describes the object (a pod bound meanwhile is not told
    it is unschedulable), and whether binding is busy (informational Events wait then)."""

    def is_current(self, report: Report) -> bool: ...

    def binding_busy(self) -> bool: ...


class Reporter:
    def __init__(
        self,
        api: KubeApi,
        component: str,
        metrics: Metrics,
        *,
        relevance: Relevance,
        clock: Callable[[], float],
        normal_events_per_second: float = 100.0,
        workers: int = 4,
        event_workers: int = EVENT_WORKERS,
        explain_after: float = 0.0,
    ) -> None:
        self._api = api
        self._component = component
        self._metrics = metrics
        self._relevance = relevance
        self._clock = clock
        self._pending: OrderedDict[tuple[str, str], Report] = OrderedDict()
        #: Informational Events (``Scheduled``), apart: they wait while binds are in flight,
        #: and a scan for something to write need not step over them.
        self._informational: OrderedDict[tuple[str, str], Report] = OrderedDict()
        #: uid -> reason -> (message, when written): what each object was last told.
        self._last: dict[str, dict[str, tuple[str, float]]] = {}
        self._forgotten: OrderedDict[str, None] = OrderedDict()
        #: (uid, reason) -> when a held first explanation may be written.
        self._explain_after = explain_after
        self._due: dict[tuple[str, str], float] = {}
        self._wakeup = asyncio.Event()
        #: Event writers waiting for work, each on a future of its own: one is woken per
        #: Event that can be written now (``_wake_event_writers``), none while binds are in
        #: flight. A shared flag woke all of them for every bind of a burst, each to find
        #: binding busy and wait again: 0.25 ms of this process's CPU per bound pod.
        self._parked: deque[asyncio.Future[None]] = deque()
        #: Event writers running: while there are any, the other writers leave Events to them.
        self._event_writers = 0
        #: Set while nothing is pending or being written.
        self._idle = asyncio.Event()
        self._idle.set()
        self.workers = workers
        #: Writers of informational Events alone. These wait while binds are in flight, so a
        #: burst of binds leaves one per bound pod behind it; four writers, one request each
        #: in flight, wrote them at about 450/s, a tail twice as long as the burst (5,000 pods
        #: bound in 5 s, their Events written 11 s later; 12 writers: 4.8 s). Like binds, they
        #: need many requests in flight to keep the API server busy; conditions and
        #: explanations keep writers of their own. They are idle coroutines otherwise.
        self.event_workers = event_workers
        self._closing = False
        self._writing: set[str] = set()
        # At full speed the API server accepts about 2,000 writes/s in all, and a Scheduled Event
        # per bound pod would take half of them from binding; past this rate such Events are
        # dropped (and counted), as kube-scheduler's event broadcaster drops them when it falls
        # behind. Warnings are never dropped: they are coalesced per pod instead.
        self._normal_rate = normal_events_per_second
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
        informational = _informational(report)
        if informational and (not self._take_token() or len(self._informational) >= MAX_PENDING):
            # Past their rate, or a long burst of binds: these are the first thing to give up.
            self._metrics.api_writes.labels("event", "dropped").inc()
            return
        key = (report.obj.uid, report.reason)
        last = self._last.get(report.obj.uid, {}).get(report.reason)
        if (
            last is not None
            and report.nominated_node is None
            and last[0] == report.message
            and self._clock() - last[1] < REPEAT_AFTER
            and report.obj.uid not in self._writing
        ):
            # The object says this already: whatever was queued since is older news.
            self._pending.pop(key, None)
            self._informational.pop(key, None)
            self._due.pop(key, None)
            return
        if self._explain_after > 0 and _explains_a_wait(report) and last is None:
            # Held from the first report on: later ones replace it but do not postpone it.
            self._due.setdefault(key, self._clock() + self._explain_after)
        else:
            # What replaces a held explanation (a nomination, say) is news: it goes out at once.
            self._due.pop(key, None)
        queue = self._informational if informational else self._pending
        queue[key] = report
        queue.move_to_end(key)
        self._idle.clear()
        if not informational or not self._event_writers:
            self._wakeup.set()  # with no event writer running, the others write Events too
        elif not self._relevance.binding_busy():
            self._wake_event_writers(len(self._informational))
        # Else the end of the binds in flight wakes them (``binding_idle``).

    def forget(self, uid: str) -> None:
        """Drops what was remembered of an object that is bound or gone. Reports still
        pending are kept: they are checked again just before writing."""
        self._last.pop(uid, None)
        self._forgotten[uid] = None
        if len(self._forgotten) > FORGOTTEN_KEPT:
            self._forgotten.popitem(last=False)

    @property
    def remembered(self) -> int:
        """Objects whose last report is remembered (to skip repeats)."""
        return len(self._last)

    @property
    def backlog(self) -> int:
        return len(self._pending) + len(self._informational)

    # -- workers -----------------------------------------------------------------------------

    def _next(self) -> Report | None:
        """The oldest pending report for an object no other worker is writing to: two writes to
        one pod must not race, or an older explanation could land after a newer one.
        Informational Events only while no event writer runs (``_next_informational``)."""
        writing = self._writing
        now = self._clock()
        busy: bool | None = None  # asked at most once per scan
        for key in self._pending:
            if key[0] in writing:
                continue
            due = self._due.get(key)
            if due is not None and not self._closing:
                if due > now:
                    continue
                # A held explanation that is due gives way to binds in flight for up to
                # ``explain_after`` more: in a burst (a full cluster turning gangs away while
                # it binds others) it would take the API server from them, for news that a
                # second later is as good. It is never held longer, so a steady stream of binds
                # does not keep it back.
                if now < due + self._explain_after:
                    if busy is None:
                        busy = self._relevance.binding_busy()
                    if busy:
                        continue
            self._due.pop(key, None)
            return self._pending.pop(key)
        return None if self._event_writers else self._next_informational()

    def _next_informational(self) -> Report | None:
        """The oldest informational Event for an object nobody is writing to. While binds are
        in flight they wait: they would take the API server's capacity from binding
        (measured: 100 Scheduled Events/s cost 10-15% of throughput)."""
        writing = self._writing
        if self._informational and not self._relevance.binding_busy():
            for key in self._informational:
                if key[0] not in writing:
                    return self._informational.pop(key)
        return None

    async def work(self, events_only: bool = False) -> None:
        """One writer; the daemon runs ``workers`` of them, and ``event_workers`` writing
        informational Events alone (``events_only``), as guarded tasks. Returns once ``close``
        was called and nothing is left to write."""
        if events_only:
            self._event_writers += 1
            try:
                await self._write_events()
            finally:
                self._event_writers -= 1
            return
        while True:
            report = self._next()
            if report is None:
                if not self._pending and not self._informational and not self._writing:
                    self._idle.set()
                waiting = self._left_to_writers()
                if self._closing and not waiting:
                    return
                self._wakeup.clear()
                if waiting:
                    # Only held explanations or deferred Events are left: look again soon.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wakeup.wait(), timeout=0.2)
                else:
                    await self._wakeup.wait()
                continue
            await self._carry_out(report)

    async def _write_events(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            report = self._next_informational()
            if report is None:
                if not self._pending and not self._informational and not self._writing:
                    self._idle.set()
                if self._closing and not self._informational:
                    return
                parked = loop.create_future()
                self._parked.append(parked)
                try:
                    # Woken when an Event can be written; with Events deferred, a look now and
                    # then besides, should the end of the binds in flight go unseen.
                    timeout = EVENT_POLL if self._informational else None
                    await asyncio.wait((parked,), timeout=timeout)
                finally:
                    if not parked.done():
                        parked.cancel()
                        with contextlib.suppress(ValueError):
                            self._parked.remove(parked)
                continue
            await self._carry_out(report)

    def _left_to_writers(self) -> bool:
        """Whether reports wait that are the writers' (not the event writers') to write:
        Events are the event writers' while any runs."""
        return bool(self._pending or (self._informational and not self._event_writers))

    def _wake_event_writers(self, count: int) -> None:
        """Wakes up to ``count`` parked event writers (one per Event waiting: a writer already
        awake takes one too, so at worst one wakes for nothing)."""
        for _ in range(min(count, len(self._parked))):
            parked = self._parked.popleft()
            if not parked.done():
                parked.set_result(None)

    async def _carry_out(self, report: Report) -> None:
        if not report.always and not self._relevance.is_current(report):
            return
        uid = report.obj.uid
        self._writing.add(uid)
        try:
            await self._write(report)
        finally:
            self._writing.discard(uid)
            # A report for this object may have waited for this write to end.
            self._look_again()

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
                nominated = report.nominated_node
                await with_retries(
                    lambda: pods.patch_condition(
                        self._api, obj.namespace, obj.name, condition, nominated_node=nominated
                    ),
                    attempts=3,
                )
                self._metrics.api_writes.labels("condition", "ok").inc()
            if report.event:
                await with_retries(
                    lambda: events.create_event(
                        self._api,
                        obj,
                        type_=report.event_type,
                        reason=report.reason,
                        message=report.message,
                        component=report.component or self._component,
                    ),
                    attempts=3,
                )
                self._metrics.api_writes.labels("event", "ok").inc()
            if obj.uid not in self._forgotten:
                self._last.setdefault(obj.uid, {})[report.reason] = (
                    report.message,
                    self._clock(),
                )
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

    def binding_idle(self) -> None:
        """The last bind in flight has ended: Events deferred meanwhile can go out, and held
        explanations that gave way to binds too."""
        self._look_again()

    def _look_again(self) -> None:
        """Wakes the writers for what waits and can be written now."""
        if self._left_to_writers():
            self._wakeup.set()
        if self._informational and not self._relevance.binding_busy():
            self._wake_event_writers(len(self._informational))

    def nudge(self) -> None:
        """Has every writer look at what waits now, not at its next poll."""
        self._wakeup.set()
        self._wake_event_writers(len(self._parked))

    async def close(self, timeout: float) -> None:
        """Lets the workers write what is pending, for up to ``timeout`` seconds."""
        self._closing = True
        self._wakeup.set()
        self._wake_event_writers(len(self._parked))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout=timeout)


def _explains_a_wait(report: Report) -> bool:
    """PodScheduled=False without a nomination: a pod told why it waits (a nomination from
    preemption is news for the victims' owners and goes out at once)."""
    return (
        report.condition is not None
        and report.condition[0] == "False"
        and report.nominated_node is None
    )


def _informational(report: Report) -> bool:
    """A Normal Event that changes nothing on the object (``Scheduled``): nice to have."""
    return report.event_type == "Normal" and report.condition is None and not report.annotations
