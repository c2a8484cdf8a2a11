"""Start times and the starvation guard over hours of a trace, by simulation: the engine in
process on a simulated clock, no API server.

A cluster (32 nodes of 8 cpu by default) gets a trace of big gangs (16-24 members of a whole
node each) and small jobs (1-4 pods of 1-2 cpu, several pods being a gang) arriving over
simulated hours. Each job runs for a duration drawn from a lognormal distribution (seeded;
a heavy tail: most jobs are short, a few run for hours) and its pods carry
``activeDeadlineSeconds`` above it (the duration times ``limit_factor``, rounded up). A pod
ends at its start plus its duration: the simulation deletes it, as a completing Job's pod
leaves; a pod still running at its limit would be killed then, and be gone after its grace
period (``--overrun`` makes a share of the jobs run past their limits).

The whole engine runs (``Scheduler``: intake, queue, loop, binder, reporter) with the daemon's
framework, over ``bench.simulate``'s ``SimApi`` (writes answered at once, a bind comes back as
the pod informer's MODIFIED event, here with ``status.startTime``, as a kubelet sets it) and
the daemon's own informer feeds. Time is a ``FakeClock`` moved from event to event (an
arrival, a pod's end) and every ``--tick`` seconds while pods wait; at each moment the loop
runs until it has nothing to do and every write is answered, so no real time passes.

Each variant is a set of ``Settings`` overrides, and backfill into held room on or off
(``VARIANTS``), run on the same trace:

- utilization: cpu-seconds bound over cpu-seconds available, over the trace's hours;
- big jobs' and small jobs' waits, arrival to all members bound (a job still waiting at the
  end counts with its wait so far: the figures are then lower bounds);
- jobs told a start time, and how many started later than first told, from the daemon's own
  counter ``koordgang_start_later_than_expected_total{reason}`` (estimates and promises);
- the jobs the starvation guard promised a start (as each began to hold room), and how many
  of them started later than that promise (or still waited past it at the end).

``python -m bench.trace_sim [--hours H] [--seed S] [--variants NAME,...]``
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import logging
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import structlog

from bench.console import say
from bench.report import table
from bench.results import percentile
from bench.simulate import SimApi
from bench.trace_workload import (
    NAMESPACE,
    Shape,
    TraceJob,
    make_trace,
    node_object,
    pod_objects,
)
from koordgang.adapters.feeds import Feed
from koordgang.clients.api import JSON
from koordgang.engine.kinds import KINDS
from koordgang.engine.scheduler import Scheduler
from koordgang.framework.cycle_state import CycleState
from koordgang.framework.framework import Framework
from koordgang.framework.group import SchedulingGroup
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.model.namespace import NamespaceInfo
from koordgang.model.time import format_rfc3339
from koordgang.plugins.profile import default_framework
from koordgang.plugins.starvationguard import StarvationGuard
from koordgang.settings import Settings
from koordgang.state.gangs import GangRegistry
from koordgang.state.network_topology import ClusterTopology
from koordgang.testing.clock import FakeClock

#: The counter of jobs that started later than first told, as the daemon exports it.
LATE_STARTS = "koordgang_start_later_than_expected_total"
#: What a pod's message says when it is told a start time.
TOLD = "expected to start by"
#: Groups scheduled per round of the loop, as the daemon's loop takes them between yields.
BATCH = 16


# -- the variants ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One way to run the daemon on the trace."""

    name: str
    #: ``Settings`` fields changed from the daemon's defaults.
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: Backfill into held room (the starvation guard lets a job whose time limit ends before
    #: the reserving job's start use the nodes it holds): None leaves the guard as it comes,
    #: True or False sets it through ``set_held_room_backfill``.
    backfill: bool | None = None


#: The variants run side by side: the guard off, the guard without its backfill into held room
#: (as it was before backfill), and the guard as it comes (backfill on; no setting turns it
#: off, so the bench does, through ``set_held_room_backfill``).
VARIANTS: tuple[Variant, ...] = (
    Variant("no guard", {"reserve_after": 0.0}),
    Variant("guard", backfill=False),
    Variant("guard + backfill", backfill=True),
    # A reservation ends after the gang's waiting time (600 s unless the gang says): with
    # heavy-tailed small jobs, 16+ nodes rarely all drain that fast. Held two hours instead:
    Variant("guard held 2 h", {"default_gang_waiting_time": 7200.0}, backfill=False),
    Variant("guard + backfill held 2 h", {"default_gang_waiting_time": 7200.0}, backfill=True),
)
#: What a run without ``--variants`` compares. The two-hour holds are left out: on some seeds
#: they cost minutes of CPU (over four on seed 3).
DEFAULT_VARIANTS = ("no guard", "guard", "guard + backfill")


def set_held_room_backfill(framework: Framework, enabled: bool) -> None:
    """Backfill into held room on (as the guard comes) or off: a switch of the bench's, not a
    setting. Off, the guard lends the room it holds to nobody, as before backfill."""
    guards = [p for p in framework.plugins if isinstance(p, StarvationGuard)]
    if not guards:
        raise ValueError("no starvation guard in the framework: nothing to switch")
    if enabled:
        return
    for guard in guards:
        guard.backfill_room = _lend_nothing  # type: ignore[method-assign]


def _lend_nothing(state: CycleState, group: SchedulingGroup) -> Sequence[str]:
    return ()


def variant_settings(variant: Variant) -> Settings:
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(variant.settings) - known)
    if unknown:
        raise ValueError(f"variant {variant.name!r}: no such setting: {', '.join(unknown)}")
    return replace(Settings(), **variant.settings)


# -- the API server, answered in process ----------------------------------------------------------


class TraceApi(SimApi):
    """``SimApi`` on the simulated clock: a bound pod comes back running since the bind (its
    ``status.startTime``), each bind is noted, and so is every pod told a start time."""

    def __init__(
        self,
        clock: FakeClock,
        on_bound: Callable[[str, str], None],
        on_evicted: Callable[[str], None],
    ) -> None:
        super().__init__()
        self._clock = clock
        self._on_bound = on_bound
        self._on_evicted = on_evicted
        self.in_flight = 0
        #: Writes answered so far (the engine is quiet once none come for a while).
        self.answered = 0
        #: Names of pods whose message said when they start.
        self.told: set[str] = set()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float = 30.0,
    ) -> Any:
        self.in_flight += 1
        try:
            if method == "PATCH" and path.endswith("/status") and TOLD in repr(body):
                self.told.add(path.split("/")[-2])
            answer = await super().request(
                method, path, params=params, body=body, content_type=content_type, timeout=timeout
            )
            if method == "DELETE":
                self._on_evicted(path.rsplit("/", 1)[-1])
            return answer
        finally:
            self.in_flight -= 1
            self.answered += 1

    def _bound(self, name: str, node: str) -> None:
        obj = self.pending.pop(name)
        self.binds += 1
        status = {"phase": "Running", "startTime": format_rfc3339(self._clock.wall())}
        echo = {
            **obj,
            "metadata": {**obj["metadata"], "resourceVersion": "2"},
            "spec": {**obj["spec"], "nodeName": node},
            "status": status,
        }
        self._on_bound(name, node)
        asyncio.get_running_loop().call_soon(self.echo, "MODIFIED", echo)


# -- one run --------------------------------------------------------------------------------------


@dataclass
class PodRecord:
    job: str
    cpu: int
    node: str = ""
    #: Seconds from the trace's start; None: not bound, or not ended by the end of the run.
    bound: float | None = None
    ended: float | None = None
    #: Evicted (room lent taken back) rather than ended.
    evicted: bool = False
    #: The pod it replaces (made by its Job, the one before evicted); "" for one of the
    #: trace's own.
    replaces: str = ""


@dataclass
class Outcome:
    """What one variant did with the trace."""

    variant: str
    shape: Shape
    jobs: list[TraceJob]
    pods: dict[str, PodRecord]
    #: Job name -> seconds from the trace's start when its last member was bound.
    started: dict[str, float]
    told: set[str]
    late: dict[str, int]
    cpu_s: float
    #: Job name -> seconds from the trace's start it was first promised to start by.
    promised: dict[str, float] = field(default_factory=dict)


class TraceRun:
    """One daemon's engine on the trace, on a simulated clock."""

    def __init__(self, shape: Shape, jobs: Sequence[TraceJob], variant: Variant, seed: int) -> None:
        self.shape = shape
        self.jobs = list(jobs)
        self.variant = variant
        self.settings = variant_settings(variant)
        self.clock = FakeClock()
        self.origin = self.clock.now
        self.pods: dict[str, PodRecord] = {}
        self._job_of = {f"{j.name}-{m}": j for j in self.jobs for m in range(j.members)}
        self._names = {j.name for j in self.jobs}
        #: (when, pod name) of bound pods, soonest first.
        self._ends: list[tuple[float, str]] = []
        self.api = TraceApi(self.clock, self._bound, self._evicted)
        gangs = GangRegistry(self.settings.default_gang_waiting_time, resolve=Resolve(GANG_APIS))
        topology = ClusterTopology()
        self.framework = default_framework(
            self.settings, gangs, rng=random.Random(seed), topology=topology
        )
        if variant.backfill is not None:
            set_held_room_backfill(self.framework, variant.backfill)
        self._guards = [p for p in self.framework.plugins if isinstance(p, StarvationGuard)]
        self.promised: dict[str, float] = {}
        self.scheduler = Scheduler(
            self.settings,
            self.api,  # type: ignore[arg-type]  # answers as KubeApi does
            self.framework,
            clock=self.clock,
            wall=self.clock.wall,
            gangs=gangs,
            topology=topology,
        )
        intake = self.scheduler.intake
        feeds = {kind.name: Feed(kind, intake) for kind in KINDS if kind.store is None}
        self._pod_feed = feeds["pods"]
        self.api.echo = self._pod_feed.event
        nodes = feeds["nodes"]
        nodes.begin_list()
        nodes.list_page([node_object(f"n{i:03d}", shape.node_cpu) for i in range(shape.nodes)])
        nodes.end_list()
        self._pod_feed.begin_list()
        self._pod_feed.end_list()
        for kind in KINDS:
            if kind.store is not None:
                listed = [NamespaceInfo(NAMESPACE, {})] if kind.name == "namespaces" else []
                intake.kind(kind.name).listed(listed)
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def now(self) -> float:
        """Seconds since the trace's start."""
        return self.clock.now - self.origin

    def _bound(self, name: str, node: str) -> None:
        record = self.pods[name]
        record.node, record.bound = node, self.now
        heapq.heappush(self._ends, (self.now + self._job_of[name].runs_for, name))

    def _evicted(self, name: str) -> None:
        """An evicted pod is gone now (its grace period is not simulated); its Job makes a
        replacement, which waits for room and runs its whole duration again."""
        record = self.pods.get(name)
        if record is None or record.ended is not None:
            return
        record.ended, record.evicted = self.now, True
        job = self._job_of[name]
        number = sum(1 for r in self.pods.values() if r.replaces == name) + 1
        [template] = pod_objects(job, self.settings.scheduler_name, self.clock.wall())[:1]
        again = f"{name}-r{number}"
        template["metadata"].update(name=again, uid=f"uid-{again}")
        self._job_of[again] = job
        self.pods[again] = PodRecord(record.job, record.cpu, replaces=name)
        self.api.pending[again] = template
        asyncio.get_running_loop().call_soon(self._pod_feed.event, "ADDED", template)

    # -- running ---------------------------------------------------------------------------------

    def _start_writers(self) -> None:
        s = self.scheduler
        spawn = self._tasks.append
        for index in range(s.reporter.workers):
            spawn(asyncio.create_task(s.reporter.work(), name=f"reporter-{index}"))
        for index in range(s.reporter.event_workers):
            spawn(asyncio.create_task(s.reporter.work(True), name=f"event-writer-{index}"))
        spawn(asyncio.create_task(s.status_writer.work(), name="status-writer"))
        for index in range(s.evictor.workers):
            spawn(asyncio.create_task(s.evictor.work(), name=f"evictor-{index}"))

    async def _settle(self) -> None:
        """Turns the event loop until binds and writes are done: nothing in flight and no
        write for a few turns (explanations held until due are left held)."""
        s, api = self.scheduler, self.api
        calm, seen = 0, -1
        while calm < 5:
            await asyncio.sleep(0)
            if s.reporter.backlog:
                s.reporter.nudge()
            busy = s.binder.in_flight or api.in_flight or s.evictor.backlog
            calm = 0 if busy or api.answered != seen else calm + 1
            seen = api.answered

    async def _run_loop(self) -> None:
        """The loop until it has nothing to do at this moment."""
        loop = self.scheduler.loop
        while True:
            done = loop.step(BATCH)
            await self._settle()
            if done == 0:
                return

    def _deliver(self, arrivals: list[TraceJob]) -> None:
        """Pods that end now leave, then the jobs that arrive now come."""
        now = self.now
        while self._ends and self._ends[0][0] <= now:
            _, name = heapq.heappop(self._ends)
            if self.pods[name].ended is not None:
                continue  # evicted before its end
            self.pods[name].ended = now
            meta = {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"}
            self._pod_feed.event("DELETED", {"metadata": meta})
        while arrivals and arrivals[-1].arrival <= now:
            job = arrivals.pop()
            for obj in pod_objects(job, self.settings.scheduler_name, self.clock.wall()):
                name = obj["metadata"]["name"]
                self.pods[name] = PodRecord(job.name, job.cpu)
                self.api.pending[name] = obj
                self._pod_feed.event("ADDED", obj)

    def _next_moment(self, arrivals: list[TraceJob], tick: float) -> float:
        """The next arrival or end, or a tick from now while pods wait (the engine's timers:
        backoff, retries of parked pods, the guard's delay, plans of start times)."""
        moments = [self.shape.seconds]
        if arrivals:
            moments.append(arrivals[-1].arrival)
        if self._ends:
            moments.append(self._ends[0][0])
        if self.api.pending:
            moments.append(self.now + tick)
        return max(self.now + 1, min(moments))

    async def run(self, tick: float) -> Outcome:
        cpu0 = time.process_time()
        arrivals = sorted(self.jobs, key=lambda j: (j.arrival, j.name), reverse=True)
        self._start_writers()
        try:
            hour = 0
            while self.now < self.shape.seconds:
                if self.now >= 3600 * (hour + 1):
                    hour = int(self.now // 3600)
                    say(
                        f"{self.variant.name}: hour {hour}, {len(self.api.pending)} pods waiting, "
                        f"{time.process_time() - cpu0:.0f} s CPU"
                    )
                self._deliver(arrivals)
                await self._run_loop()
                self._note_promises()
                self.clock.now = self.origin + self._next_moment(arrivals, tick)
            for task in self._tasks:
                if task.done():
                    raise RuntimeError(f"{task.get_name()} ended: {task.exception()!r}")
        finally:
            await self._stop()
        return Outcome(
            self.variant.name,
            self.shape,
            self.jobs,
            self.pods,
            self._starts(),
            {self.pods[name].job for name in self.api.told if name in self.pods},
            self._late(),
            time.process_time() - cpu0,
            dict(self.promised),
        )

    def _note_promises(self) -> None:
        """The first start the guard promised each job (a reservation that ends and is made
        again promises anew; the first one is what the job was told)."""
        offset = self.clock.wall() - self.now
        for guard in self._guards:
            for reservation in guard.reservations().values():
                if reservation.promised is None:
                    continue
                name = reservation.job.split("/", 1)[-1]
                if name not in self._names:
                    # A single pod's job: the pod's name (a replacement's too).
                    name = self._job_of[name].name
                self.promised.setdefault(name, reservation.promised - offset)

    async def _stop(self) -> None:
        """The writers told to close, then cancelled until they are gone (a cancellation that
        lands as a poll's timeout fires is lost on Python 3.11, so it is repeated)."""
        s = self.scheduler
        s.loop.stop()
        await s.reporter.close(0.05)
        await s.status_writer.close(0.05)
        pending = {t for t in self._tasks if not t.done()}
        while pending:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.5)

    def _starts(self) -> dict[str, float]:
        bound: dict[str, list[float]] = {}
        for record in self.pods.values():
            if record.bound is not None:
                bound.setdefault(record.job, []).append(record.bound)
        jobs = {j.name: j for j in self.jobs}
        # Started once its members were first all bound (a replacement comes after).
        return {
            name: sorted(t)[jobs[name].members - 1]
            for name, t in bound.items()
            if len(t) >= jobs[name].members
        }

    def _late(self) -> dict[str, int]:
        late: dict[str, int] = {}
        for metric in self.scheduler.metrics.registry.collect():
            for sample in metric.samples:
                if sample.name == LATE_STARTS and sample.value:
                    late[sample.labels.get("reason", "")] = int(sample.value)
        return late


def run_variant(
    shape: Shape, jobs: Sequence[TraceJob], variant: Variant, seed: int, tick: float
) -> Outcome:
    return asyncio.run(TraceRun(shape, jobs, variant, seed).run(tick))


# -- the figures ----------------------------------------------------------------------------------


def utilization(outcome: Outcome) -> float:
    """cpu-seconds bound over cpu-seconds the nodes had, over the trace's hours."""
    end = outcome.shape.seconds
    used = 0.0
    for record in outcome.pods.values():
        if record.bound is not None:
            stop = end if record.ended is None else min(record.ended, end)
            used += record.cpu * max(0.0, stop - record.bound)
    return used / (outcome.shape.nodes * outcome.shape.node_cpu * end)


def waits(outcome: Outcome, big: bool) -> tuple[list[float], int]:
    """Each job's wait (one still waiting: its wait so far), and how many still wait."""
    end = outcome.shape.seconds
    values, waiting = [], 0
    for job in outcome.jobs:
        if job.big != big:
            continue
        started = outcome.started.get(job.name)
        if started is None:
            waiting += 1
        values.append((end if started is None else started) - job.arrival)
    return values, waiting


def span(seconds: float | None) -> str:
    """``45 s``, ``12 min``, ``3.4 h``."""
    if seconds is None:
        return "-"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def big_waits(outcome: Outcome) -> list[str]:
    """Each big gang's wait, in arrival order; ``+`` when it still waited at the end."""
    end = outcome.shape.seconds
    shown = []
    for job in outcome.jobs:
        if job.big:
            started = outcome.started.get(job.name)
            wait = span((end if started is None else started) - job.arrival)
            shown.append(wait if started is not None else f"{wait}+")
    return shown


def lost_work(outcome: Outcome) -> list[float]:
    """The cpu-hours each evicted pod had run (its Job's replacement runs it again)."""
    return [
        r.cpu * (r.ended - r.bound) / 3600
        for r in outcome.pods.values()
        if r.evicted and r.bound is not None and r.ended is not None
    ]


def broken_promises(outcome: Outcome) -> int:
    """Jobs that started later than the guard first promised, or still waited past it."""
    end = outcome.shape.seconds
    return sum(
        1
        for name, promised in outcome.promised.items()
        if outcome.started.get(name, end) > promised
    )


def row(outcome: Outcome) -> list[str]:
    big, big_waiting = waits(outcome, True)
    small, small_waiting = waits(outcome, False)
    late = sum(outcome.late.values())
    reasons = ", ".join(f"{r} {n}" for r, n in sorted(outcome.late.items()))
    evicted = lost_work(outcome)
    return [
        outcome.variant,
        f"{utilization(outcome):.1%}",
        f"{len(big) - big_waiting}/{len(big)}",
        span(percentile(big, 0.5)),
        span(max(big, default=None)),
        f"{len(small) - small_waiting}/{len(small)}",
        span(percentile(small, 0.5)),
        span(percentile(small, 0.95)),
        str(len(outcome.told)),
        f"{late}" + (f" ({reasons})" if reasons else ""),
        f"{len(outcome.promised)}, {broken_promises(outcome)}",
        f"{len(evicted)} ({sum(evicted):.1f})",
        f"{outcome.cpu_s:.0f}",
    ]


HEADER = [
    "variant",
    "utilization",
    "big started",
    "big wait P50",
    "big max",
    "small started",
    "small P50",
    "small P95",
    "jobs told a start",
    "later than told",
    "promised, late",
    "evicted (cpu-h lost)",
    "CPU s",
]


def report_lines(
    shape: Shape, jobs: Sequence[TraceJob], outcomes: Sequence[Outcome], seed: int
) -> list[str]:
    big = [j for j in jobs if j.big]
    small = [j for j in jobs if not j.big]
    offered = sum(j.members * j.cpu * min(j.runs_for, shape.seconds - j.arrival) for j in jobs)
    width = max(len(o.variant) for o in outcomes)
    each = [f"{o.variant:<{width}}  " + ", ".join(big_waits(o)) for o in outcomes if big]
    return [
        f"trace: {shape.nodes} nodes of {shape.node_cpu} cpu, {shape.hours:g} h, seed {seed}: "
        f"{len(big)} big gangs ({shape.big_members[0]}-{shape.big_members[1]} x "
        f"{shape.node_cpu} cpu), {len(small)} small jobs ({sum(j.members for j in small)} pods); "
        f"work offered {offered / (shape.nodes * shape.node_cpu * shape.seconds):.0%} of the "
        "cluster",
        "",
        *table(HEADER, [row(o) for o in outcomes]),
        "",
        "each big gang's wait, in arrival order (+: still waiting at the end):",
        *each,
    ]


def quiet_logs() -> None:
    """Errors only: a gang whose members end one by one is "below its minimum", a warning
    each time, and the trace has thousands."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))


def parse_variants(names: str) -> list[Variant]:
    by_name = {v.name: v for v in VARIANTS}
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in by_name]
    if unknown:
        raise ValueError(f"no such variant: {', '.join(unknown)} (known: {', '.join(by_name)})")
    return [by_name[n] for n in chosen]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.trace_sim",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    defaults = Shape()
    parser.add_argument(
        "--hours", type=float, default=defaults.hours, help="(default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=1, help="(default: %(default)s)")
    parser.add_argument("--nodes", type=int, default=defaults.nodes, help="(default: %(default)s)")
    parser.add_argument(
        "--small-per-hour",
        type=float,
        default=defaults.small_per_hour,
        help="(default: %(default)s)",
    )
    parser.add_argument(
        "--big-every",
        type=float,
        default=defaults.big_every_min,
        help="mean minutes between big gangs (default: %(default)s)",
    )
    parser.add_argument(
        "--overrun",
        type=float,
        default=defaults.overrun,
        help="share of jobs that run past their time limit (default: %(default)s)",
    )
    parser.add_argument(
        "--tick",
        type=float,
        default=5.0,
        help="simulated seconds between looks while pods wait (default: %(default)s)",
    )
    parser.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        help=f"comma-separated, of: {', '.join(v.name for v in VARIANTS)} (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    if args.hours <= 0 or args.nodes < 1 or args.tick < 1:
        parser.error("--hours must be positive, --nodes and --tick at least 1")
    try:
        variants = parse_variants(args.variants)
    except ValueError as error:
        parser.error(str(error))
    shape = replace(
        defaults,
        hours=args.hours,
        nodes=args.nodes,
        small_per_hour=args.small_per_hour,
        big_every_min=args.big_every,
        overrun=args.overrun,
    )
    quiet_logs()
    jobs = make_trace(shape, args.seed)
    outcomes = []
    for variant in variants:
        outcome = run_variant(shape, jobs, variant, args.seed, args.tick)
        say(f"{variant.name}: done, {outcome.cpu_s:.1f} s CPU")
        outcomes.append(outcome)
    print("\n".join(report_lines(shape, jobs, outcomes, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
