"""What happens when a bind ends. Every way it can end releases or confirms the assumption the
cycle made:
- success: a ``Scheduled`` Event; the assumption stays until the informer shows the pod bound;
- the pod is gone (404): forget it;
- conflict (409: bound elsewhere, or deleted and recreated): read the pod back and trust it;
- anything else, after retries: forget, tell the pod, and queue it again with backoff; so
  too when the writes a batch needed before binding did not land (``prebind``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any

import structlog

from koordgang.clients import pods as pod_client
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.engine.binder import BindOutcome, BindRequest
from koordgang.engine.metrics import Metrics
from koordgang.engine.parts import EnginePart, EngineParts
from koordgang.engine.watch_lag import WatchLag
from koordgang.framework.report import Report
from koordgang.framework.results import UnreserveReason
from koordgang.model.pod import PodInfo, PodParseError, parse_pod
from koordgang.state.snapshot import Placement

log = structlog.get_logger("koordgang.binder")


class BindOutcomes(EnginePart):
    def __init__(
        self, parts: EngineParts, api: KubeApi, metrics: Metrics, watch_lag: WatchLag
    ) -> None:
        super().__init__(parts)
        self._api = api
        self._metrics = metrics
        self._watch_lag = watch_lag
        self._followups: set[asyncio.Task[None]] = set()
        self.stopping = False

    def verify(self, requests: Sequence[BindRequest]) -> dict[str, str]:
        return self._framework.run_verify([Placement(r.pod, r.node) for r in requests])

    def bind_done(self, request: BindRequest, outcome: str, detail: str) -> None:
        pod = request.pod
        if outcome == BindOutcome.OK:
            current = self._cache.pod(pod.uid)
            self._watch_lag.landed(pod.uid, seen=current is not None and bool(current.node_name))
            self._reporter.report(
                Report.for_pod(
                    pod,
                    "Normal",
                    "Scheduled",
                    f"Successfully assigned {pod.key} to {request.node}",
                    always=True,
                )
            )
            return
        self._framework.run_unreserve(
            request.group, [Placement(pod, request.node)], UnreserveReason.BIND_FAILED
        )
        if outcome == BindOutcome.GONE:
            log.info("pod gone before binding", pod=pod.key, node=request.node)
            self._release(request)
            return
        if outcome == BindOutcome.CONFLICT:
            # Bound meanwhile (by us in an earlier try whose reply was lost, or by someone
            # else), or deleted and recreated: the pod as it is now decides.
            log.info(
                "binding conflict; reading the pod back",
                pod=pod.key,
                node=request.node,
                detail=detail,
            )
            self._spawn(self._reconcile_after_conflict(request), f"reconcile:{pod.key}")
            return
        if outcome == BindOutcome.PREBIND:
            log.info(
                "not bound: writes or checks before binding failed", pod=pod.key, reason=detail
            )
            message = f"Binding given up: {detail}"
        else:
            log.warning("binding failed", pod=pod.key, node=request.node, error=detail)
            message = f"Binding rejected: {detail}"
        self._release(request)
        current = self._cache.pod(pod.uid)
        if current is not None and not self.stopping and self._pending.is_pending(current):
            self._queue.readd_after_failure(current, self._clock(), request.attempts)
            self._reporter.report(Report.unschedulable(current, message, "SchedulerError"))

    def _release(self, request: BindRequest) -> None:
        self._cache.forget(request.pod.uid)
        self._signals.request_move()

    async def _reconcile_after_conflict(self, request: BindRequest) -> None:
        pod = request.pod
        try:
            raw = await pod_client.get(self._api, pod.namespace, pod.name)
            fresh = parse_pod(raw)
        except (ApiError, ApiUnavailable, PodParseError) as error:
            log.info("pod could not be read back after a conflict", pod=pod.key, error=str(error))
            self._release(request)
            return
        if fresh.uid == pod.uid:
            self._cache.upsert_pod(fresh)  # bound: counts on its real node from now on
            if fresh.node_name and fresh.node_name != request.node:
                self._bound_by_another(fresh, request.node)
        self._release(request)
        if fresh.uid == pod.uid and self._pending.is_pending(fresh):
            self._queue.readd_after_failure(fresh, self._clock(), request.attempts)

    def _bound_by_another(self, pod: PodInfo, ours: str) -> None:
        """Another binder got there first: a second scheduler answers to this pod's name (or a
        user bound it by hand). It is told and counted, not fought over: the pod stays where
        it was bound."""
        message = (
            f"bound to {pod.node_name} by another binder while {pod.scheduler_name} chose "
            f"{ours}: run one scheduler per schedulerName ({pod.scheduler_name!r} answers here)"
        )
        log.warning("pod bound by another binder", pod=pod.key, node=pod.node_name, ours=ours)
        self._metrics.binds_taken.inc()
        self._reporter.report(
            Report.for_pod(pod, "Warning", "BoundByAnotherScheduler", message, always=True)
        )

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._followups.add(task)
        task.add_done_callback(self._followup_done)

    def _followup_done(self, task: asyncio.Task[None]) -> None:
        self._followups.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("follow-up failed", task=task.get_name(), exc_info=task.exception())

    async def drain(self, timeout: float) -> None:
        if self._followups:
            await asyncio.wait(set(self._followups), timeout=timeout)
