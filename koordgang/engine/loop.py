"""The scheduling loop: pop a pod, decide about its group in one synchronous cycle, then act on
the outcome (bind, hold, or park the pods with an explanation). Binding and writes happen in
other tasks; the loop only waits when there is nothing to do, or no room for another bind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from koordgang.engine.binder import Binder, BindRequest
from koordgang.engine.evictor import Eviction, Evictor
from koordgang.engine.held_room import HeldRoom
from koordgang.engine.intake import Intake
from koordgang.engine.metrics import Metrics
from koordgang.engine.parts import EnginePart, EngineParts
from koordgang.engine.status_writer import StatusWriter
from koordgang.framework.cycle import CycleOutcome, run_cycle
from koordgang.framework.group import SchedulingGroup
from koordgang.framework.report import Report, StatusUpdate
from koordgang.framework.results import UnreserveReason
from koordgang.framework.status import Code
from koordgang.model.pod import PodInfo
from koordgang.state.queue import QueuedPod, QueueState
from koordgang.state.snapshot import Placement, Snapshot

log = structlog.get_logger("koordgang.scheduler")

#: How often parked pods, PodGroup statuses and gauges are looked at (seconds).
IDLE_TICK = 1.0
#: Groups scheduled between two yields to the event loop (lets informer events and replies in).
BATCH = 16


class SchedulingLoop(EnginePart):
    def __init__(
        self,
        parts: EngineParts,
        *,
        intake: Intake,
        binder: Binder,
        evictor: Evictor,
        status_writer: StatusWriter,
        metrics: Metrics,
        statuses: Callable[[], list[StatusUpdate]],
        held: HeldRoom,
    ) -> None:
        super().__init__(parts)
        #: The statuses of custom objects that may have changed (the scheduler's answer).
        self._statuses = statuses
        self._intake = intake
        self._held = held
        self._binder = binder
        self._evictor = evictor
        self._nominations = parts.framework.nominations
        self._status_writer = status_writer
        self._metrics = metrics
        self._stopping = False
        self._last_tick = self._clock()

    # -- running -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Schedules until ``stop()``; starts only once pods and nodes have been listed."""
        await self._intake.ready.wait()
        log.info("scheduling loop started", schedulers=sorted(self._pending.names))
        self._update_gauges()
        while not self._stopping:
            if not self._binder.has_room():
                await self._binder.wait_for_room()
                continue
            if self.step(BATCH) == 0:
                await self._signals.wait(self._idle_wait())
            else:
                await asyncio.sleep(0)  # let informer events and bind replies in

    def stop(self) -> None:
        self._stopping = True
        self._signals.wake()

    def step(self, limit: int) -> int:
        """One round: moves and timeouts due now, then up to ``limit`` groups scheduled (fewer
        if the queue runs dry or binding is full). Returns how many groups were scheduled."""
        now = self._clock()
        if self._signals.take_move():
            self._queue.move_all_to_active_or_backoff(now)
        self.expire(now)
        if now - self._last_tick >= IDLE_TICK:
            self.tick(now)
        done = 0
        while done < limit and self._binder.has_room() and not self._stopping:
            entry = self._queue.pop(now)
            if entry is None:
                break
            self._schedule_guarded(entry)
            done += 1
        return done

    def _idle_wait(self) -> float:
        now = self._clock()
        waits = [IDLE_TICK - (now - self._last_tick)]
        backoff = self._queue.next_wakeup(now)
        if backoff is not None:
            waits.append(backoff)
        deadline = self._waiting.next_deadline()
        if deadline is not None:
            waits.append(deadline - now)
        return max(0.0, min(waits))

    def tick(self, now: float) -> None:
        """Once a second: retry long-parked pods, publish custom resource statuses, gauges."""
        self._last_tick = now
        self._queue.flush_unschedulable(now)
        self._status_writer.submit(self._statuses())
        self._update_gauges()

    def expire(self, now: float) -> None:
        """Groups whose held placements reached their deadline give them up, at that moment;
        room guessed for other schedulers' pods they did not come to place is free."""
        if self._held.release_expired(now):
            self._signals.request_move()
        if self._cache.expire_in_flight():
            self._signals.request_move()

    # -- one group -----------------------------------------------------------------------------

    def _schedule_guarded(self, entry: QueuedPod) -> None:
        """A bug met while scheduling one group must not stop the scheduling of all others: its
        pods go back with backoff, the error is logged with its traceback and counted."""
        members: dict[str, QueuedPod] = {entry.pod.uid: entry}
        try:
            self.schedule(entry, members)
        except Exception:
            log.exception("scheduling attempt failed", pod=entry.pod.key)
            profile = entry.pod.scheduler_name or self._metrics.profile
            self._metrics.attempts.labels("error", profile).inc()
            now = self._clock()
            for queued in members.values():
                if queued.state is QueueState.IN_FLIGHT:
                    self._queue.requeue(queued, now, unschedulable=False)

    def schedule(self, entry: QueuedPod, members: dict[str, QueuedPod]) -> None:
        """Decides about ``entry``'s group; ``members`` collects every pod taken out of the
        queue for it (so that a failure can put them all back)."""
        started = self._clock()
        current = self._cache.pod(entry.pod.uid)
        if current is None or not self._pending.is_pending(current):
            self._queue.done(entry)
            return
        entry.pod = pod = current
        others = self._framework.group_members(pod)
        pending = None
        if others is not None:
            for other in others:
                taken = self._queue.take(other.uid)
                if taken is not None:
                    members[other.uid] = taken
            pending = [members[uid].pod for uid in members if uid != pod.uid]
        group = self._framework.build_group(pod, pending)
        self._release_nominations(group)
        outcome = run_cycle(self._framework, group, Snapshot(self._cache), started)
        self._apply(outcome, members, started)
        result = "scheduled" if outcome.bind or outcome.allow_waiting else "unschedulable"
        if outcome.status.code is Code.ERROR:
            result = "error"
        self._metrics.attempt(result, self._clock() - started, pod.scheduler_name)

    def _apply(self, outcome: CycleOutcome, members: dict[str, QueuedPod], now: float) -> None:
        group = outcome.group
        requests: list[BindRequest] = []
        decided = self._clock()
        for placement in outcome.bind:
            queued = members.pop(placement.pod.uid)
            self._queue.done(queued)
            requests.append(
                BindRequest(
                    placement.pod,
                    placement.node_name,
                    queued.attempts,
                    queued.enqueued_at,
                    group.key,
                    decided,
                )
            )
        for uid in outcome.allow_waiting:
            waiting = self._held.to_bind(uid)
            if waiting is not None:
                requests.append(
                    BindRequest(waiting.pod, waiting.node, 1, waiting.since, waiting.group, decided)
                )
        if requests:
            # What must be written before they bind (their devices), decided on the cache
            # the cycle committed to; the batch binds whole or not at all.
            plan = self._framework.run_pre_bind([Placement(r.pod, r.node) for r in requests])
            self._binder.submit_batch(requests, plan)
        if outcome.hold:
            part_of = {pod.uid: part.key for part in group.parts for pod in part.pending}
            deadline = outcome.deadline if outcome.deadline is not None else now
            for placement in outcome.hold:
                self._queue.done(members.pop(placement.pod.uid))
                self._held.hold(
                    placement.pod,
                    placement.node_name,
                    group=group.key,
                    part=part_of.get(placement.pod.uid, str(group.key)),
                    since=now,
                    deadline=deadline,
                )
        if outcome.release_held:
            self._held.release_group(group.key, UnreserveReason.REJECTED)
        if outcome.writes:
            self._binder.submit_writes(outcome.writes)
        self._preempt(outcome)
        error = outcome.status.code is Code.ERROR
        for uid, message in outcome.unplaced.items():
            left = members.pop(uid, None)
            if left is not None:
                self._queue.requeue(left, now, unschedulable=not error)
            pod = self._cache.pod(uid)
            if message and pod is not None:
                self._reporter.report(
                    Report.unschedulable(
                        pod,
                        message,
                        outcome.reason,
                        nominated_node=_nomination_change(pod, outcome.nominated),
                    )
                )
        for uid, message in outcome.explain.items():
            pod = self._cache.pod(uid)
            if message and pod is not None:
                self._reporter.report(Report.unschedulable(pod, message, outcome.reason))
        for queued in members.values():
            # Taken out of the queue but not part of the decision: back, to be tried again.
            self._queue.requeue(queued, now, unschedulable=False)

    # -- preemption --------------------------------------------------------------------------

    def _release_nominations(self, group: SchedulingGroup) -> None:
        """A group is planned afresh on every attempt: the room held for its nominated members
        is given back first (the cycle hands it back while victims are still leaving), and
        the group is told where they were nominated, to try there first."""
        for member in group.members():
            released = self._held.release_nomination(member.uid)
            if released is not None:
                group.nominated[member.uid] = released.node

    def _preempt(self, outcome: CycleOutcome) -> None:
        """Holds the room for nominated members, evicts the victims, and takes nominations on
        the freed nodes away from lower-priority pods."""
        group = outcome.group
        for uid, node in outcome.nominated.items():
            pod = self._cache.pod(uid)
            if pod is not None and self._cache.node(node) is not None:
                self._held.nominate(pod, node, group.key)
        for placement in outcome.evict:
            self._evictor.submit(
                Eviction(
                    placement.pod,
                    placement.node_name,
                    outcome.preemptor,
                    group.trigger.key,
                    scheduler=group.trigger.scheduler_name,
                    why=outcome.eviction_why,
                )
            )
        if outcome.dry_run_seconds is not None:
            self._metrics.preemption_attempts.inc()
            self._metrics.preemption_dry_run.observe(outcome.dry_run_seconds)
        if outcome.evict:
            self._metrics.preemption_victims.observe(len(outcome.evict))
            log.info(
                "preempting",
                preemptor=outcome.preemptor,
                victims=len(outcome.evict),
                nodes=len({p.node_name for p in outcome.evict}),
                dry_run_ms=round((outcome.dry_run_seconds or 0.0) * 1000, 1),
            )
        for uid in outcome.drop_nominations:
            dropped = self._held.release_nomination(uid)
            if dropped is None:
                continue
            pod = self._cache.pod(uid)
            if pod is not None:
                message = (
                    f"nomination to {dropped.node} given up: the room goes to "
                    f"higher-priority {outcome.preemptor}"
                )
                self._reporter.report(Report.unschedulable(pod, message, nominated_node=""))
            self._signals.request_move()

    def _update_gauges(self) -> None:
        depths = self._queue.depths()
        for state in (QueueState.ACTIVE, QueueState.BACKOFF, QueueState.UNSCHEDULABLE):
            self._metrics.queue_depth.labels(state.value).set(depths[state])
        self._metrics.queue_depth.labels("gated").set(len(self._intake.gated))
        self._metrics.cache_size.labels("nodes").set(len(self._cache.nodes()))
        self._metrics.cache_size.labels("pods").set(self._cache.pod_count())
        # Preemption spares what budgets cover only once it knows them: their count says so.
        self._metrics.cache_size.labels("budgets").set(len(self._intake.stores.budgets))
        self._metrics.report_backlog.set(self._reporter.backlog)
        self._metrics.held_pods.set(len(self._waiting))
        self._metrics.nominated_pods.set(len(self._nominations))
        self._metrics.others_in_flight.set(self._cache.in_flight_count())
        self._metrics.set_gauges(self._framework.gauges())


def _nomination_change(pod: PodInfo, nominated: dict[str, str]) -> str | None:
    """What to write as the pod's ``status.nominatedNodeName``: its new nomination, "" to
    clear one it no longer has, None when it is right already."""
    node = nominated.get(pod.uid, "")
    return None if node == pod.nominated_node_name else node
