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

from koordgang.clients import events
from koordgang.clients import pods as pod_client
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.engine.binder import Binder, BindOutcome, BindRequest
from koordgang.engine.gang_cycle import GangCycle
from koordgang.engine.metrics import Metrics
from koordgang.engine.podgroup_status import PodGroupStatusWriter
from koordgang.engine.reporter import Report, Reporter
from koordgang.framework.cycle_state import CycleState
from koordgang.framework.runner import Framework
from koordgang.framework.status import Code
from koordgang.model.gang import (
    SCHEDULER_ANNOTATION_PREFIXES,
    ConfigIssue,
    is_timed_out,
    parse_podgroup,
)
from koordgang.model.node import NodeInfo
from koordgang.model.pod import PodInfo, PodParseError, parse_pod
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
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
        gangs: GangRegistry | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.api = api
        self.framework = framework
        self.metrics = metrics or Metrics()
        self.clock = clock
        self.wall = wall
        self.gangs = gangs or GangRegistry(settings.default_gang_waiting_time)
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
            busy=lambda: self.binder.in_flight > 0,
            normal_events_per_second=settings.scheduled_events_per_second,
        )
        self.pods_synced = False
        self.nodes_synced = False
        self.ready = asyncio.Event()
        self._wakeup = asyncio.Event()
        self._move_requested = False
        self._stopping = False
        self._followups: set[asyncio.Task[None]] = set()
        self.gang_cycle = GangCycle(
            cache=self.cache,
            queue=self.queue,
            gangs=self.gangs,
            framework=framework,
            reporter=self.reporter,
            submit_bind=self._submit_bind,
            is_pending=self._wants_scheduling,
            clock=clock,
            wall=wall,
        )
        self.podgroup_status = PodGroupStatusWriter(api, self.gangs, self.metrics)

    # -- informer events ---------------------------------------------------------------------

    def is_ours(self, pod: PodInfo) -> bool:
        return pod.scheduler_name == self.settings.scheduler_name

    def _wants_scheduling(self, pod: PodInfo) -> bool:
        if (
            not self.is_ours(pod)
            or pod.node_name
            or pod.is_terminal
            or pod.is_terminating
            or self.cache.is_assumed(pod.uid)
            or is_timed_out(pod.annotations)
        ):
            return False
        gang = self.gangs.gang_of(pod.uid)
        return gang is None or not gang.timed_out

    def _track_gang(self, pod: PodInfo) -> None:
        """Keeps gang membership current and tells the user about bad gang settings."""
        if not self.is_ours(pod):
            return
        old_gang = self.gangs.gang_of(pod.uid)
        gang = self.gangs.on_pod(pod)
        for changed in (old_gang, gang):
            if changed is not None:
                self.gang_cycle.dirty.add(changed.key)
        # A PodGroup that has not arrived yet is not a mistake: the pod is told it waits.
        if (
            gang is not None
            and not pod.node_name
            and not pod.is_terminal
            and not gang.needs_podgroup()
        ):
            self._report_issues(pod, gang.spec.issues)

    def _explain_if_gang_timed_out(self, pod: PodInfo) -> None:
        """A new member of a timed-out gang (a replacement a Job made) waits for the old ones
        to go; it is told so instead of being left without a word."""
        gang = self.gangs.gang_of(pod.uid)
        if (
            gang is None
            or not gang.timed_out
            or pod.node_name
            or pod.is_terminal
            or is_timed_out(pod.annotations)
        ):
            return
        message = (
            f"gang {gang.key} timed out; this pod will be scheduled once the gang's timed-out "
            "members are deleted"
        )
        self.reporter.report(
            Report.for_pod(
                pod, "Warning", "FailedScheduling", message, condition=("False", "GangTimeout")
            )
        )

    def _report_issues(self, pod: PodInfo, issues: Iterable[ConfigIssue]) -> None:
        messages = [issue.message() for issue in issues]
        if messages:
            # One Event for all of them (reports coalesce per pod and reason), written even if
            # the pod gets bound meanwhile: the settings are still wrong.
            self.reporter.report(
                Report.for_pod(
                    pod, "Warning", "InvalidGangConfig", "; ".join(messages), always=True
                )
            )

    def on_pod_upsert(self, pod: PodInfo) -> None:
        old = self.cache.upsert_pod(pod)
        self._track_gang(pod)
        self._explain_if_gang_timed_out(pod)
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
        before = self.gangs.gang_of(uid)
        was_timed_out = before is not None and before.timed_out
        gang = self.gangs.on_pod_deleted(uid)
        if gang is not None:
            self.gang_cycle.dirty.add(gang.key)
            if was_timed_out and not gang.timed_out:
                # The user deleted the timed-out members: the others get a fresh start.
                now = self.clock()
                for member in gang.pending_members():
                    if self._wants_scheduling(member):
                        self.queue.add(member, now)
                self._request_move()
        old = self.cache.remove_pod(uid)
        self.queue.delete(uid)
        self.reporter.forget(uid)
        if old is not None and old.node_name:
            self._request_move()

    def on_pods_listed(self, pods: Iterable[PodInfo]) -> None:
        """A fresh LIST (at start or after a relist): brings cache and queue in line."""
        listed = list(pods)
        for pod in self.cache.replace_pods(listed):
            self.gangs.on_pod_deleted(pod.uid)
            self.queue.delete(pod.uid)
            self.reporter.forget(pod.uid)
        for pod in listed:
            self._track_gang(pod)
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
        """PodGroups, from kopf: a gang waiting for its PodGroup may start now."""
        podgroup = parse_podgroup(obj)
        if kind == "DELETED":
            self.gangs.on_podgroup_deleted(podgroup.key)
        else:
            gang = self.gangs.on_podgroup(podgroup)
            self.gang_cycle.dirty.add(gang.key)
            ref = events.ObjectRef(
                "PodGroup",
                podgroup.namespace,
                podgroup.name,
                podgroup.uid,
                api_version="scheduling.sigs.k8s.io/v1alpha1",
            )
            if podgroup.issues:
                message = "; ".join(issue.message() for issue in podgroup.issues)
                self.reporter.report(Report(ref, "Warning", "InvalidGangConfig", message))
        log.debug("podgroup event", kind=kind, podgroup=podgroup.key)
        self._request_move()

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
        self.podgroup_status.start()
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
                self._tick(now)
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
            self._schedule_guarded(entry)
            scheduled_in_batch += 1
            if scheduled_in_batch >= _BATCH:
                scheduled_in_batch = 0
                await asyncio.sleep(0)

    def _tick(self, now: float) -> None:
        """Once a second: time out waiting gangs, retry parked pods, refresh status, gauges."""
        if self.gang_cycle.expire(now):
            self._request_move()
        self.queue.flush_unschedulable(now)
        if self.gang_cycle.dirty:
            self.podgroup_status.refresh(self.gang_cycle.dirty)
            self.gang_cycle.dirty.clear()
        self._update_gauges()

    def _schedule_guarded(self, entry: QueuedPod) -> None:
        """A bug met while scheduling one pod must not stop the scheduling of all others: the
        pod goes back with backoff, the error is logged with its traceback and counted."""
        try:
            self.schedule_one(entry)
        except Exception:
            log.exception("scheduling attempt failed", pod=entry.pod.key)
            self.metrics.attempts.labels("error").inc()
            if entry.state is QueueState.IN_FLIGHT:
                self.queue.requeue(entry, self.clock(), unschedulable=False)

    def schedule_one(self, entry: QueuedPod) -> None:
        pod = entry.pod
        started = self.clock()
        current = self.cache.pod(pod.uid)
        if current is None or not self._wants_scheduling(current):
            self.queue.done(entry)
            return
        entry.pod = pod = current
        gang = self.gangs.gang_of(pod.uid)
        if gang is not None and not gang.exempt():
            outcome = self.gang_cycle.schedule(entry, gang)
            label = "scheduled" if outcome.bound else "unschedulable"
            self.metrics.attempts.labels(label).inc()
            self.metrics.attempt_duration.labels(label).observe(self.clock() - started)
            return
        snapshot = Snapshot(self.cache)
        state = CycleState()
        result = self.framework.schedule_pod(state, pod, snapshot)
        finished = self.clock()
        if result.node is not None:
            snapshot.place(pod, result.node)
            snapshot.commit()
            self.queue.done(entry)
            self._submit_bind(pod, result.node.name, entry.attempts, entry.enqueued_at)
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
            Report.for_pod(
                pod, "Warning", "FailedScheduling", message, condition=("False", "Unschedulable")
            )
        )

    # -- after binding -----------------------------------------------------------------------

    def _submit_bind(self, pod: PodInfo, node: str, attempts: int, enqueued_at: float) -> None:
        self.binder.submit(BindRequest(pod, node, attempts, enqueued_at))

    def _bind_done(self, request: BindRequest, outcome: str, detail: str) -> None:
        pod = request.pod
        if outcome == BindOutcome.OK:
            self.reporter.report(
                Report.for_pod(
                    pod,
                    "Normal",
                    "Scheduled",
                    f"Successfully assigned {pod.key} to {request.node}",
                    always=True,
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
                    Report.for_pod(
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
            fresh = parse_pod(raw, annotation_prefixes=SCHEDULER_ANNOTATION_PREFIXES)
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
        if report.obj.kind != "Pod":
            return True
        uid = report.obj.uid
        pod = self.cache.pod(uid)
        if pod is None or pod.node_name or pod.is_terminal:
            return False
        if not self.cache.is_assumed(uid):
            return True
        # Assumed: either a gang reservation (still waiting: explain) or a bind in flight
        # (about to be bound: a "not scheduled" condition now would contradict the binding).
        gang = self.gangs.gang_of(uid)
        return gang is not None and uid in gang.reserved

    def gang_view(self) -> list[dict[str, Any]]:
        """Every gang, for people: its group, mode, members created/placed/bound, and why it
        waits (served at /gangs, printed by `koordgang gangs`)."""
        view = []
        for gang in sorted(self.gangs.gangs(), key=lambda g: g.key):
            spec = gang.spec
            members = list(gang.live_members())
            view.append(
                {
                    "gang": gang.key,
                    "group": list(spec.groups),
                    "mode": spec.mode.value,
                    "minAvailable": spec.min_available,
                    "totalNumber": spec.total_number,
                    "created": len(members),
                    "placed": sum(1 for p in members if self.cache.node_of(p.uid) is not None),
                    "bound": sum(1 for p in members if p.node_name),
                    "state": gang.state.value,
                    "waitingFor": "" if gang.satisfied else gang.last_message,
                }
            )
        return view

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
        await self.podgroup_status.close(timeout=2.0)
        log.info("scheduler stopped")
