"""The scheduling loop: pop -> cycle (synchronous) -> assume -> bind (asynchronous).

Informer events arrive through the ``on_*`` methods, which are synchronous and run on the same
event loop as the cycle: a cycle never sees the cache change under it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import structlog

from koordgang.clients import pods as pod_client
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.engine.binder import Binder, BindOutcome, BindRequest
from koordgang.engine.metrics import Metrics
from koordgang.engine.reporter import Report, Reporter
from koordgang.framework.cycle_state import CycleState
from koordgang.framework.runner import Framework
from koordgang.framework.status import Code
from koordgang.model.node import NodeInfo
from koordgang.model.pod import PodInfo, PodParseError, parse_pod
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.queue import QueuedPod, QueueState, SchedulingQueue
from koordgang.state.snapshot import Snapshot

log = structlog.get_logger("koordgang.scheduler")

#: How often parked pods are looked at even without a cluster event (seconds).
_IDLE_TICK = 1.0
#: Pods scheduled between two yields to the event loop (lets informer events and bind replies in).
_BATCH = 16


class Scheduler:
    def __init__(
        self,
        settings: Settings,
        api: KubeApi,
        framework: Framework,
        *,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.api = api
        self.framework = framework
        self.metrics = metrics or Metrics()
        self.clock = clock
        self.cache = SchedulerCache()
        self.queue = SchedulingQueue(
            framework.sort_key,
            initial_backoff=settings.initial_backoff,
            max_backoff=settings.max_backoff,
            unschedulable_retry_interval=settings.unschedulable_retry_interval,
        )
        self.binder = Binder(
            api,
            self.metrics,
            concurrency=settings.bind_concurrency,
            on_done=self._bind_done,
            clock=clock,
        )
        self.reporter = Reporter(
            api,
            settings.scheduler_name,
            self.metrics,
            is_current=self._report_is_current,
            clock=clock,
        )
        self.pods_synced = False
        self.nodes_synced = False
        self.ready = asyncio.Event()
        self._wakeup = asyncio.Event()
        self._move_requested = False
        self._stopping = False
        self._followups: set[asyncio.Task[None]] = set()
        self.podgroups: dict[str, dict[str, Any]] = {}

    # -- informer events ---------------------------------------------------------------------

    def is_ours(self, pod: PodInfo) -> bool:
        return pod.scheduler_name == self.settings.scheduler_name

    def _wants_scheduling(self, pod: PodInfo) -> bool:
        return (
            self.is_ours(pod)
            and not pod.node_name
            and not pod.is_terminal
            and not pod.is_terminating
            and not self.cache.is_assumed(pod.uid)
        )

    def on_pod_upsert(self, pod: PodInfo) -> None:
        old = self.cache.upsert_pod(pod)
        if self._wants_scheduling(pod):
            self.queue.add(pod, self.clock())
            self._wake()
        else:
            self.queue.delete(pod.uid)
            if pod.node_name:
                self.reporter.forget(pod.uid)
        if old is not None and old.node_name and not old.is_terminal and pod.is_terminal:
            self._request_move()

    def on_pod_delete(self, uid: str) -> None:
        old = self.cache.remove_pod(uid)
        self.queue.delete(uid)
        self.reporter.forget(uid)
        if old is not None and old.node_name:
            self._request_move()

    def on_pods_listed(self, pods: Iterable[PodInfo]) -> None:
        """A fresh LIST (at start or after a relist): brings cache and queue in line."""
        listed = list(pods)
        for pod in self.cache.replace_pods(listed):
            self.queue.delete(pod.uid)
            self.reporter.forget(pod.uid)
        now = self.clock()
        for pod in listed:
            if self._wants_scheduling(pod):
                self.queue.add(pod, now)
            elif pod.uid in self.queue:
                self.queue.delete(pod.uid)
        self.pods_synced = True
        self._request_move()
        self._check_ready()

    def on_pod_invalid(self, obj: dict[str, object], error: PodParseError) -> None:
        """One of our pods has a spec we cannot read: explain it on the pod; never crash."""
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        log.warning(
            "pod cannot be scheduled: invalid spec",
            pod=f"{meta.get('namespace')}/{meta.get('name')}",
            error=str(error),
        )

    def on_node_upsert(self, node: NodeInfo) -> None:
        if self.cache.upsert_node(node):
            self._request_move()

    def on_node_delete(self, name: str) -> None:
        self.cache.remove_node(name)

    def on_nodes_listed(self, nodes: Iterable[NodeInfo]) -> None:
        self.cache.replace_nodes(nodes)
        self.nodes_synced = True
        self._request_move()
        self._check_ready()

    def on_podgroup_event(self, kind: str, obj: dict[str, Any]) -> None:
        """PodGroups, from kopf. Kept by namespace/name; gang scheduling reads them."""
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if kind == "DELETED":
            self.podgroups.pop(key, None)
        else:
            self.podgroups[key] = obj
        log.debug("podgroup event", kind=kind, podgroup=key)

    def _check_ready(self) -> None:
        if self.pods_synced and self.nodes_synced and not self.ready.is_set():
            log.info(
                "cache synced",
                nodes=len(self.cache.nodes()),
                pods=self.cache.pod_count(),
                pending=len(self.queue),
            )
            self.ready.set()
            self._wake()

    def _request_move(self) -> None:
        self._move_requested = True
        self._wake()

    def _wake(self) -> None:
        self._wakeup.set()

    # -- the loop ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Schedules until ``stop()``; starts only once pods and nodes have been listed."""
        self.reporter.start()
        await self.ready.wait()
        log.info("scheduling loop started", scheduler=self.settings.scheduler_name)
        self._update_gauges()
        last_flush = self.clock()
        scheduled_in_batch = 0
        while not self._stopping:
            now = self.clock()
            if self._move_requested:
                self._move_requested = False
                self.queue.move_all_to_active_or_backoff(now)
            if now - last_flush >= _IDLE_TICK:
                self.queue.flush_unschedulable(now)
                self._update_gauges()
                last_flush = now
            if not self.binder.has_room():
                await self.binder.wait_for_room()
                continue
            entry = self.queue.pop(now)
            if entry is None:
                scheduled_in_batch = 0
                wait = self.queue.next_wakeup(now)
                timeout = _IDLE_TICK if wait is None else min(wait, _IDLE_TICK)
                self._wakeup.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wakeup.wait(), timeout=max(timeout, 0.001))
                continue
            self.schedule_one(entry)
            scheduled_in_batch += 1
            if scheduled_in_batch >= _BATCH:
                scheduled_in_batch = 0
                await asyncio.sleep(0)

    def schedule_one(self, entry: QueuedPod) -> None:
        pod = entry.pod
        started = self.clock()
        current = self.cache.pod(pod.uid)
        if current is None or not self._wants_scheduling(current):
            self.queue.done(entry)
            return
        snapshot = Snapshot(self.cache)
        state = CycleState()
        result = self.framework.schedule_pod(state, pod, snapshot)
        finished = self.clock()
        if result.node is not None:
            snapshot.place(pod, result.node)
            snapshot.commit()
            self.queue.done(entry)
            self.binder.submit(
                BindRequest(pod, result.node.name, entry.attempts, entry.enqueued_at)
            )
            self.metrics.attempts.labels("scheduled").inc()
            self.metrics.attempt_duration.labels("scheduled").observe(finished - started)
            return
        status = result.status
        is_error = status.code is Code.ERROR
        self.queue.requeue(entry, finished, unschedulable=not is_error)
        result_label = "error" if is_error else "unschedulable"
        self.metrics.attempts.labels(result_label).inc()
        self.metrics.attempt_duration.labels(result_label).observe(finished - started)
        message = status.message() or result.diagnosis.message()
        self.reporter.report(
            Report(
                pod, "Warning", "FailedScheduling", message, condition=("False", "Unschedulable")
            )
        )

    # -- after binding -----------------------------------------------------------------------

    def _bind_done(self, request: BindRequest, outcome: str, detail: str) -> None:
        pod = request.pod
        if outcome == BindOutcome.OK:
            self.reporter.report(
                Report(
                    pod, "Normal", "Scheduled", f"Successfully assigned {pod.key} to {request.node}"
                )
            )
            return
        if outcome == BindOutcome.GONE:
            log.info("pod gone before binding", pod=pod.key, node=request.node)
            self.cache.forget(pod.uid)
            self._request_move()
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
        log.warning("binding failed", pod=pod.key, node=request.node, error=detail)
        self.cache.forget(pod.uid)
        self._request_move()
        if self.cache.pod(pod.uid) is not None and not self._stopping:
            current = self.cache.pod(pod.uid) or pod
            if self._wants_scheduling(current):
                self.queue.readd_after_failure(current, self.clock(), request.attempts)
                self.reporter.report(
                    Report(
                        current,
                        "Warning",
                        "FailedScheduling",
                        f"Binding rejected: {detail}",
                        condition=("False", "SchedulerError"),
                    )
                )

    async def _reconcile_after_conflict(self, request: BindRequest) -> None:
        pod = request.pod
        try:
            raw = await pod_client.get(self.api, pod.namespace, pod.name)
            fresh = parse_pod(raw)
        except (ApiError, ApiUnavailable, PodParseError) as error:
            log.info("pod could not be read back after a conflict", pod=pod.key, error=str(error))
            self.cache.forget(pod.uid)
            self._request_move()
            return
        if fresh.uid == pod.uid:
            self.cache.upsert_pod(fresh)  # bound: counts on its real node from now on
        self.cache.forget(pod.uid)
        self._request_move()
        if fresh.uid == pod.uid and self._wants_scheduling(fresh):
            self.queue.readd_after_failure(fresh, self.clock(), request.attempts)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._followups.add(task)
        task.add_done_callback(self._followups.discard)

    def _report_is_current(self, report: Report) -> bool:
        """Explanations for a pod that got bound or deleted meanwhile are not written."""
        if report.reason == "Scheduled":
            return True
        pod = self.cache.pod(report.pod.uid)
        return pod is not None and self._wants_scheduling(pod)

    def _update_gauges(self) -> None:
        depths = self.queue.depths()
        for state in (QueueState.ACTIVE, QueueState.BACKOFF, QueueState.UNSCHEDULABLE):
            self.metrics.queue_depth.labels(state.value).set(depths[state])
        self.metrics.cache_size.labels("nodes").set(len(self.cache.nodes()))
        self.metrics.cache_size.labels("pods").set(self.cache.pod_count())

    # -- shutdown ----------------------------------------------------------------------------

    async def stop(self, grace: float | None = None) -> None:
        """Stops taking pods, lets binds in flight finish, writes pending reports."""
        self._stopping = True
        self._wake()
        grace = self.settings.shutdown_grace if grace is None else grace
        unfinished = await self.binder.drain(grace)
        if unfinished:
            log.warning("binds cut off by shutdown", count=unfinished)
        if self._followups:
            await asyncio.wait(set(self._followups), timeout=5)
        await self.reporter.close(timeout=min(5.0, grace))
        log.info("scheduler stopped")
