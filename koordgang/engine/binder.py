"""Binding: many Binding requests in flight at once, bounded, each with retries.

The scheduling cycle has already *assumed* the pod on its node, so the cache counts it there
while the request is in flight. Every way a bind can end releases or confirms that assumption:
- success: the assumption stays until the informer shows the pod bound;
- the pod is gone (404): forget it;
- conflict (409, bound elsewhere or recreated): read the pod back and trust what it says;
- anything else, after retries: forget the assumption and queue the pod again, with backoff.

Pods that need writes before they bind (devices written into their claims) go as a *batch*:
the writes of the whole batch first (``PreBinder``), then a last check, then the bindings; if a
write fails or the check refuses, what the batch wrote is undone and no pod of it is bound.
A gang with nothing to write gets the same last check, once, when its first binding is about
to go (``_Recheck``): another scheduler may have bound a pod onto its nodes since the cycle
decided, and a refusal sends every member back to the queue, none bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog

from koordgang.clients import pods
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.clients.retry import with_retries
from koordgang.engine.metrics import Metrics
from koordgang.engine.prebinder import Landed, PreBinder
from koordgang.framework.prebind import ObjectWrite, PreBindPlan
from koordgang.model.group_key import ALONE, GroupKey
from koordgang.model.pod import PodInfo

log = structlog.get_logger("koordgang.binder")


class BindOutcome:
    OK = "ok"
    GONE = "gone"
    CONFLICT = "conflict"
    ERROR = "error"
    #: The writes that had to land first did not (or a check refused the batch): not bound.
    PREBIND = "prebind"


@dataclass(frozen=True, slots=True)
class BindRequest:
    pod: PodInfo
    node: str
    attempts: int
    enqueued_at: float
    #: The scheduling group it was placed for (empty for a pod alone), for Unreserve on failure.
    group: GroupKey = ALONE
    #: When the cycle decided to bind it (monotonic; 0: not known).
    decided_at: float = 0.0


class BindListener(Protocol):
    def bind_done(self, request: BindRequest, outcome: str, detail: str) -> None:
        """A bind has ended (in the event loop); ``detail`` says why when it failed."""

    def verify(self, requests: Sequence[BindRequest]) -> dict[str, str]:
        """A batch's writes landed: pod uid -> why it may not bind after all."""


class Binder:
    def __init__(
        self,
        api: KubeApi,
        metrics: Metrics,
        *,
        concurrency: int,
        listener: BindListener,
        clock: Callable[[], float],
        on_idle: Callable[[], None] = lambda: None,
    ) -> None:
        """``on_idle`` is called whenever the last bind in flight has ended (writes that wait
        for binding to pause go out then)."""
        self._api = api
        self._on_idle = on_idle
        self._metrics = metrics
        self._prebinder = PreBinder(api)
        self._limit = max(1, concurrency)
        self._listener = listener
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()
        self._slot_freed = asyncio.Event()
        # A gang submits all its members at once; this keeps the requests themselves within
        # the limit (the rest wait here, not in the HTTP pool where they would time out).
        self._requests = asyncio.Semaphore(self._limit)

    async def warm(self) -> None:
        """Opens as many connections as binds may be in flight, before the first burst: a
        TLS connection cost this process about 2.5 ms of CPU on the bench machine (128: 0.3 s),
        and opening them was about a fifth of the daemon's time at the start of a burst."""
        started = self._clock()
        opened = await self._api.warm_writes(self._limit)
        log.info("bind connections opened", count=opened, seconds=round(self._clock() - started, 3))

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def has_room(self) -> bool:
        return len(self._tasks) < self._limit

    async def wait_for_room(self) -> None:
        while len(self._tasks) >= self._limit:
            self._slot_freed.clear()
            await self._slot_freed.wait()

    def submit(self, request: BindRequest, recheck: _Recheck | None = None) -> None:
        self._track(
            asyncio.create_task(self._bind_one(request, recheck), name=f"bind:{request.pod.key}")
        )

    async def _bind_one(self, request: BindRequest, recheck: _Recheck | None = None) -> None:
        failure = "" if recheck is None else recheck.failure()
        if failure:
            self._metrics.bind_ended(BindOutcome.PREBIND)
            self._listener.bind_done(request, BindOutcome.PREBIND, failure)
            return
        await self._bind(request)

    def submit_batch(self, requests: Sequence[BindRequest], plan: PreBindPlan) -> None:
        """Binds ``requests`` together, after the writes of ``plan`` (see the module's
        docstring); with an empty plan each is bound as ``submit`` binds it, a gang's members
        after one last check of them all."""
        if plan.empty:
            recheck = _Recheck(requests, self._listener) if len(requests) > 1 else None
            for request in requests:
                self.submit(request, recheck)
            return
        name = f"bind-batch:{requests[0].pod.key}+{len(requests) - 1}"
        self._track(asyncio.create_task(self._bind_batch(list(requests), plan), name=name))

    def submit_writes(self, writes: Sequence[ObjectWrite]) -> None:
        """Writes a cycle asked for, binding nobody (claims given back); a failure is logged
        and left: the next attempt looks again."""
        self._track(asyncio.create_task(self._write_only(tuple(writes)), name="writes"))

    async def _write_only(self, writes: tuple[ObjectWrite, ...]) -> None:
        result = await self._prebinder.write(PreBindPlan(writes))
        if result.failure:
            log.info("writes not made", reason=result.failure)

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        self._metrics.binds_in_flight.set(len(self._tasks))
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._metrics.binds_in_flight.set(len(self._tasks))
        self._slot_freed.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("bind task crashed", task=task.get_name(), error=repr(task.exception()))
        if not self._tasks:
            self._on_idle()

    async def _bind_batch(self, requests: list[BindRequest], plan: PreBindPlan) -> None:
        landed: list[Landed] = []
        if plan.refused:
            failure = "; ".join(dict.fromkeys(plan.refused.values()))
        else:
            result = await self._prebinder.write(plan)
            landed, failure = result.landed, result.failure
            if not failure:
                failure = await self._wait(plan, landed)
            if not failure:
                # The writes took a while: what the cache learned meanwhile is asked again.
                refused = self._listener.verify(requests)
                if refused:
                    failure = "; ".join(dict.fromkeys(refused.values()))
        if failure:
            await self._prebinder.undo(landed)
            log.info("batch not bound", pods=len(requests), reason=failure)
            for request in requests:
                self._metrics.bind_ended(BindOutcome.PREBIND)
                self._listener.bind_done(request, BindOutcome.PREBIND, failure)
            return
        # A pod whose binding fails hears of it only after the writes it alone needed are
        # taken back: told earlier, it would be tried again (and could bind with no writes, on
        # the claims as they are) while the undo is still on its way.
        ends = await asyncio.gather(*(self._bind(r, hold_failure=True) for r in requests))
        failed = [
            (request, outcome, detail)
            for request, (outcome, detail) in zip(requests, ends, strict=True)
            if outcome != BindOutcome.OK
        ]
        undone = [r.pod.uid for r, outcome, _ in failed if outcome != BindOutcome.CONFLICT]
        if undone:
            # Not those another pod of the batch, bound now, uses too; nor those of a pod the
            # API server says is bound already (a conflict: our earlier try landed).
            await self._prebinder.undo(landed, only_for=undone)
        for request, outcome, detail in failed:
            self._listener.bind_done(request, outcome, detail)

    @staticmethod
    async def _wait(plan: PreBindPlan, landed: Sequence[Landed]) -> str:
        """Awaits what the plan waits for after its writes (binding conditions); on failure
        the undo is guarded by the versions others wrote meanwhile."""
        for wait in plan.waits:
            outcome = await wait()
            if outcome.failure:
                for one in landed:
                    version = outcome.versions.get(one.target)
                    if version:
                        one.version = version
                return outcome.failure
        return ""

    async def _bind(self, request: BindRequest, *, hold_failure: bool = False) -> tuple[str, str]:
        """Binds one pod and reports how it ended (a failure only if ``hold_failure`` is
        False: the caller reports it then)."""
        pod = request.pod
        outcome, detail = BindOutcome.OK, ""
        await self._requests.acquire()
        started = self._clock()
        try:
            await with_retries(
                lambda: pods.bind(self._api, pod.namespace, pod.name, pod.uid, request.node)
            )
        except ApiError as error:
            if error.not_found:
                outcome, detail = BindOutcome.GONE, error.message
            elif error.conflict:
                outcome, detail = BindOutcome.CONFLICT, error.message
            else:
                outcome, detail = (
                    BindOutcome.ERROR,
                    f"{error.status} {error.reason}: {error.message}",
                )
        except ApiUnavailable as error:
            outcome, detail = BindOutcome.ERROR, str(error)
        finally:
            self._requests.release()
        finished = self._clock()
        self._metrics.bind_ended(outcome)
        if outcome == BindOutcome.OK:
            self._metrics.binding_duration.observe(finished - started)
            if request.decided_at:
                self._metrics.binding_landed.observe(finished - request.decided_at)
            self._metrics.scheduled(finished - request.enqueued_at, request.attempts)
        if outcome == BindOutcome.OK or not hold_failure:
            self._listener.bind_done(request, outcome, detail)
        return outcome, detail

    async def drain(self, timeout: float) -> int:
        """Waits for binds in flight (graceful shutdown); returns how many did not finish."""
        if not self._tasks:
            return 0
        _, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return len(pending)


class _Recheck:
    """The last check of a gang with nothing to write, made once, when the first of its
    bindings is about to go: the verdict holds for every member (all bind, or none)."""

    __slots__ = ("_failure", "_listener", "_requests")

    def __init__(self, requests: Sequence[BindRequest], listener: BindListener) -> None:
        self._requests = tuple(requests)
        self._listener = listener
        self._failure: str | None = None

    def failure(self) -> str:
        """Why the gang may not bind after all ("" if it may)."""
        if self._failure is None:
            refused = self._listener.verify(self._requests)
            self._failure = "; ".join(dict.fromkeys(refused.values()))
            if self._failure:
                log.info("gang not bound", pods=len(self._requests), reason=self._failure)
        return self._failure
