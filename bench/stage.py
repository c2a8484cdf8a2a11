"""Before a measurement: a clean cluster with the scenario's nodes and pods, and a quiet one.

Leftover pods of earlier scenarios are deleted (grace 0), the fake nodes are made to match,
fillers are created already bound and left for kwok to mark Running, and the pods under test
are created pending, all while no scheduler runs. Then the API server collects its garbage
and we wait until the control plane has calmed down, so that what follows measures the daemon
and not the set-up's aftermath.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path

from bench.cluster import BenchCluster
from bench.console import Ticker, say
from bench.dra import claim_manifests
from bench.gang_api import GangApi, pod_groups
from bench.procstats import OTHERS, CpuSampler, describe_cores
from bench.results import KOORDGANG, CeilingResult
from bench.schedulers import SchedulerUnderTest
from bench.workload import PRIORITY_CLASSES, Workload

#: The control plane is "quiet" when its processes use less than this many cores together.
QUIET_CORES = 0.35
#: kwok trails bound pods by tens of seconds (it marks about 200 pods/s Running on 2 cores) and
#: keeps trying pods deleted meanwhile, so a scenario after a big one waits for it.
SETTLE_LIMIT_SECONDS = 120.0
#: After a scenario's fillers are marked Running, kwok goes on writing to some of them for
#: minutes (100,000 fillers: 50 writes/s for more than 2 minutes, 0.7 of the 2 cores, measured).
#: A start-up measured then measures kwok: the wait grows with the fillers, this many per second.
SETTLE_FILLERS_PER_SECOND = 50.0


@dataclass
class RunContext:
    """What every measurement of one run shares."""

    cluster: BenchCluster
    kubeconfig: Path
    #: kube-apiserver, etcd, kwok -> pid.
    control_plane: dict[str, int]
    out_dir: Path
    run_id: str
    scale: float
    daemon_args: tuple[str, ...] = ()
    profile: bool = False
    #: CPU profiles of the API server over each window (``apiserver_profile``).
    apiserver_profile: bool = False
    #: Ceilings measured so far in this run.
    ceilings: list[CeilingResult] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    #: The scheduler measured now, its binary (peers) and the CRDs installed for it.
    scheduler: SchedulerUnderTest = field(default_factory=lambda: SchedulerUnderTest(KOORDGANG))
    #: Tells this scheduler's namespaces from the others' in the same run ("s0", "s1", ...).
    tag: str = "s0"
    binaries: dict[str, Path] = field(default_factory=dict)
    #: Each peer's release files (shipped configuration), by peer name.
    sources: dict[str, Path] = field(default_factory=dict)
    crds: list[str] = field(default_factory=list)

    def sampler(self) -> CpuSampler:
        """CPU of the control plane and of this benchmark; the caller adds the daemon."""
        return CpuSampler({**self.control_plane, "bench": os.getpid()})


def filler_namespace(scenario: str, run_id: str) -> str:
    """Shared by every scheduler's run of one scenario in one run: the fillers are made once."""
    return f"bench-{scenario}-{run_id}-fill"


async def set_stage(
    ctx: RunContext,
    workload: Workload,
    namespace: str,
    fill: str = "",
    *,
    create_pods: bool = True,
    gang_api: GangApi | None = None,
    keep_dra: bool = False,
) -> None:
    """Nodes, fillers (in ``fill``) and, unless they are to be streamed later, the pods under
    test, gangs declared in the measured scheduler's own API (or ``gang_api``). Fillers left
    by the same scenario on another scheduler are kept when the nodes have not changed
    meanwhile. With DRA (``workload.dra``): the DeviceClass and ResourceSlices are kept from
    one run to the next like the nodes, the pods' ResourceClaims are made afresh, before the
    pods; ``keep_dra`` leaves the DeviceClass and slices as they are (the ceiling: no
    scheduler runs, and the DRA scenario after it finds its slices there)."""
    cluster = ctx.cluster
    reuse = ""
    # The very pods of this workload (a run of another layout may have left as many).
    if (
        workload.fillers
        and fill
        and await cluster.pod_names(fill, running=True) == {p.name for p in workload.fillers}
    ):
        reuse = fill
    await cluster.delete_bench_pods(keep_namespace=reuse)
    # Before their namespaces: a claim outliving its namespace keeps its devices allocated.
    await cluster.delete_bench_claims()
    await cluster.delete_bench_groups()
    await cluster.delete_bench_namespaces(keep=reuse)
    if await cluster.reconcile_nodes(workload.nodes) and reuse:
        # The fillers' nodes were replaced: they no longer fill anything.
        reuse = ""
        await cluster.delete_bench_pods()
        await cluster.delete_bench_namespaces()
    await cluster.set_topology(workload.topology)
    if not keep_dra:
        await cluster.reconcile_dra(workload.dra)
    await cluster.create_namespace(namespace)
    if any(p.priority_class for p in [*workload.pods, *workload.fillers]):
        await cluster.ensure_priority_classes(PRIORITY_CLASSES)
    if reuse:
        say(f"reusing {len(workload.fillers)} filler pods in {fill}")
    elif workload.fillers:
        await cluster.create_namespace(fill)
        await cluster.create_pods(fill, workload.fillers, "creating bound filler pods")
        # kwok runs about 200 pods/s here: 100,000 fillers take minutes.
        await cluster.wait_pods_running(
            fill, len(workload.fillers), timeout=max(600.0, len(workload.fillers) / 50)
        )
    if gang_api is None:
        gang_api = ctx.scheduler.gang_api
    shared = workload.dra.group_claims if workload.dra is not None else None
    groups = pod_groups(workload.gangs, gang_api, workload.composites, shared)
    if groups:
        await cluster.create_objects(namespace, groups)
    if workload.dra is not None:
        await cluster.create_claims(namespace, claim_manifests(workload.dra))
    if create_pods:
        await cluster.create_pods(namespace, workload.pods, "creating pods", gang_api)


def settle_limit(fillers: int) -> float:
    """How long to wait for a quiet control plane after creating ``fillers`` pods."""
    return max(SETTLE_LIMIT_SECONDS, fillers / SETTLE_FILLERS_PER_SECOND)


async def settle(ctx: RunContext, *, limit: float = SETTLE_LIMIT_SECONDS) -> dict[str, float]:
    """Has the API server collect the set-up's garbage, then waits until the control plane is
    quiet; returns the cores it used over the last second. Gives up after ``limit`` seconds.
    """
    loop = asyncio.get_running_loop()
    began = loop.time()
    problem = await ctx.cluster.collect_apiserver_garbage()
    if problem is None:
        say(f"kube-apiserver collected its garbage ({loop.time() - began:.1f} s)")
    else:
        say(f"kube-apiserver did not collect its garbage ({problem}); measuring anyway")
    sampler = CpuSampler(dict(ctx.control_plane))
    deadline = loop.time() + limit
    sampler.sample()
    recent: dict[str, float] = {}
    ticker = Ticker(5.0)
    verdict = "at rest"
    while True:
        await asyncio.sleep(1.0)
        sampler.sample()
        recent = sampler.recent(1.0)
        if sum(v for k, v in recent.items() if k != OTHERS) < QUIET_CORES:
            break
        if loop.time() >= deadline:
            verdict = f"still busy after {limit:.0f} s, measuring anyway"
            break
        if ticker.due():
            say(
                f"waiting for the control plane to calm down ({loop.time() - began:.0f} s of "
                f"at most {limit:.0f}): {describe_cores(recent)} cores"
            )
    say(f"control plane {verdict}: {describe_cores(recent)} cores ({OTHERS}: not ours)")
    return recent
