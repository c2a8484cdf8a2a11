"""StartTimes: when each job waiting for room starts, if the pods holding the room end by their
time limits (``model/time_limits.py``) and nothing of higher priority arrives.

Each job seen failing for lack of room (after preemption and the starvation guard had their
say: a job they make room for is not waiting) is remembered with the members it still needs.
At most every ``refresh`` seconds (longer where a plan is costly) the plan
(``state/start_plan.py``) is made again, every remembered job in queue order (priority, then
age), and each job's pods are told its estimate with their explanation. A job that waits for
members, gates or devices gets no estimate: room is not what it waits for.

Off the cycle: a cycle that finds a plan due only wakes the planner, a task of the daemon
(``background``). It reads the cache as it stands, on the event loop (the running pods'
bounds, the waiting jobs), and makes the plan in a worker thread over those copies; the cycles
meanwhile read the last plan. Jobs first seen since the last plan began are tried again once
the new one is made, to be told their start. A what-if's fork, which runs no task, plans in
its cycle.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.group import GroupPlan, SchedulingGroup
from koordgang.framework.handle import Handle
from koordgang.framework.interfaces import BackgroundWork
from koordgang.framework.report import LATE_STARTS, MetricSpec
from koordgang.framework.results import PostFilterResult
from koordgang.framework.status import SKIP
from koordgang.model.dra.extended import may_be_extended
from koordgang.model.job import JobInfo
from koordgang.model.node import NodeInfo
from koordgang.model.pod import PodInfo
from koordgang.model.resources import Resources
from koordgang.model.time import format_rfc3339
from koordgang.plugins.starttimes.inputs import (
    Eligible,
    Holders,
    WaitingJob,
    job_of,
    room,
    waiter,
)
from koordgang.plugins.starttimes.messages import describe
from koordgang.plugins.starttimes.promises import Promises
from koordgang.state.dra import DraManager
from koordgang.state.snapshot import Snapshot
from koordgang.state.start_plan import Estimate, Holder, Timelines, Waiter, plan_starts

__all__ = ["StartTimes"]

NAME = "StartTimes"
EXPECTED_WAIT = "koordgang_expected_wait_seconds"
#: A job not seen waiting for this long stopped waiting (placed, or gone).
FORGET_AFTER = 180.0
#: Plans are made at most this many times their cost (CPU seconds, the reading on the loop
#: and the plan in its thread) apart.
COST_SHARE = 50.0
PLANNER = "start-plan"


@dataclass(frozen=True, slots=True)
class _Inputs:
    """What a plan is made of, copied from the cache: the thread reads nothing else."""

    #: The wall clock's seconds the plan counts from.
    wall: float
    queue: list[WaitingJob]
    nodes: frozenset[str]
    room: dict[str, Resources]
    held: list[Holder]
    waiters: list[Waiter]
    #: Jobs seen since the last plan began: tried again once this one is made.
    telling: frozenset[str]
    timelines: Timelines


_METRICS = (
    MetricSpec(
        LATE_STARTS,
        "Jobs that started later than they were first told, by why their start slipped.",
        "counter",
        label="reason",
    ),
    MetricSpec(
        EXPECTED_WAIT,
        "Seconds until the first job in the queue with an expected start starts.",
        "gauge",
    ),
)


class StartTimes:
    name = NAME

    def __init__(self, handle: Handle, *, refresh: float = 10.0) -> None:
        self.handle = handle
        self.refresh = refresh
        self._waiting: dict[str, WaitingJob] = {}
        self._estimates: dict[str, Estimate] = {}
        #: Monotonic seconds of the last plan (None: never made), and what it took.
        self._planned: float | None = None
        self._cost = 0.0
        self._job_of = job_of(lambda key: handle.stores.jobs.get(key))
        #: uid of a member still to place -> its job's key.
        self._member_of: dict[str, str] = {}
        self._promises = Promises()
        #: Set when a plan is due, for the planner; None while no planner runs (plans are
        #: then made in the cycle).
        self._wake: asyncio.Event | None = None
        self._in_flight = False
        #: CPU seconds of the last plan made off the cycle: reading its inputs (on the event
        #: loop), and the plan (in its thread).
        self.last_costs = (0.0, 0.0)
        #: Jobs seen since the last plan began, tried again once the next is made.
        self._untold: set[str] = set()
        self._holders = Holders()
        #: The nodes' room over time as the last plan worked it out (one plan at a time
        #: uses it: the planner's, or the cycle's where no planner runs).
        self._timelines = Timelines()

    # -- the planner, off the cycle --------------------------------------------------------------

    def background(self) -> Mapping[str, BackgroundWork]:
        self._wake = asyncio.Event()
        return {PLANNER: self._planner}

    def working(self) -> bool:
        return self._in_flight or (self._wake is not None and self._wake.is_set())

    async def _planner(self) -> None:
        wake = self._wake
        assert wake is not None, "background() makes the planner's event"
        while True:
            await wake.wait()
            wake.clear()
            self._in_flight = True
            try:
                inputs, reading = self._inputs()
                estimates, planning = await asyncio.to_thread(_plan_timed, inputs)
                self.last_costs = (reading, planning)
                self._apply(inputs, estimates, reading + planning, activate=True)
            finally:
                self._in_flight = False

    # -- PostFilter ------------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> PostFilterResult:
        needed = plan.needed()
        if plan.satisfied or not needed or _waits_for_more_than_room(plan, needed, self.handle.dra):
            return PostFilterResult(SKIP)
        key = group.job_name()
        now = self.handle.now()
        members = list(group.members())
        job = self._waiting[key] = WaitingJob(
            key,
            min(p.priority for p in members),
            min(p.creation_timestamp for p in members),
            tuple(needed),
            now,
        )
        for pod in needed:
            self._member_of[pod.uid] = key
        # A job first seen waits for the next plan: a burst of new ones makes one plan, not
        # one each.
        if key not in self._estimates:
            self._untold.add(key)
        due = self._planned is None or now - self._planned >= self.interval()
        if due and not self._in_flight:
            if self._wake is not None:
                self._wake.set()
            else:
                inputs, reading = self._inputs()
                estimates, planning = _plan_timed(inputs)
                self._apply(inputs, estimates, reading + planning, activate=False)
        estimate = self._estimates.get(key)
        note = self._note(job, estimate)
        if not note:
            return PostFilterResult(SKIP)
        if estimate is not None:
            self._promises.told(job, estimate, self.handle.wall())
        return PostFilterResult(SKIP, notes={pod.uid: note for pod in members})

    def _note(self, job: WaitingJob, estimate: Estimate | None) -> str:
        """What its pods are told of its start ("" for nothing)."""
        if estimate is None:
            return ""
        limited = any(
            p.active_deadline_seconds is not None or _has_deadline(self._job_of(p))
            for p in job.members
        )
        return describe(estimate, self.handle.wall(), limited=limited)

    def _inputs(self) -> tuple[_Inputs, float]:
        """The plan's inputs, from the cache as it stands (not a cycle's snapshot: that one
        passes over other schedulers' nominations below its group's priority, which other
        jobs must not); and the CPU seconds reading them took."""
        started = time.thread_time()
        now = self.handle.now()
        snapshot = Snapshot(self.handle.cache)
        for key in [k for k, w in self._waiting.items() if now - w.seen > FORGET_AFTER]:
            self._forget(key)
        wall = self.handle.wall()
        nodes: list[NodeInfo] = [n.info for n in snapshot.nodes if n.info is not None]
        queue = []
        for job in self._waiting.values():
            if self._made_room_for(job):
                # Room is made or held for it now: what it was told before is superseded
                # (the starvation guard keeps its own promise).
                self._promises.forget(job.key)
            else:
                queue.append(job)
        queue.sort(key=lambda w: (-w.priority, w.created, w.key))
        eligible = Eligible(nodes)
        waiters = [waiter(job, eligible, self._job_of) for job in queue]
        held = self._holders.read(
            snapshot, self._job_of, wall, self.handle.nominations.__contains__
        )
        telling = frozenset(self._untold)
        self._untold.clear()
        self._planned = now
        names = frozenset(n.name for n in nodes)
        inputs = _Inputs(
            wall, queue, names, room(snapshot), held, waiters, telling, self._timelines
        )
        return inputs, time.thread_time() - started

    def _apply(
        self, inputs: _Inputs, estimates: list[Estimate], cost: float, *, activate: bool
    ) -> None:
        """The plan made: jobs that stopped waiting meanwhile are left out; with
        ``activate``, those first seen since the last plan began are tried again, to be told
        their start."""
        waiting = [job for job in inputs.queue if job.key in self._waiting]
        self._estimates = {e.key: e for e in estimates if e.key in self._waiting}
        overdue = {h.pod for h in inputs.held if h.overdue}
        self._promises.planned(waiting, self._estimates, inputs.nodes, overdue)
        self._cost = cost
        if activate:
            told = [
                job
                for job in map(self._waiting.__getitem__, inputs.telling & self._waiting.keys())
                if self._note(job, self._estimates.get(job.key))
            ]
            if told:
                self.handle.activate([pod for job in told for pod in job.members])

    def _forget(self, key: str) -> None:
        job = self._waiting.pop(key, None)
        self._estimates.pop(key, None)
        self._promises.forget(key)
        for pod in job.members if job is not None else ():
            self._member_of.pop(pod.uid, None)

    # -- a job starts --------------------------------------------------------------------------

    def on_pod(self, old: PodInfo | None, pod: PodInfo | None) -> None:
        """A member nominated to a node (room is made or held for its job: preemption, the
        starvation guard): what its job was told before is superseded, and the guard keeps
        its own promise."""
        if pod is not None and pod.nominated_node_name and not pod.node_name:
            key = self._member_of.get(pod.uid)
            if key is not None:
                self._promises.forget(key)

    def on_pod_left_pending(self, pod: PodInfo, gone: bool) -> None:
        """A member bound: its job started (counted if later than first told); a member gone:
        the job waits no more (it comes back, told again, if it still waits)."""
        key = self._member_of.pop(pod.uid, None)
        if key is None:
            return
        if not gone and pod.node_name:
            late = self._promises.started(key, self.handle.wall())
            if late is not None:
                self.handle.record(LATE_STARTS, 1.0, late)
        self._forget(key)

    def interval(self) -> float:
        """Seconds between plans: ``refresh``, or longer where a plan is costly (a large
        cluster), so that planning takes at most 1/``COST_SHARE`` of the loop's time."""
        return max(self.refresh, COST_SHARE * self._cost)

    # -- a what-if takes over the queue ----------------------------------------------------------

    def carried(self) -> object:
        """The jobs seen waiting for room, for a what-if to plan its file's jobs among them."""
        return tuple(replace(job) for job in self._waiting.values())

    def carry(self, carried: object) -> None:
        if isinstance(carried, tuple):
            for job in carried:
                if isinstance(job, WaitingJob):
                    self._waiting[job.key] = replace(job)

    # -- what others ask -------------------------------------------------------------------------

    def estimate(self, key: str) -> Estimate | None:
        job = self._waiting.get(key)
        if job is None or self._made_room_for(job):
            return None
        return self._estimates.get(key)

    def _made_room_for(self, job: WaitingJob) -> bool:
        """Room is being made or held for it (preemption, the starvation guard): it waits
        for no estimate, and its nominated members hold room in the plan."""
        nominations = self.handle.nominations
        return any(pod.uid in nominations for pod in job.members)

    def gang_facts(self, gang_key: str) -> Mapping[str, Any]:
        """The gangs view's expected start (RFC 3339), and the pods it waits for."""
        estimate = self.estimate(gang_key)
        if estimate is None:
            return {}
        if estimate.start is None:
            return {"expectedStart": None, "startHeldBy": list(estimate.held_by)}
        return {
            "expectedStart": format_rfc3339(estimate.start),
            "startWaitsFor": list(estimate.waits_for),
        }

    def metrics(self) -> Sequence[MetricSpec]:
        return _METRICS

    def gauges(self) -> Mapping[str, Mapping[str, float]]:
        wall = self.handle.wall()
        queue = sorted(self._waiting.values(), key=lambda w: (-w.priority, w.created, w.key))
        for job in queue:
            estimate = self._estimates.get(job.key)
            if estimate is not None and estimate.start is not None:
                return {EXPECTED_WAIT: {"": max(0.0, estimate.start - wall)}}
        return {EXPECTED_WAIT: {"": 0.0}}


def _plan_timed(inputs: _Inputs) -> tuple[list[Estimate], float]:
    """The plan, and the CPU seconds it took (of its own thread, when in one)."""
    started = time.thread_time()
    estimates = plan_starts(inputs.wall, inputs.room, inputs.held, inputs.waiters, inputs.timelines)
    return estimates, time.thread_time() - started


def _has_deadline(job: JobInfo | None) -> bool:
    return job is not None and job.active_deadline_seconds is not None


def _waits_for_more_than_room(plan: GroupPlan, needed: Sequence[PodInfo], dra: DraManager) -> bool:
    """Members still to be made, or devices to be found (claims, or extended resources a
    DeviceClass serves through DRA; those a device plugin serves are room like any other):
    room alone does not start it."""
    for part_plan in plan.parts:
        part = part_plan.part
        if len(part.pending) < part.minimum - part.counted:
            return True
    return any(
        pod.resource_claims
        or any(
            may_be_extended(name) and dra.extended_class(name) is not None
            for name in pod.requests.names()
        )
        for pod in needed
    )
