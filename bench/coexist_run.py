"""Drives the coexist scenario (see ``coexist.py`` for what and why): kube-scheduler of the pinned
release runs the whole time (default profile, client QPS raised), on the scenario's nodes; each
round starts koordgang (as it ships, or with a variant's switches: ``coexist_daemon.py``),
creates both schedulers' pods interleaved, waits until no binding has come for a few seconds,
reads the final state, stops koordgang and deletes the pods. Rounds rotate which variant goes
first, so that none has the cluster's warmer or colder moments to itself."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import aiohttp

from bench.cluster import BenchCluster
from bench.coexist import (
    FLAGS,
    KUBE_SCHEDULER_NAME,
    VARIANTS,
    CoexistPlan,
    RoundFigures,
    round_figures,
    sum_up,
)
from bench.coexist_window import binding_totals, overfills, window
from bench.console import say
from bench.daemon import BenchDaemon
from bench.results import ScenarioResult
from bench.scenarios import Scenario
from bench.stage import RunContext, set_stage, settle
from bench.watch import BindWatcher
from bench.workload import Workload
from harness.clients.kube_scheduler import KubeScheduler

#: How often a round looks at the bindings.
POLL_SECONDS = 0.5
#: Members whose binding was given up before it was sent: with nothing to write first, only
#: the re-check of the gang's nodes refuses them.
REFUSED = "koordgang_binds{result=prebind}"


class CoexistDaemon(BenchDaemon):
    """koordgang with the switches of its variant, keeping a record of the window
    (``coexist_daemon.py``)."""

    def __init__(self, ctx: RunContext, variant: str, index: int) -> None:
        name = f"koordgang-coexist-{variant}-{index:02d}"
        super().__init__(ctx.kubeconfig, ctx.out_dir / "logs" / f"{name}.log", ctx.daemon_args)
        self.variant = variant
        self.record_path = ctx.out_dir / "logs" / f"{name}.window.json"

    def argv(self) -> list[str]:
        argv = super().argv()
        at = argv.index("koordgang")
        argv[at : at + 1] = ["bench.coexist_daemon", str(self.record_path), self.variant]
        return [*argv, *FLAGS.get(self.variant, ())]

    def record(self) -> dict[str, dict[str, float]]:
        """What the daemon wrote when it exited (nothing if it did not)."""
        try:
            found = json.loads(self.record_path.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}


async def measure(
    ctx: RunContext, scenario: Scenario, workload: Workload, result: ScenarioResult
) -> None:
    plan = scenario.coexist
    assert plan is not None
    namespace = f"bench-coexist-{ctx.run_id}"
    await set_stage(ctx, workload, namespace, create_pods=False)
    await settle(ctx)
    kube = KubeScheduler(
        ctx.kubeconfig,
        ctx.out_dir / "logs" / "kube-scheduler-coexist.log",
        binary=ctx.binaries.get("kube-scheduler"),
    )
    await asyncio.to_thread(kube.start, 180.0)
    say(f"kube-scheduler ready (log {kube.log_path})")
    rounds: list[RoundFigures] = []
    began = time.monotonic()
    try:
        for index in range(plan.rounds):
            turn = index % len(VARIANTS)
            for variant in VARIANTS[turn:] + VARIANTS[:turn]:
                figures = await _round(ctx, plan, workload, namespace, variant, index)
                say(f"coexist round {index + 1}/{plan.rounds} {figures.line()}")
                rounds.append(figures)
    finally:
        await asyncio.to_thread(kube.stop)
    result.window_s = round(time.monotonic() - began, 1)
    sum_up(rounds, result)
    for variant in VARIANTS:
        say(
            f"coexist {variant}: {result.notes.get(f'{variant}_overcommitted_nodes')} "
            f"over-committed nodes in {result.notes.get(f'{variant}_pods')} pods "
            f"({result.notes.get(f'{variant}_per_1000_pods')} per 1,000)"
        )


async def _round(
    ctx: RunContext,
    plan: CoexistPlan,
    workload: Workload,
    namespace: str,
    variant: str,
    index: int,
) -> RoundFigures:
    cluster = ctx.cluster
    await cluster.delete_bench_pods()
    daemon = CoexistDaemon(ctx, variant, index)
    watcher = BindWatcher(cluster, namespace)
    daemon.start()
    try:
        async with aiohttp.ClientSession() as session:
            await daemon.wait_ready(session)
            await watcher.start()
            before = await _binding_totals(cluster)
            began = time.monotonic()
            label = f"round {index + 1} {variant}: pods"
            await cluster.create_pods(namespace, workload.pods, label)
            await _wait_quiet(cluster, namespace, plan)
            seconds = time.monotonic() - began
            daemon.check_alive()
            counters = await daemon.counters(session)
            after = await _binding_totals(cluster)
    finally:
        await watcher.stop()
        code = await daemon.stop()
    if code not in (0, None):
        print(f"koordgang ({variant}) exited with {code}; log {daemon.log_path}", file=sys.stderr)
    nodes, _ = await cluster.list_all("/api/v1/nodes")
    pods, _ = await cluster.list_all(f"/api/v1/namespaces/{namespace}/pods")
    refused = int(counters.get(REFUSED, 0))
    theirs = {p.name for p in workload.pods if p.scheduler == KUBE_SCHEDULER_NAME}
    record = daemon.record()
    samples = window(record, watcher.bound_at, theirs.__contains__)
    node_of = {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in pods
        if (p.get("spec") or {}).get("nodeName")
    }
    # 1 cpu a pod: a node holds as many as its cpus.
    room = {n["metadata"]["name"]: int(n["status"]["allocatable"]["cpu"]) for n in nodes}
    samples.update(overfills(record, watcher.bound_at, theirs.__contains__, node_of, room))
    ours = [at for name, at in watcher.bound_at.items() if name not in theirs]
    span = max(ours) - min(ours) if len(ours) > 1 else 0.0
    rate = len(ours) / span if span > 0 else 0.0
    spent = (after[0] - before[0], after[1] - before[1])
    return round_figures(variant, workload, nodes, pods, seconds, refused, samples, rate, spent)


async def _binding_totals(cluster: BenchCluster) -> tuple[float, float]:
    status, raw = await cluster.get_raw("/metrics", "text/plain", 30.0)
    return binding_totals(raw.decode()) if status == 200 else (0.0, 0.0)


async def _wait_quiet(cluster: BenchCluster, namespace: str, plan: CoexistPlan) -> None:
    """Until no pod was bound for ``plan.quiet_s``, or ``plan.round_limit_s``."""
    start = last_change = time.monotonic()
    last = -1
    while time.monotonic() - start < plan.round_limit_s:
        pods, _ = await cluster.list_all(f"/api/v1/namespaces/{namespace}/pods")
        bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
        now = time.monotonic()
        if bound != last:
            last, last_change = bound, now
        elif now - last_change >= plan.quiet_s:
            return
        await asyncio.sleep(POLL_SECONDS)
    say(f"coexist: bindings still coming after {plan.round_limit_s:.0f} s; reading the state")
