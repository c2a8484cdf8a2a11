"""Drives one run of the starvation scenario (see ``starvation.py`` for what and why): the
daemon is started on the plan's nodes, small pods are streamed at a fixed rate and each deleted
``small_lifetime`` after it was seen bound; after ``warmup`` the gang's members are created at
once; the run ends when all of them are bound, or ``cap`` seconds after they were created.

Progress is printed every few seconds (what is created, bound, deleted, pending; whether the
gang's members are nominated, which is the guard holding nodes for them). The figures go to the
result's notes (``window_*`` from the gang's arrival to its start or the cap, ``warm_*`` for the
steady stream before the gang) and are summed up by ``report.starvation_lines``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import aiohttp

from bench.checks import check_cluster
from bench.console import Ticker, say
from bench.daemon import BenchDaemon
from bench.procstats import CpuSampler
from bench.results import ScenarioResult, percentile, timeline
from bench.scenarios import Scenario
from bench.stage import RunContext, set_stage, settle
from bench.starvation import (
    StarvationPlan,
    due_for_deletion,
    gang_bound_at,
    is_small,
    reserve_after,
    small_pod,
    stream_figures,
)
from bench.watch import BindWatcher
from bench.workload import PodPlan, Workload
from koordgang.clients.errors import ApiError
from koordgang.clients.retry import with_retries

#: The key of the daemon in the CPU figures (as in ``measure.py``).
SCHEDULER_PROCESS = "scheduler"
#: Creations and deletions in flight at once.
IN_FLIGHT = 8
#: How often progress is printed, and how often the gang's nominations are looked at.
PROGRESS_SECONDS = 5.0
NOMINATION_POLL_SECONDS = 1.0


@dataclass
class _Stream:
    """The small pods: created at the plan's rate, deleted after their lifetime."""

    ctx: RunContext
    namespace: str
    plan: StarvationPlan
    watcher: BindWatcher
    #: pod name -> time.monotonic() when its creation was acknowledged.
    created_at: dict[str, float] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    started_at: float = 0.0
    errors: list[str] = field(default_factory=list)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    #: Creations and deletions under way.
    _requests: set[asyncio.Task[None]] = field(default_factory=set)

    def start(self) -> None:
        self.started_at = time.monotonic()
        self._tasks = [
            asyncio.create_task(self._create_loop(), name="starvation-stream"),
            asyncio.create_task(self._delete_loop(), name="starvation-deleter"),
        ]

    async def stop(self) -> None:
        """Stops creating and deleting; lets the requests under way finish."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._requests:
            await asyncio.gather(*self._requests, return_exceptions=True)

    def _launch(self, request: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(request)
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    @property
    def running(self) -> int:
        """Small pods bound and not yet deleted."""
        return sum(1 for n in self.watcher.bound_at if is_small(n) and n not in self.deleted)

    @property
    def pending(self) -> int:
        return sum(1 for n in self.created_at if n not in self.watcher.bound_at)

    async def _create_loop(self) -> None:
        slots = asyncio.Semaphore(IN_FLIGHT)
        api = self.ctx.scheduler.gang_api
        index = 0
        while True:
            # Paced against the start, so that a slow reply is made up for.
            delay = self.started_at + index / self.plan.small_rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await slots.acquire()
            plan = small_pod(index, self.plan)
            index += 1

            async def create(name: str = plan.name, pod: PodPlan = plan) -> None:
                try:
                    await self.ctx.cluster.create_pod(self.namespace, pod, api)
                    self.created_at[name] = time.monotonic()
                except (ApiError, aiohttp.ClientError, TimeoutError) as error:
                    self.errors.append(f"creating {name}: {error}")
                finally:
                    slots.release()

            self._launch(create())

    async def _delete_loop(self) -> None:
        slots = asyncio.Semaphore(IN_FLIGHT)
        while True:
            await asyncio.sleep(0.2)
            now = time.monotonic()
            for name in due_for_deletion(
                self.watcher.bound_at, self.plan.small_lifetime, now, self.deleted
            ):
                self.deleted.add(name)
                await slots.acquire()
                self._launch(self._delete(name, slots))

    async def _delete(self, name: str, slots: asyncio.Semaphore) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        try:
            await with_retries(
                lambda: self.ctx.cluster.api.request(
                    "DELETE", path, params={"gracePeriodSeconds": "0"}
                )
            )
        except ApiError as error:
            if not error.not_found:
                self.errors.append(f"deleting {name}: {error}")
        except (aiohttp.ClientError, TimeoutError) as error:
            self.errors.append(f"deleting {name}: {error}")
        finally:
            slots.release()


async def measure(
    ctx: RunContext, scenario: Scenario, workload: Workload, result: ScenarioResult
) -> None:
    """One run of the starvation scenario on koordgang with ``scenario.daemon_args``."""
    plan = scenario.starvation
    assert plan is not None
    namespace = f"bench-{scenario.name}-{ctx.run_id}-{ctx.tag}"
    members = [p.name for p in workload.pods if p.gang is not None]
    guard = reserve_after([*ctx.daemon_args, *scenario.daemon_args])
    result.notes["reserve_after_s"] = guard
    result.notes["plan"] = plan.describe()
    result.submit = f"streamed {plan.small_rate:g} pods/s"
    say(f"{scenario.name}: {plan.describe()}")
    if ctx.profile:
        say(f"{scenario.name}: no profile in this scenario (it mostly waits)")
    await set_stage(ctx, workload, namespace, create_pods=False)
    result.notes["control_plane_cores_before_start"] = await settle(ctx)

    watcher = BindWatcher(ctx.cluster, namespace)
    await watcher.start()
    sampler = ctx.sampler()
    daemon = BenchDaemon(
        ctx.kubeconfig,
        ctx.out_dir / "logs" / f"{ctx.scheduler.slug}-{scenario.name}.log",
        [*ctx.daemon_args, *scenario.daemon_args],
    )
    stream = _Stream(ctx, namespace, plan, watcher)
    gang_created: float | None = None
    gang_bound: float | None = None
    reserved_after: float | None = None
    async with aiohttp.ClientSession() as session:
        sampler.start()
        spawned = daemon.start()
        sampler.pids[SCHEDULER_PROCESS] = daemon.pid
        try:
            t0 = await daemon.wait_ready(session)
            sampler.sample()
            result.ready_after_s = round(t0 - spawned, 3)
            say(f"{scenario.name}: koordgang ready {t0 - spawned:.2f} s after start")
            stream.start()
            await _warm_up(scenario.name, plan, stream, daemon, sampler)
            gang_created = await _create_gang(ctx, namespace, workload, scenario.name)
            gang_bound, reserved_after = await _wait_for_gang(
                ctx, scenario.name, plan, stream, members, daemon, sampler, gang_created, namespace
            )
            if gang_bound is not None:
                await _run_to_cap(
                    ctx,
                    scenario.name,
                    plan,
                    stream,
                    daemon,
                    sampler,
                    members,
                    namespace,
                    gang_created,
                    gang_bound,
                )
            end = sampler.sample()
            await stream.stop()
            cpu, rss = daemon.cpu_seconds(), daemon.peak_rss_mb()
            result.daemon_cpu_s = None if cpu is None else round(cpu, 2)
            result.daemon_peak_rss_mb = None if rss is None else round(rss, 1)
            result.counters = await daemon.counters(session)
        finally:
            await stream.stop()
            stopping = time.monotonic()
            code = await daemon.stop()
            result.notes["exit_after_sigterm_s"] = round(time.monotonic() - stopping, 2)
            await sampler.stop()
            result.notes["exit_code_after_sigterm"] = code
            if code not in (0, None):
                result.problems.append(f"koordgang exited with {code} after SIGTERM")
    await watcher.stop()

    problems, _ = await check_cluster(ctx.cluster, namespace, workload.members, workload.gangs)
    result.problems += problems
    result.problems += [f"stream: {e}" for e in stream.errors[:5]]
    _sum_up(plan, stream, watcher, sampler, t0, end, gang_created, gang_bound, result)
    if reserved_after is not None:
        result.notes["gang_nominated_after_s"] = round(reserved_after, 2)
    started = gang_bound is not None
    if guard != 0 and not started:
        result.problems.append(
            f"the gang did not start in {plan.cap:.0f} s with the starvation guard on"
        )
    say(_summary(scenario.name, result))
    for problem in result.problems:
        say(f"{scenario.name}: FAIL: {problem}")


async def _warm_up(
    name: str, plan: StarvationPlan, stream: _Stream, daemon: BenchDaemon, sampler: CpuSampler
) -> None:
    """The stream alone, until ``plan.warmup`` after it started."""
    ticker = Ticker(PROGRESS_SECONDS)
    while True:
        await asyncio.sleep(0.25)
        daemon.check_alive()
        elapsed = time.monotonic() - stream.started_at
        if elapsed >= plan.warmup:
            break
        if ticker.due():
            say(
                f"{name}: stream warming up {elapsed:.0f}/{plan.warmup:.0f} s: "
                f"{_stream_state(stream)}{_cores(sampler)}"
            )
    say(f"{name}: stream steady after {plan.warmup:.0f} s: {_stream_state(stream)}")


async def _run_to_cap(
    ctx: RunContext,
    name: str,
    plan: StarvationPlan,
    stream: _Stream,
    daemon: BenchDaemon,
    sampler: CpuSampler,
    members: list[str],
    namespace: str,
    arrived: float,
    started: float,
) -> None:
    """The gang runs ``plan.gang_runtime`` seconds and finishes (its members are deleted);
    the stream goes on until ``plan.cap`` after the gang arrived, as in the run without the
    guard, so that both are measured over the same stretch."""
    say(f"{name}: the gang runs {plan.gang_runtime:.0f} s: {_stream_state(stream)}")
    ticker = Ticker(PROGRESS_SECONDS)
    finish_at = started + plan.gang_runtime
    until = arrived + plan.cap
    finished = False
    while (now := time.monotonic()) < until:
        await asyncio.sleep(0.25)
        daemon.check_alive()
        if not finished and now >= finish_at:
            finished = True
            await _finish_gang(ctx, namespace, members, stream)
            say(f"{name}: the gang finished (deleted): {_stream_state(stream)}")
        if ticker.due():
            say(
                f"{name}: {now - arrived:.0f}/{plan.cap:.0f} s since the gang arrived "
                f"({'finished' if finished else 'running'}): "
                f"{_stream_state(stream)}{_cores(sampler)}"
            )


async def _finish_gang(
    ctx: RunContext, namespace: str, members: list[str], stream: _Stream
) -> None:
    for member in members:
        path = f"/api/v1/namespaces/{namespace}/pods/{member}"
        try:
            await with_retries(
                partial(ctx.cluster.api.request, "DELETE", path, params={"gracePeriodSeconds": "0"})
            )
        except ApiError as error:
            if not error.not_found:
                stream.errors.append(f"deleting {member}: {error}")


async def _create_gang(ctx: RunContext, namespace: str, workload: Workload, name: str) -> float:
    """Creates the gang's members at once; returns when the last creation was acknowledged."""
    api = ctx.scheduler.gang_api
    try:
        await asyncio.gather(*(ctx.cluster.create_pod(namespace, p, api) for p in workload.pods))
    except ApiError as error:
        raise RuntimeError(f"creating the gang's members: {error}") from error
    created = time.monotonic()
    gang = next(iter(workload.gangs))
    say(f"{name}: gang {gang} arrived: {len(workload.pods)} members of {_cpu(workload)} cores")
    return created


async def _wait_for_gang(
    ctx: RunContext,
    name: str,
    plan: StarvationPlan,
    stream: _Stream,
    members: list[str],
    daemon: BenchDaemon,
    sampler: CpuSampler,
    arrived: float,
    namespace: str,
) -> tuple[float | None, float | None]:
    """Until the gang is bound or the cap; returns when it was bound and when its members were
    first seen nominated (seconds after its arrival; None: never)."""
    ticker = Ticker(PROGRESS_SECONDS)
    next_poll = 0.0
    nominated_after: float | None = None
    nominated_nodes = 0
    while True:
        await stream.watcher.wait_for_bind(timeout=0.25)
        daemon.check_alive()
        now = time.monotonic()
        bound = gang_bound_at(stream.watcher.bound_at, members)
        if bound is not None:
            say(
                f"{name}: gang started: all {len(members)} bound {bound - arrived:.1f} s after it "
                "arrived"
            )
            return bound, nominated_after
        if now - arrived >= plan.cap:
            say(f"{name}: gang not started after {plan.cap:.0f} s; giving up")
            return None, nominated_after
        if now >= next_poll:
            next_poll = now + NOMINATION_POLL_SECONDS
            nominated_nodes = await _nominated_nodes(ctx, namespace, members)
            if nominated_nodes and nominated_after is None:
                nominated_after = time.monotonic() - arrived
                say(
                    f"{name}: gang members nominated to {nominated_nodes} nodes "
                    f"{nominated_after:.1f} s after the gang arrived (nodes held for it)"
                )
        if ticker.due():
            gang_bound = sum(1 for m in members if m in stream.watcher.bound_at)
            say(
                f"{name}: {now - arrived:.0f}/{plan.cap:.0f} s since the gang arrived: gang "
                f"{gang_bound}/{len(members)} bound, nominated to {nominated_nodes} nodes; "
                f"{_stream_state(stream)}{_cores(sampler)}"
            )


async def _nominated_nodes(ctx: RunContext, namespace: str, members: list[str]) -> int:
    """How many nodes the gang's members are nominated to (status.nominatedNodeName)."""
    try:
        pods, _ = await ctx.cluster.list_all(f"/api/v1/namespaces/{namespace}/pods")
    except (ApiError, aiohttp.ClientError, TimeoutError):
        return 0
    wanted = set(members)
    nodes = {
        (p.get("status") or {}).get("nominatedNodeName")
        for p in pods
        if (p.get("metadata") or {}).get("name") in wanted
    }
    nodes.discard(None)
    nodes.discard("")
    return len(nodes)


def _sum_up(
    plan: StarvationPlan,
    stream: _Stream,
    watcher: BindWatcher,
    sampler: CpuSampler,
    t0: float,
    end: float,
    gang_created: float | None,
    gang_bound: float | None,
    result: ScenarioResult,
) -> None:
    bound_at = watcher.bound_at
    result.pods = len(stream.created_at) + plan.gang_size
    result.expected = result.pods
    result.bound = len(bound_at)
    result.binds_seen = len(bound_at)
    first = watcher.first_bind()
    if first is not None:
        result.first_bind_after_ready_s = round(first - t0, 3)
    result.cores = sampler.cores(t0, end)
    result.window_s = round(end - t0, 3)
    result.timeline = timeline(bound_at.values(), t0)
    result.notes["small_created"] = len(stream.created_at)
    result.notes["small_deleted"] = len(stream.deleted)
    result.notes["gang_started"] = gang_bound is not None
    if gang_created is None:
        return
    if gang_bound is not None:
        wait = round(gang_bound - gang_created, 2)
        result.notes["gang_wait_s"] = wait
        result.gang_latency_p50_s = result.gang_latency_p99_s = wait
        result.gangs_complete = 1
        result.time_to_done_s = round(gang_bound - t0, 2)
    window_end = gang_bound if gang_bound is not None else end
    window = stream_figures(stream.created_at, bound_at, gang_created, window_end, end)
    result.notes.update(window.as_notes("window"))
    capped = stream_figures(
        stream.created_at, bound_at, gang_created, min(end, gang_created + plan.cap), end
    )
    result.notes.update(capped.as_notes("cap"))
    # The stream before the gang, for comparison.
    warm = stream_figures(stream.created_at, bound_at, stream.started_at, gang_created, end)
    result.notes.update(warm.as_notes("warm"))
    latencies = [max(0.0, bound_at[n] - c) for n, c in stream.created_at.items() if n in bound_at]
    p50 = percentile(latencies, 0.5)
    result.notes["all_small_latency_p50_s"] = None if p50 is None else round(p50, 3)


def _summary(name: str, result: ScenarioResult) -> str:
    notes = result.notes
    wait = notes.get("gang_wait_s")
    gang = f"gang waited {wait:.1f} s" if wait is not None else "gang not started"
    cpu_ms = None
    if result.binds_seen and result.window_s:
        cpu_ms = 1000 * result.cores.get(SCHEDULER_PROCESS, 0.0) * result.window_s
        cpu_ms /= result.binds_seen
    return (
        f"{name}: {gang}; small pods in the window ({notes.get('window_window_s')} s): "
        f"{notes.get('window_small_bound')} bound, {notes.get('window_small_pods_per_s')}/s, "
        f"mean create->bound of those created in it {notes.get('window_small_latency_mean_s')} s, "
        f"{notes.get('window_small_pending_at_end')} pending at its end, "
        f"{notes.get('window_small_unbound_at_run_end')} at the run's end (stream before: "
        f"{notes.get('warm_small_pods_per_s')}/s, {notes.get('warm_small_latency_mean_s')} s); "
        f"koordgang CPU {result.daemon_cpu_s} s"
        + ("" if cpu_ms is None else f", {cpu_ms:.2f} CPU ms per bound pod")
        + f", peak RSS {result.daemon_peak_rss_mb} MB"
    )


def _stream_state(stream: _Stream) -> str:
    return (
        f"{len(stream.created_at)} small pods created, "
        f"{sum(1 for n in stream.watcher.bound_at if is_small(n))} bound, "
        f"{len(stream.deleted)} deleted, {stream.running} running, {stream.pending} pending"
    )


def _cores(sampler: CpuSampler) -> str:
    cores = sampler.recent(1.0)
    return (
        f" (koordgang {cores.get(SCHEDULER_PROCESS, 0.0):.2f} cores, "
        f"apiserver {cores.get('kube-apiserver', 0.0):.2f})"
    )


def _cpu(workload: Workload) -> str:
    return workload.pods[0].requests.cpu if workload.pods else "?"
