"""Drives the coexist scenario (see ``coexist.py`` for what and why): kube-scheduler of the pinned
release runs the whole time (default profile, client QPS raised), on the scenario's nodes; each
round starts koordgang ("on": as it ships, "off": ``coexist_off.py``), creates both schedulers'
pods interleaved, waits until no binding has come for a few seconds, reads the final state,
stops koordgang and deletes the pods. Rounds alternate which variant goes first, so that neither
has the cluster's warmer or colder moments to itself."""

from __future__ import annotations

import asyncio
import sys
import time

import aiohttp

from bench.cluster import BenchCluster
from bench.coexist import OFF, ON, CoexistPlan, RoundFigures, round_figures, sum_up
from bench.console import say
from bench.daemon import BenchDaemon
from bench.results import ScenarioResult
from bench.scenarios import Scenario
from bench.stage import RunContext, set_stage, settle
from bench.workload import Workload
from harness.clients.kube_scheduler import KubeScheduler

#: How often a round looks at the bindings.
POLL_SECONDS = 0.5
#: Members whose binding was given up before it was sent: with nothing to write first, only
#: the re-check of the gang's nodes refuses them.
REFUSED = "koordgang_binds{result=prebind}"


class CoexistDaemon(BenchDaemon):
    """koordgang, or with ``off`` its safeguards beside other schedulers switched off."""

    def __init__(self, ctx: RunContext, variant: str, index: int) -> None:
        log = ctx.out_dir / "logs" / f"koordgang-coexist-{variant}-{index:02d}.log"
        super().__init__(ctx.kubeconfig, log, ctx.daemon_args)
        self.variant = variant

    def argv(self) -> list[str]:
        argv = super().argv()
        if self.variant == OFF:
            argv[argv.index("koordgang")] = "bench.coexist_off"
        return argv


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
            order = (ON, OFF) if index % 2 == 0 else (OFF, ON)
            for variant in order:
                figures = await _round(ctx, plan, workload, namespace, variant, index)
                say(f"coexist round {index + 1}/{plan.rounds} {figures.line()}")
                rounds.append(figures)
    finally:
        await asyncio.to_thread(kube.stop)
    result.window_s = round(time.monotonic() - began, 1)
    sum_up(rounds, result)
    for variant in (ON, OFF):
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
    daemon.start()
    try:
        async with aiohttp.ClientSession() as session:
            await daemon.wait_ready(session)
            began = time.monotonic()
            label = f"round {index + 1} {variant}: pods"
            await cluster.create_pods(namespace, workload.pods, label)
            await _wait_quiet(cluster, namespace, plan)
            seconds = time.monotonic() - began
            daemon.check_alive()
            counters = await daemon.counters(session)
    finally:
        code = await daemon.stop()
    if code not in (0, None):
        print(f"koordgang ({variant}) exited with {code}; log {daemon.log_path}", file=sys.stderr)
    nodes, _ = await cluster.list_all("/api/v1/nodes")
    pods, _ = await cluster.list_all(f"/api/v1/namespaces/{namespace}/pods")
    refused = int(counters.get(REFUSED, 0))
    return round_figures(variant, workload, nodes, pods, seconds, refused)


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
