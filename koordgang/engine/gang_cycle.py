"""Scheduling of gang members: a whole GangGroup per attempt, all or nothing.

The scheduler hands over any popped pod whose gang still constrains it. This module gathers
every pending member of the pod's GangGroup out of the queue, checks the group may start, plans
all of them over one snapshot, and then, by the outcome:
- group satisfied: assume and bind every placement plus the group's earlier reservations;
- Strict, short: drop the plan (nothing held), park the members until the cluster changes;
- NonStrict, short: keep the placements as reservations (assumed, not bound) and wait, at most
  the gang's waiting time; then release everything and mark the members timed out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from koordgang.engine.reporter import Report, Reporter
from koordgang.framework.runner import Framework
from koordgang.model.gang import TIMEOUT_KEY, topology_index
from koordgang.model.pod import PodInfo
from koordgang.plugins.coscheduling import check_group, plan_group
from koordgang.plugins.coscheduling import messages as say
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import Gang, GangRegistry
from koordgang.state.queue import QueuedPod, QueueState, SchedulingQueue
from koordgang.state.snapshot import Snapshot

log = structlog.get_logger("koordgang.gangs")

SubmitBind = Callable[[PodInfo, str, int, float], None]


def _index_of(pod: PodInfo) -> int | None:
    return topology_index(pod.annotations)[0]


@dataclass(slots=True)
class GangOutcome:
    """What one attempt did, for metrics and tests."""

    bound: int = 0
    reserved: int = 0
    waiting: int = 0
    message: str = ""


class GangCycle:
    def __init__(
        self,
        *,
        cache: SchedulerCache,
        queue: SchedulingQueue,
        gangs: GangRegistry,
        framework: Framework,
        reporter: Reporter,
        submit_bind: SubmitBind,
        is_pending: Callable[[PodInfo], bool],
        clock: Callable[[], float],
        wall: Callable[[], float],
    ) -> None:
        self.cache = cache
        self.queue = queue
        self.gangs = gangs
        self.framework = framework
        self.reporter = reporter
        self.submit_bind = submit_bind
        self.is_pending = is_pending
        self.clock = clock
        self.wall = wall
        #: Gangs whose PodGroup status may have changed since it was last written.
        self.dirty: set[str] = set()

    # -- one attempt --------------------------------------------------------------------------

    def schedule(self, entry: QueuedPod, gang: Gang) -> GangOutcome:
        now = self.clock()
        group = self.gangs.group(gang)
        members = self._take_members(group, entry)
        try:
            return self._attempt(gang, group, members, now)
        except Exception:
            # Members pulled out of the queue go back, whatever went wrong: none is lost.
            for queued in members.values():
                if queued.state is QueueState.IN_FLIGHT:
                    self.queue.requeue(queued, now, unschedulable=False)
            raise

    def _attempt(
        self,
        gang: Gang,
        group: list[tuple[str, Gang | None]],
        members: dict[str, QueuedPod],
        now: float,
    ) -> GangOutcome:
        verdict = check_group(gang, group)
        if not verdict.ready:
            for _, other in group:
                if other is not None:
                    other.last_message = verdict.message
            self._park(members.values(), now, verdict.message)
            return GangOutcome(waiting=len(members), message=verdict.message)

        active = [g for _, g in group if g is not None and not g.exempt()]
        self._drop_vanished_reservations(active, members, now)
        for g in active:
            if g.first_attempt is None:
                g.first_attempt = self.wall()
            self.dirty.add(g.key)
        pending = [
            (g, [members[p.uid].pod for p in g.pending_members() if p.uid in members])
            for g in active
        ]
        snapshot = Snapshot(self.cache)
        plan = plan_group(self.framework, snapshot, pending, index_of=_index_of)

        if plan.satisfied:
            return self._bind_group(snapshot, plan.placements(), active, members, now)
        if plan.strict:
            snapshot.unplace_all()
            self._release(active)
            outcome = GangOutcome(waiting=len(members))
        else:
            for placement in snapshot.commit():
                owner = self.gangs.gang_of(placement.pod.uid)
                if owner is not None:
                    owner.reserve(placement.pod.uid, placement.node_name, now)
                self.queue.done(members.pop(placement.pod.uid))
            outcome = GangOutcome(
                reserved=sum(len(g.reserved) for g in active), waiting=len(members)
            )
        # Everyone still waiting hears why, gang by gang.
        for gang_plan in plan.gangs:
            message = say.unsatisfied(plan, gang_plan)
            gang_plan.gang.last_message = message
            outcome.message = outcome.message or message
            for pod in gang_plan.failed:
                queued = members.pop(pod.uid, None)
                if queued is not None:
                    self.queue.requeue(queued, now, unschedulable=True)
                self._explain(pod, message)
            for uid in gang_plan.gang.reserved:
                reserved_pod = self.cache.pod(uid)
                if reserved_pod is not None:
                    self._explain(reserved_pod, message)
        for leftover in members.values():
            # Pending members the plan did not get to (a Strict attempt stops early).
            owner = self.gangs.gang_of(leftover.pod.uid)
            self.queue.requeue(leftover, now, unschedulable=True)
            if owner is not None and owner.last_message:
                self._explain(leftover.pod, owner.last_message)
        return outcome

    def _drop_vanished_reservations(
        self, gangs: list[Gang], members: dict[str, QueuedPod], now: float
    ) -> None:
        """A reservation on a node that has gone is worth nothing (the API server would accept
        a binding to it all the same): the pod is planned again with the others."""
        for gang in gangs:
            for uid, node in list(gang.reserved.items()):
                state = self.cache.node(node)
                if state is not None and state.info is not None:
                    continue
                gang.drop_reservation(uid)
                self.cache.forget(uid)
                pod = self.cache.pod(uid)
                if pod is not None and self.is_pending(pod) and uid not in members:
                    self.queue.add(pod, now)
                    taken = self.queue.take(uid)
                    if taken is not None:
                        members[uid] = taken

    def _take_members(
        self, group: list[tuple[str, Gang | None]], entry: QueuedPod
    ) -> dict[str, QueuedPod]:
        """Every pending member of the group, pulled out of the queue (in flight now)."""
        members = {entry.pod.uid: entry}
        for _, gang in group:
            if gang is None or gang.exempt():
                continue
            for pod in gang.pending_members():
                if pod.uid in members or not self.is_pending(pod):
                    continue
                taken = self.queue.take(pod.uid)
                if taken is not None:
                    members[pod.uid] = taken
        return members

    def _park(self, entries: Iterable[QueuedPod], now: float, message: str) -> None:
        for queued in list(entries):
            self.queue.requeue(queued, now, unschedulable=True)
            self._explain(queued.pod, message)

    def _bind_group(
        self,
        snapshot: Snapshot,
        placements: list[tuple[PodInfo, str]],
        active: list[Gang],
        members: dict[str, QueuedPod],
        now: float,
    ) -> GangOutcome:
        snapshot.commit()
        bound = 0
        for gang in active:
            for uid, node in list(gang.reserved.items()):
                pod = self.cache.pod(uid)
                if pod is not None:
                    self.submit_bind(pod, node, 1, now)
                    bound += 1
            gang.mark_satisfied()
            gang.last_message = ""
        for pod, node in placements:
            queued = members.pop(pod.uid)
            self.queue.done(queued)
            self.submit_bind(pod, node, queued.attempts, queued.enqueued_at)
            bound += 1
        # Members beyond the minimum that found no room now schedule like plain pods.
        for queued in members.values():
            self.queue.requeue(queued, now, unschedulable=False)
        log.info("gang group placed", gangs=[g.key for g in active], pods=bound)
        return GangOutcome(bound=bound)

    def _release(self, gangs: list[Gang]) -> None:
        """Drops reservations (a Strict group holds none unless mixed with NonStrict gangs)."""
        now = self.clock()
        for gang in gangs:
            for uid in gang.release():
                self.cache.forget(uid)
                pod = self.cache.pod(uid)
                if pod is not None and self.is_pending(pod):
                    self.queue.add(pod, now)

    def _explain(self, pod: PodInfo, message: str) -> None:
        gang = self.gangs.gang_of(pod.uid)
        if gang is not None:
            # Settings that fell back to a default are named while the pod waits, so that a
            # typo is not mistaken for the reason it waits.
            notes = [i.message() for i in gang.spec.issues if not i.fatal]
            if notes:
                message = f"{message} (ignored settings: {'; '.join(notes)})"
        self.reporter.report(
            Report.for_pod(
                pod, "Warning", "FailedScheduling", message, condition=("False", "Unschedulable")
            )
        )

    # -- time passing -------------------------------------------------------------------------

    def expire(self, now: float) -> list[Gang]:
        """Times out groups whose reservations are older than their waiting time."""
        expired: list[Gang] = []
        for gang in list(self.gangs.gangs()):
            started = gang.wait_started
            if started is None or gang.timed_out or now - started < gang.spec.waiting_time:
                continue
            if gang.satisfied:
                # A satisfied gang under a policy that still counts (only-waiting, say) held
                # reservations for replacements that did not add up: let them go, no timeout.
                self._release([gang])
                continue
            for _, member in self.gangs.group(gang):
                if member is not None and not member.satisfied and not member.timed_out:
                    expired.append(member)
        for gang in expired:
            self._time_out(gang)
        return expired

    def _time_out(self, gang: Gang) -> None:
        for uid in gang.release():
            self.cache.forget(uid)
        message = say.timed_out(gang)
        gang.mark_timed_out()
        gang.last_message = message
        self.dirty.add(gang.key)
        log.warning("gang timed out", gang=gang.key, waiting_time=gang.spec.waiting_time)
        for pod in list(gang.members.values()):
            if pod.node_name or pod.is_terminal:
                continue
            self.queue.delete(pod.uid)
            self.reporter.report(
                Report.for_pod(
                    pod,
                    "Warning",
                    "GangTimeout",
                    message,
                    condition=("False", "GangTimeout"),
                    annotations={TIMEOUT_KEY: "true"},
                    always=True,
                )
            )
