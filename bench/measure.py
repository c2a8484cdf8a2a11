"""One scenario on one scheduler, measured: stage, start the scheduler, follow the binds, stop,
check, sum up.

t0 is when the scheduler's /readyz first answers 200 (koordgang: its informer has listed pods
and nodes; koord-scheduler, which has no /readyz: /healthz); rates are bound pods /
(last bind - t0). The scheduler's CPU time and peak RSS are read from /proc just before it is
stopped. koordgang is called "the daemon" below; a peer is measured the same way.
"""

from __future__ import annotations

import asyncio
import copy
import json
import statistics
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import aiohttp

from bench import (
    apiserver_stats,
    coexist_run,
    dra_check,
    dra_forms_check,
    dry_run,
    gather_time,
    starvation_run,
)
from bench.apiserver_profile import GC_KEY, SAMPLED_KEY, ApiServerProfiler, summarise
from bench.checks import check_cluster
from bench.console import Ticker, say
from bench.daemon import BenchDaemon, DaemonFailed, SchedulerProcess
from bench.gang_api import GangApi
from bench.peers.process import PeerProcess
from bench.peers.reasons import peer_reasons
from bench.procstats import CpuSampler
from bench.profiling import Profiler, top_entries
from bench.results import (
    ScenarioResult,
    gang_completions,
    is_koordgang,
    kept_repeat,
    percentile,
    reference_rate,
    set_share_of_ceiling,
    timeline,
)
from bench.scenarios import BLOCK, SPINE, Finish, Scenario
from bench.stage import RunContext, filler_namespace, set_stage, settle, settle_limit
from bench.streaming import Streamer
from bench.watch import BindWatcher, ScheduledEvents
from bench.workload import PodPlan, Workload

#: The key of the scheduler under test in the CPU figures (koordgang or a peer).
SCHEDULER_PROCESS = "scheduler"
#: A cluster-full scenario is over after this long without a bind (when fewer than the
#: cluster's capacity got bound). Long enough for a peer at its shipped 50 QPS, whose gangs
#: bind in bursts seconds apart; the rate is taken at the last bind, so waiting costs no figure.
QUIET_SECONDS = 20.0
#: Any scenario is given up after this long without a bind.
STALL_SECONDS = 60.0
#: ... or after this long in all.
TIME_LIMIT_SECONDS = 1200.0


async def run_scenario(ctx: RunContext, scenario: Scenario, skip: str = "") -> ScenarioResult:
    """Measures ``scenario`` on ``ctx.scheduler``, or records why it was not (``skip``, or the
    scheduler's own reason)."""
    workload = scenario.build(ctx.scale)
    result = ScenarioResult(
        name=scenario.name,
        summary=scenario.summary,
        finish=scenario.finish.value,
        nodes=len(workload.nodes),
        pods=len(workload.pods),
        gangs=len(workload.gangs),
        expected=workload.expected_bound,
        notes=dict(workload.notes),
        reference=scenario.reference,
        reference_pods_per_s=scenario.reference_pods_per_s,
        scheduler=ctx.scheduler.label,
        scheduler_version=ctx.scheduler.version(),
        crds=list(ctx.crds),
        gang_api=ctx.scheduler.gang_api_for(scenario).value if scenario.gangs else "",
        submit=(
            "prebuilt"
            if scenario.stream_rate is None
            else f"streamed {scenario.stream_rate:g} pods/s"
        ),
    )
    if workload.fillers:
        result.notes["fillers"] = len(workload.fillers)
    skipped = skip or ctx.scheduler.skip_reason(scenario)
    if skipped:
        result.skipped = skipped
        say(f"=== {scenario.name} on {result.scheduler}: n/a ({skipped})")
        return result
    say(
        f"=== {scenario.name} on {result.scheduler}: {scenario.summary} -- here "
        f"{result.nodes} nodes, "
        f"{result.pods} pods, {result.gangs} gangs"
        + (f", {len(workload.fillers)} bound fillers" if workload.fillers else "")
    )
    try:
        if scenario.starvation is not None:
            await starvation_run.measure(ctx, scenario, workload, result)
        elif scenario.coexist is not None:
            await coexist_run.measure(ctx, scenario, workload, result)
        elif scenario.repeats > 1:
            await _measure_repeated(ctx, scenario, workload, result)
        else:
            await _measure(ctx, scenario, workload, result)
    except (DaemonFailed, RuntimeError, OSError, aiohttp.ClientError) as error:
        result.problems.append(f"run failed: {error}")
        say(f"{scenario.name}: FAILED to run: {error}")
        traceback.print_exc()
    return result


async def _measure_repeated(
    ctx: RunContext, scenario: Scenario, workload: Workload, result: ScenarioResult
) -> None:
    """``scenario.repeats`` measurements, each from a fresh stage; the median one by pods/s is
    kept whole (its timeline, cores and counters belong together), the others' pods/s go in
    the notes. A repeat with a problem ends the series and is the one kept."""
    tries: list[ScenarioResult] = []
    for index in range(scenario.repeats):
        say(f"{scenario.name}: measurement {index + 1} of {scenario.repeats}")
        attempt = copy.deepcopy(result)
        await _measure(ctx, scenario, workload, attempt, repeat=index + 1)
        tries.append(attempt)
        if attempt.problems:
            break
    kept = kept_repeat(tries)
    for spec in fields(result):
        setattr(result, spec.name, getattr(kept, spec.name))
    result.notes["repeats_pods_per_s"] = [t.pods_per_s for t in tries]
    say(
        f"{scenario.name}: kept the median of "
        + ", ".join(f"{t.pods_per_s or 0:.0f}" for t in tries)
        + " pods/s"
    )


async def _measure(
    ctx: RunContext,
    scenario: Scenario,
    workload: Workload,
    result: ScenarioResult,
    *,
    repeat: int = 0,
) -> None:
    # A repeat has a namespace of its own: the last one's may still be terminating.
    namespace = f"bench-{scenario.name}-{ctx.run_id}-{ctx.tag}" + (f"-r{repeat}" if repeat else "")
    fill = filler_namespace(scenario.name, ctx.run_id)
    streamed = scenario.stream_rate is not None
    await set_stage(
        ctx,
        workload,
        namespace,
        fill,
        create_pods=not streamed,
        gang_api=ctx.scheduler.gang_api_for(scenario),
    )
    at_rest = await settle(ctx, limit=settle_limit(len(workload.fillers)))
    result.notes["control_plane_cores_before_start"] = at_rest

    watcher = BindWatcher(ctx.cluster, namespace)
    await watcher.start()
    # A run writing every Scheduled Event (as the peers do) ends when the last is written.
    scheduled = ScheduledEvents(ctx.cluster, namespace) if ctx.scheduler.every_event else None
    if scheduled is not None:
        await scheduled.start()
    sampler = ctx.sampler()
    daemon = _scheduler_process(ctx, scenario)
    profiler: Profiler | None = None
    api_profiler: ApiServerProfiler | None = None
    streamer: Streamer | None = None
    end = time.monotonic()
    async with aiohttp.ClientSession() as session:
        api_before = await apiserver_stats.read(ctx.cluster)
        sampler.start()
        spawned = daemon.start()
        sampler.pids[SCHEDULER_PROCESS] = daemon.pid
        try:
            startup = scenario.finish is Finish.FIRST_BIND
            if ctx.profile and startup:
                profiler = await _start_profiler(ctx, scenario, daemon)
            t0 = await daemon.wait_ready(session)
            sampler.sample()
            result.ready_after_s = round(t0 - spawned, 3)
            say(f"{scenario.name}: {daemon.name} ready {t0 - spawned:.2f} s after start")
            if ctx.profile and not startup:
                profiler = await _start_profiler(ctx, scenario, daemon)
            if ctx.apiserver_profile:
                api_profiler = ApiServerProfiler(
                    ctx.cluster,
                    ctx.out_dir / "profiles",
                    f"apiserver-{ctx.scheduler.slug}-{scenario.name}"
                    + (f"-r{repeat}" if repeat else ""),
                )
                api_profiler.start()
            if scenario.stream_rate is not None:
                streamer = Streamer(ctx, namespace, workload, scenario.stream_rate)
                streamer.start()
            try:
                problem = await _follow(scenario, workload, watcher, daemon, sampler, t0)
            finally:
                if streamer is not None:
                    await streamer.stop()
            if scheduled is not None and not problem:
                problem = await _await_events(scheduled, watcher, daemon)
            end = sampler.sample()
            if profiler is not None:
                profiler.stop()
            api_window = apiserver_stats.window(api_before, await apiserver_stats.read(ctx.cluster))
            if api_window:
                result.notes["apiserver"] = api_window
            if api_profiler is not None:  # after the reads of the window: it ends past it
                await _apiserver_profile(api_profiler, result)
            if problem:
                result.problems.append(problem)
            cpu = daemon.cpu_seconds()
            rss = daemon.peak_rss_mb()
            result.daemon_cpu_s = None if cpu is None else round(cpu, 2)
            result.daemon_peak_rss_mb = None if rss is None else round(rss, 1)
            result.counters = await daemon.counters(session)
        finally:
            if api_profiler is not None:
                await api_profiler.stop()  # a window that failed still ends its profiling
            stopping = time.monotonic()
            code = await daemon.stop()
            result.notes["exit_after_sigterm_s"] = round(time.monotonic() - stopping, 2)
            await sampler.stop()
            result.notes["exit_code_after_sigterm"] = code
            # koordgang must exit cleanly; the kube-scheduler based peers exit 1 after SIGTERM
            # when they run without leader election ("finished without leader elect").
            if code not in (0, None) and isinstance(daemon, BenchDaemon):
                result.problems.append(f"{daemon.name} exited with {code} after SIGTERM")
    if profiler is not None:
        await profiler.finish()
        result.profile_top = top_entries(profiler.output)
    await watcher.stop()
    if scheduled is not None:
        await scheduled.stop()

    if "victims_minimum" in workload.notes:
        await _preemption_figures(ctx, workload, fill, daemon.log_path, result)
    problems, final_pods = await check_cluster(
        ctx.cluster, namespace, workload.members, workload.gangs, workload.composites
    )
    result.problems += problems
    dra_problems: list[str] = []
    if workload.dra is not None:
        checker = dra_forms_check if workload.dra.check == "dra-forms" else dra_check
        dra_problems = await checker.read_and_check(ctx.kubeconfig, namespace, workload)
        result.problems += dra_problems
        say(
            f"{scenario.name} on {result.scheduler}: DRA check "
            + ("passed" if not dra_problems else f"FAILED ({len(dra_problems)} problems)")
        )
    if workload.notes.get("placement_quality"):
        _placement_quality(workload, final_pods, result)
        if scenario.name == "topology":
            seconds, placed = await asyncio.to_thread(gather_time.measure, 4096, 256)
            result.notes["gather_ms_256_members_4096_nodes"] = round(seconds * 1000, 1)
            say(
                f"topology: gather for one job of 256 on 4,096 nodes (in process): "
                f"{seconds * 1000:.0f} ms, {placed} members placed"
            )
    result.bound = sum(1 for p in final_pods if (p.get("spec") or {}).get("nodeName"))
    _sum_up(ctx, workload, watcher, sampler, spawned, t0, end, result, scheduled)
    if workload.dra is not None and result.problems:
        dra_check.withhold(result)
    if streamer is not None:
        _stream_latency(workload, watcher, streamer, result)
    if result.problems and not is_koordgang(result.scheduler):
        result.notes["scheduler_says"] = peer_reasons(daemon.log_path)


def _scheduler_process(ctx: RunContext, scenario: Scenario) -> SchedulerProcess:
    logs = ctx.out_dir / "logs"
    scheduler = ctx.scheduler
    if is_koordgang(scheduler.label):
        return BenchDaemon(
            ctx.kubeconfig,
            logs / f"{scheduler.slug}-{scenario.name}.log",
            [*ctx.daemon_args, *scheduler.daemon_args, *scenario.daemon_args],
        )
    return PeerProcess(
        scheduler.name,
        ctx.binaries[scheduler.name],
        ctx.sources.get(scheduler.name),
        ctx.kubeconfig,
        logs / f"{scheduler.slug}-{scenario.name}.log",
        scheduler.qps,
        scheduler.ready_path,
        # Its job-level preemption and topology placement only where the scenario asks for
        # them: elsewhere it runs its release's profile as shipped.
        job_features=scheduler.name in scenario.peers,
        upstream_gangs=scheduler.gang_api_for(scenario) is GangApi.UPSTREAM,
    )


def _stream_latency(
    workload: Workload, watcher: BindWatcher, streamer: Streamer, result: ScenarioResult
) -> None:
    latencies: list[float] = []
    for gang, names in workload.members.items():
        created = streamer.last_created.get(gang)
        times = sorted(watcher.bound_at[n] for n in names if n in watcher.bound_at)
        if created is None or len(times) < workload.gangs[gang]:
            continue
        latencies.append(max(0.0, times[workload.gangs[gang] - 1] - created))
    p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
    result.gang_latency_p50_s = None if p50 is None else round(p50, 3)
    result.gang_latency_p99_s = None if p99 is None else round(p99, 3)
    result.notes["streamed_pods_per_s"] = round(streamer.achieved_rate(), 1)
    say(
        f"{result.name}: gang latency (last member created -> minimum bound) P50 "
        f"{result.gang_latency_p50_s} s, P99 {result.gang_latency_p99_s} s; pods created at "
        f"{streamer.achieved_rate():.0f}/s"
    )


async def _apiserver_profile(profiler: ApiServerProfiler, result: ScenarioResult) -> None:
    """The API server's profiles of this window: the collector's share in the notes."""
    paths = await profiler.stop()
    share = await summarise(paths)
    if isinstance(share, str):
        result.notes["apiserver_profile"] = profiler.problem or share
        say(f"{result.name}: API server profile: {profiler.problem or share}")
        return
    sampled, collector = share
    result.notes[SAMPLED_KEY] = round(sampled, 2)
    result.notes[GC_KEY] = round(collector, 2)
    say(
        f"{result.name}: API server profile ({len(paths)} s from readiness): "
        f"{sampled:.2f} CPU s sampled, {collector:.2f} s of it collecting garbage"
    )


async def _start_profiler(
    ctx: RunContext, scenario: Scenario, daemon: SchedulerProcess
) -> Profiler | None:
    if not isinstance(daemon, BenchDaemon):
        return None  # py-spy samples Python processes only
    # koordgang's own run keeps the plain name; a variant's profile is prefixed with its label.
    name = scenario.name if not ctx.scheduler.variant else f"{ctx.scheduler.slug}-{scenario.name}"
    profiler = Profiler(daemon.pid, ctx.out_dir / "profiles" / f"{name}.txt")
    if await profiler.start():
        return profiler
    say("py-spy could not attach (is it installed? pip install -e '.[bench]'): no profile")
    return None


#: Seconds a run writing every Scheduled Event gets, after its last bind, to write the rest.
EVENTS_WITHIN = 60.0


async def _await_events(
    scheduled: ScheduledEvents, watcher: BindWatcher, daemon: SchedulerProcess
) -> str | None:
    """Waits until every bound pod's Scheduled Event is seen; says so if they do not come."""
    deadline = time.monotonic() + EVENTS_WITHIN
    ticker = Ticker()
    while scheduled.count < watcher.count:
        if time.monotonic() >= deadline:
            return (
                f"Scheduled Events: {scheduled.count} of {watcher.count} bound pods have one "
                f"{EVENTS_WITHIN:.0f} s after the last bind"
            )
        await scheduled.wait_for_bind(timeout=0.25)
        daemon.check_alive()
        if ticker.due():
            say(f"Scheduled Events written: {scheduled.count}/{watcher.count}")
    say(f"Scheduled Events written: {scheduled.count}/{watcher.count}")
    return None


async def _follow(
    scenario: Scenario,
    workload: Workload,
    watcher: BindWatcher,
    daemon: SchedulerProcess,
    sampler: CpuSampler,
    t0: float,
) -> str | None:
    """Prints progress until the scenario is over; returns what went wrong, if anything."""
    expected = workload.expected_bound
    ticker = Ticker()
    last_count, last_change = watcher.count, t0
    shown_count, shown_at = watcher.count, t0
    while True:
        await watcher.wait_for_bind(timeout=0.25)
        daemon.check_alive()
        now = time.monotonic()
        count = watcher.count
        if count != last_count:
            last_count, last_change = count, now
        if ticker.due():
            rate = (count - shown_count) / (now - shown_at) if now > shown_at else 0.0
            shown_count, shown_at = count, now
            cores = sampler.recent(1.0)
            say(
                f"scenario {scenario.name}: {count}/{expected} bound, {rate:.0f} pods/s "
                f"({daemon.name} {cores.get(SCHEDULER_PROCESS, 0.0):.2f} cores, "
                f"apiserver {cores.get('kube-apiserver', 0.0):.2f}, "
                f"etcd {cores.get('etcd', 0.0):.2f}, others {cores.get('others', 0.0):.2f})"
            )
        if scenario.finish is Finish.ALL_BOUND and count >= len(workload.pods):
            break
        if scenario.finish is Finish.FIRST_BIND and count >= 1:
            break
        if scenario.finish is Finish.CLUSTER_FULL and (
            count >= expected or (count > 0 and now - last_change >= QUIET_SECONDS)
        ):
            break
        if now - last_change >= STALL_SECONDS:
            return f"stalled: no bind for {STALL_SECONDS:.0f} s at {count}/{expected} bound"
        if now - t0 >= TIME_LIMIT_SECONDS:
            return f"time limit: {count}/{expected} bound after {TIME_LIMIT_SECONDS:.0f} s"
    say(f"scenario {scenario.name}: {watcher.count}/{expected} bound -- {scenario.finish.value}")
    return None


def _sum_up(
    ctx: RunContext,
    workload: Workload,
    watcher: BindWatcher,
    sampler: CpuSampler,
    spawned: float,
    t0: float,
    end: float,
    result: ScenarioResult,
    scheduled: ScheduledEvents | None = None,
) -> None:
    bound_at = watcher.bound_at
    result.binds_seen = len(bound_at)
    first, last = watcher.first_bind(), watcher.last_bind()
    if scheduled is not None:
        # The run's work includes a Scheduled Event per bound pod: it is done with the last.
        written = scheduled.last_bind()
        result.notes["scheduled_events"] = scheduled.count
        if written is not None and last is not None:
            result.notes["last_event_after_last_bind_s"] = round(written - last, 3)
            last = max(last, written)
    if first is not None:
        result.first_bind_after_start_s = round(first - spawned, 3)
        result.first_bind_after_ready_s = round(first - t0, 3)
    finished = not any(
        p.startswith(("stalled", "time limit", "run failed")) for p in result.problems
    )
    if last is not None and last > t0:
        if len(bound_at) > 1:
            result.pods_per_s = round(len(bound_at) / (last - t0), 1)
        if finished:
            result.time_to_done_s = round(last - t0, 2)
    # Against the ceilings measured so far; the report recomputes it with all of them.
    set_share_of_ceiling(result, reference_rate(ctx.ceilings))
    completions = [t - t0 for t in gang_completions(bound_at, workload.members, workload.gangs)]
    result.gangs_complete = len(completions)
    p50, p99 = percentile(completions, 0.50), percentile(completions, 0.99)
    result.gang_p50_s = None if p50 is None else round(p50, 2)
    result.gang_p99_s = None if p99 is None else round(p99, 2)
    # Start-up is about the time before t0; everything else about the time after it.
    since = spawned if result.finish == Finish.FIRST_BIND.value else t0
    result.cores = sampler.cores(since, end)
    result.window_s = round(end - since, 3)
    result.timeline = timeline(bound_at.values(), t0)
    summary = (
        f"{scenario_line(result)}; {result.scheduler} CPU {result.daemon_cpu_s} s, "
        f"peak RSS {result.daemon_peak_rss_mb} MB, exited "
        f"{result.notes.get('exit_after_sigterm_s')} s after SIGTERM"
    )
    say(summary)
    for problem in result.problems:
        say(f"{result.name}: FAIL: {problem}")


def scenario_line(result: ScenarioResult) -> str:
    parts = [f"{result.name} on {result.scheduler}: {result.bound}/{result.expected} bound"]
    if result.pods_per_s is not None:
        parts.append(f"{result.pods_per_s:.0f} pods/s")
    if result.pct_of_ceiling is not None:
        parts.append(f"{result.pct_of_ceiling:.0f}% of ceiling")
    if result.time_to_done_s is not None:
        parts.append(f"done after {result.time_to_done_s:.1f} s")
    if result.gang_p99_s is not None:
        parts.append(f"gang P50 {result.gang_p50_s} s / P99 {result.gang_p99_s} s")
    if result.first_bind_after_start_s is not None:
        parts.append(f"first bind {result.first_bind_after_start_s:.2f} s after start")
    return ", ".join(parts)


async def _preemption_figures(
    ctx: RunContext, workload: Workload, fill: str, log_path: Path, result: ScenarioResult
) -> None:
    """Victims evicted against the least possible number, and the dry-run time per job (from
    the daemon's ``preempting`` log lines)."""
    listed, _ = await ctx.cluster.list_all(f"/api/v1/namespaces/{fill}/pods", names_only=True)
    remaining = {
        (p.get("metadata") or {}).get("name", "")
        for p in listed
        if not (p.get("metadata") or {}).get("deletionTimestamp")
    }
    victims = victim_counts(workload.fillers, remaining)
    result.notes.update(
        victims_evicted=victims.evicted,
        victims_in_running_gangs=victims.gang_members,
        running_gangs_broken=victims.gangs_broken,
        running_gangs_evicted_whole=victims.gangs_whole,
    )
    say(
        f"preemption on {result.scheduler}: {victims.evicted} victims evicted (least possible "
        f"{workload.notes['victims_minimum']}), {victims.gang_members} of them members of "
        f"running gangs: {victims.gangs_broken} gang(s) broken (left below their minimum), "
        f"{victims.gangs_whole} evicted whole"
    )
    if not is_koordgang(result.scheduler):
        return
    dry_runs = dry_run_times(log_path)
    result.notes["preemptions"] = len(dry_runs)
    if dry_runs:
        result.notes["dry_run_ms_median"] = round(statistics.median(dry_runs), 1)
        result.notes["dry_run_ms_max"] = round(max(dry_runs), 1)
    seconds, in_process = await asyncio.to_thread(dry_run.measure, 4096, 256)
    result.notes["dry_run_ms_256_members_4096_nodes"] = round(seconds * 1000, 1)
    result.notes["dry_run_victims_256_members_4096_nodes"] = in_process
    say(
        f"preemption: dry run of one job of 256 on 4,096 nodes (in process): "
        f"{seconds * 1000:.0f} ms, {in_process} victims (least possible 256)"
    )
    say(
        f"preemption: {len(dry_runs)} preemptions, dry run median "
        f"{result.notes.get('dry_run_ms_median')} ms, max {result.notes.get('dry_run_ms_max')} ms"
    )


@dataclass(frozen=True)
class VictimCounts:
    evicted: int
    #: Of those, members of running gangs.
    gang_members: int
    #: Running gangs that lost some members but not all: left running below their minimum.
    gangs_broken: int
    #: Running gangs all of whose members were evicted.
    gangs_whole: int


def victim_counts(fillers: Sequence[PodPlan], remaining: set[str]) -> VictimCounts:
    """What preemption took from the pods that were running before: ``remaining`` are the
    names still there."""
    gone = [plan for plan in fillers if plan.name not in remaining]
    size: Counter[str] = Counter(p.gang.name for p in fillers if p.gang is not None)
    lost: Counter[str] = Counter(p.gang.name for p in gone if p.gang is not None)
    return VictimCounts(
        evicted=len(gone),
        gang_members=sum(lost.values()),
        gangs_broken=sum(1 for gang, n in lost.items() if n < size[gang]),
        gangs_whole=sum(1 for gang, n in lost.items() if n == size[gang]),
    )


def dry_run_times(log_path: Path) -> list[float]:
    """Milliseconds of each preemption dry run, from the daemon's JSON log."""
    times: list[float] = []
    for line in log_path.read_text(errors="replace").splitlines():
        if '"preempting"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == "preempting" and "dry_run_ms" in record:
            times.append(float(record["dry_run_ms"]))
    return times


def _placement_quality(
    workload: Workload, final_pods: list[dict[str, Any]], result: ScenarioResult
) -> None:
    """The share of jobs whose members all run inside one block, and inside one spine."""
    where = {n.name: (n.labels.get(SPINE, ""), n.labels.get(BLOCK, "")) for n in workload.nodes}
    gang_of = {pod: gang for gang, names in workload.members.items() for pod in names}
    spines: dict[str, set[str]] = defaultdict(set)
    blocks: dict[str, set[str]] = defaultdict(set)
    for pod in final_pods:
        node = (pod.get("spec") or {}).get("nodeName")
        gang = gang_of.get((pod.get("metadata") or {}).get("name", ""))
        if not node or not gang or node not in where:
            continue
        spines[gang].add(where[node][0])
        blocks[gang].add(where[node][1])
    jobs = len(workload.gangs) or 1
    in_block = sum(1 for g in blocks.values() if len(g) == 1)
    in_spine = sum(1 for g in spines.values() if len(g) == 1)
    result.notes["jobs_in_one_block_pct"] = round(100 * in_block / jobs, 1)
    result.notes["jobs_in_one_spine_pct"] = round(100 * in_spine / jobs, 1)
    say(
        f"{result.name}: {in_block}/{jobs} jobs inside one block, {in_spine}/{jobs} inside "
        "one spine"
    )
