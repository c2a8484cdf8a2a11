"""The benchmark scenarios: a name, a builder of nodes and pods, and when the run is over.

To add one, append a ``Scenario`` to ``SCENARIOS``: its ``build(scale)`` returns the Workload
(nodes, pods of ours, optional pre-bound fillers), ``finish`` says when it is done, and
``daemon_args`` are extra flags for the daemon (a scoring strategy, a feature switch, ...).
Sizes are written at full scale and multiplied by ``--scale``. A scenario with a
``starvation`` plan is driven by ``starvation_run.py`` instead (a stream of small pods, then
one gang; see ``starvation.py``); its sizes are not scaled.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bench.coexist import CoexistPlan, coexist_workload
from bench.dra import POD_REQUESTS, dra_plan, with_claim
from bench.dra_forms import (
    GPUS_PER_NODE,
    PARTS,
    forms_plan,
    with_extended,
    with_fabric,
    with_partition,
)
from bench.gang_api import GangApi
from bench.peers.build import KOORD_SCHEDULER, KUBE_SCHEDULER
from bench.starvation import RESERVE_AFTER_FLAG, StarvationPlan, starvation_workload
from bench.workload import (
    CEILING_SCHEDULER,
    FILLER_SCHEDULER,
    SCHEDULER,
    TOPOLOGY_INDEX,
    TOPOLOGY_SPEC,
    CompositePlan,
    GangRef,
    PodPlan,
    Requests,
    Workload,
    gang_pods,
    node_specs,
    plain_pods,
    scaled,
    spread_bound,
    standard_nodes,
)
from controlplane import NodeSpec


class Finish(enum.Enum):
    #: Every pod of ours is bound.
    ALL_BOUND = "all bound"
    #: ``capacity_pods`` are bound, or no bind for QUIET_SECONDS after the first one.
    CLUSTER_FULL = "cluster full"
    #: The first pod of ours is bound.
    FIRST_BIND = "first bind"
    #: The starvation scenario's gang is bound, or it has waited the plan's cap.
    GANG_STARTED = "gang started"


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    build: Callable[[float], Workload]
    finish: Finish = Finish.ALL_BOUND
    daemon_args: tuple[str, ...] = ()
    #: A published figure to compare with, for the report.
    reference: str = ""
    #: pods/s of that reference, when it has one.
    reference_pods_per_s: float | None = None
    #: Needs kube-controller-manager (workloads that controllers make or replace); the bench
    #: runs it only when a selected scenario does, so that it costs the others no CPU.
    controllers: bool = False
    #: Declares gangs (a scheduler without a gang API does not run it).
    gangs: bool = False
    #: Why no peer runs it ("" when they all can): it asks for what only koordgang offers
    #: (and the ``peers`` named below).
    koordgang_only: str = ""
    #: The peers that run it all the same: they have the feature, switched on in their
    #: bench configuration (``peers/config.py``).
    peers: tuple[str, ...] = ()
    #: Peers given this scenario's gangs in another gang API than their own (peer name ->
    #: API): kube-scheduler reads upstream PodGroups once its GangScheduling gate is on
    #: (``peers/config.py``), which the bench switches on for these scenarios only.
    peer_gang_apis: Mapping[str, GangApi] = field(default_factory=dict, hash=False)
    #: Pods per second at which the pods are created once the scheduler is ready (None: all
    #: created before it starts). Measures latency: a gang's last member created -> all bound.
    stream_rate: float | None = None
    #: A stream of small pods and one gang arriving into it (``starvation_run.py`` drives it).
    starvation: StarvationPlan | None = None
    #: Nodes of a simulation: the engine in process, no API server and no daemon
    #: (``simulate.py``, run in a process of its own); None for a scenario on the cluster.
    simulated_nodes: int | None = None
    #: Times the window is measured, from a fresh stage each time, for every scheduler; the
    #: median one is kept (``measure._measure_repeated``). For windows of about a second.
    repeats: int = 1
    #: The gang API every scheduler that runs it declares its gangs in (None: each its own):
    #: gangs of gangs exist in upstream's API only.
    gang_api: GangApi | None = None
    #: koordgang beside kube-scheduler, rounds with its safeguards on and off
    #: (``coexist_run.py`` drives it).
    coexist: CoexistPlan | None = None


# -- gangs of gangs ---------------------------------------------------------------------------

COMPOSITE_SPINES = 2
COMPOSITE_BLOCKS = 8  # per spine
COMPOSITE_NODES = 16  # per block


def _composite(scale: float) -> Workload:
    """8 PodGroups of 64 (1 cpu each) under one CompositePodGroup that needs all 8 in one
    spine, each PodGroup in one block; a block (16 nodes of 4 cpu) holds exactly one."""
    blocks = scaled(COMPOSITE_BLOCKS, scale)
    per_block = scaled(COMPOSITE_NODES, scale)
    nodes = []
    for spine in range(COMPOSITE_SPINES):
        for block in range(blocks):
            for n in range(per_block):
                nodes.append(
                    NodeSpec(
                        name=f"bench-cpg-s{spine}-b{block}-n{n:02d}",
                        capacity={"cpu": "4", "memory": "16Gi", "pods": "110"},
                        labels={"bench/spine": f"s{spine}", "bench/block": f"s{spine}-b{block}"},
                    )
                )
    size = per_block * 4
    pods = gang_pods("cpg", blocks, size, Requests("1", "1Gi"))
    children = tuple(sorted({p.gang.name for p in pods if p.gang is not None}))
    plan = CompositePlan("cpg", len(children), children, "bench/spine", "bench/block")
    return Workload(nodes=nodes, pods=pods, composites=(plan,))


# -- the ceiling: not a scenario (no daemon), but sized here with the others -------------------

#: Pods the ceiling binds at each level of its sweep (``ceiling.SWEEP``).
CEILING_PODS_PER_LEVEL = 2_000
CEILING_NODES = 1_000


def ceiling_workload(scale: float, levels: int) -> Workload:
    nodes = standard_nodes(scaled(CEILING_NODES, scale))
    count = levels * scaled(CEILING_PODS_PER_LEVEL, scale)
    pods = plain_pods("ceiling", count, scheduler=CEILING_SCHEDULER)
    return Workload(nodes=nodes, pods=pods)


# -- scenarios ---------------------------------------------------------------------------------


def _plain(scale: float) -> Workload:
    return Workload(
        nodes=standard_nodes(scaled(1_000, scale)),
        pods=plain_pods("plain", scaled(5_000, scale)),
    )


def _gang_1k(scale: float) -> Workload:
    # Koordinator's kwok benchmark: 50 gangs of 20 (min 20) on 100 nodes.
    return Workload(
        nodes=standard_nodes(scaled(100, scale)),
        pods=gang_pods("job", scaled(50, scale), 20, Requests("1", "2Gi")),
    )


def _big_gang(scale: float) -> Workload:
    size = scaled(2_000, scale, minimum=2)
    return Workload(
        nodes=standard_nodes(scaled(1_000, scale)),
        pods=gang_pods("big", 1, size, Requests("1", "2Gi")),
    )


CONTENTION_GANG_SIZE = 8
CONTENTION_OVERSUBSCRIPTION = 1.5


def _contention(scale: float) -> Workload:
    """Gangs of 8 one-core pods; the cluster holds two thirds of them. Nodes of 8 cores, so a
    full cluster has every core in use and every gang either whole or absent."""
    gangs = scaled(200, scale, minimum=2)
    demand = gangs * CONTENTION_GANG_SIZE
    cores_per_node = 8
    node_count = max(1, math.ceil(demand / CONTENTION_OVERSUBSCRIPTION / cores_per_node))
    capacity = node_count * cores_per_node
    return Workload(
        nodes=node_specs(
            "bench-small", node_count, {"cpu": str(cores_per_node), "memory": "32Gi", "pods": "110"}
        ),
        pods=gang_pods("team", gangs, CONTENTION_GANG_SIZE, Requests("1", "2Gi")),
        capacity_pods=min(capacity, demand),
        notes={"demand_over_capacity": round(demand / capacity, 2)},
    )


PREEMPTION_NODE: Mapping[str, str] = {"cpu": "4", "memory": "16Gi", "pods": "110"}


#: Members of each running low-priority gang among the preemption scenario's victims.
RUNNING_GANG_SIZE = 4


def _preemption(scale: float) -> Workload:
    """Every core taken by low-priority pods (4 of 1 core per node): on each node two lone
    pods and two members of running gangs of 4 (each gang on 4 nodes, made by this scheduler
    and bound); high-priority gangs of 50 one-core members arrive. Each member needs exactly
    one victim, and the lone pods are enough: the least number of victims is the number of
    members, with no running gang broken."""
    nodes = node_specs("bench-pre", scaled(1_000, scale), PREEMPTION_NODE)
    lone = spread_bound(
        "low", len(nodes) * 2, nodes, Requests("1", "1Gi"), FILLER_SCHEDULER, "bench-low"
    )
    members = spread_bound(
        "low-gang", len(nodes) * 2, nodes, Requests("1", "1Gi"), SCHEDULER, "bench-low"
    )
    # The last gang is short when the node count is odd: its minimum is its size.
    running = [
        replace(
            plan,
            gang=GangRef(
                f"low-gang-{i // RUNNING_GANG_SIZE:04d}",
                min(RUNNING_GANG_SIZE, len(members) - i // RUNNING_GANG_SIZE * RUNNING_GANG_SIZE),
            ),
        )
        for i, plan in enumerate(members)
    ]
    pods = gang_pods(
        "urgent", scaled(20, scale), 50, Requests("1", "1Gi"), priority_class="bench-high"
    )
    return Workload(
        nodes=nodes,
        pods=pods,
        fillers=[*lone, *running],
        notes={"victims_minimum": len(pods), "running_gang_size": RUNNING_GANG_SIZE},
    )


TOPOLOGY_NODE: Mapping[str, str] = {"cpu": "8", "memory": "64Gi", "pods": "110"}
SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"
BENCH_TOPOLOGY: Mapping[str, Any] = {
    "apiVersion": "scheduling.koordinator.sh/v1alpha1",
    "kind": "ClusterNetworkTopology",
    "metadata": {"name": "default"},
    "spec": {
        "networkTopologySpec": [
            {"topologyLayer": "SpineLayer", "labelKey": [SPINE]},
            {
                "topologyLayer": "BlockLayer",
                "parentTopologyLayer": "SpineLayer",
                "labelKey": [BLOCK],
            },
            {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "BlockLayer"},
        ]
    },
}
GATHER = json.dumps(
    {
        "gatherStrategy": [
            {"layer": "BlockLayer", "strategy": "PreferGather"},
            {"layer": "SpineLayer", "strategy": "PreferGather"},
        ]
    }
)
JOB_SIZES = (16, 32, 64, 128)


def topology_nodes(scale: float) -> list[NodeSpec]:
    """4 spines x 8 blocks x 32 nodes (fewer nodes per block when scaled down)."""
    per_block = scaled(32, scale, minimum=2)
    return [
        NodeSpec(
            name=f"bench-topo-s{s}-b{b}-n{n:02d}",
            capacity=dict(TOPOLOGY_NODE),
            labels={SPINE: f"s{s}", BLOCK: f"s{s}-b{b}"},
        )
        for s in range(4)
        for b in range(8)
        for n in range(per_block)
    ]


def _topology_jobs(scale: float, with_spec: bool) -> Workload:
    nodes = topology_nodes(scale)
    pods: list[PodPlan] = []
    for j in range(scaled(64, scale, minimum=4)):
        size = max(2, round(JOB_SIZES[j % len(JOB_SIZES)] * min(1.0, scale * 4)))
        ref = GangRef(name=f"topo-{j:03d}", min_available=size)
        for m in range(size):
            annotations = {}
            if with_spec:
                annotations = {TOPOLOGY_SPEC: GATHER, TOPOLOGY_INDEX: str(m)}
            pods.append(
                PodPlan(
                    name=f"{ref.name}-{m:04d}",
                    requests=Requests("1", "2Gi"),
                    gang=ref,
                    annotations=annotations,
                )
            )
    return Workload(
        nodes=nodes,
        pods=pods,
        topology=BENCH_TOPOLOGY,
        notes={"placement_quality": True},
    )


def _startup(scale: float) -> Workload:
    nodes = standard_nodes(scaled(1_000, scale))
    fillers = spread_bound(
        "filler", scaled(20_000, scale), nodes, Requests("100m", "128Mi"), FILLER_SCHEDULER
    )
    return Workload(nodes=nodes, pods=plain_pods("first", 1), fillers=fillers)


STARVATION = StarvationPlan()
STARVATION_ONLY = (
    "it compares koordgang with its starvation guard (--reserve-after) on and off; no peer has "
    "that switch"
)
#: The guard's delay in the guarded run: the daemon's default, given explicitly.
STARVATION_RESERVE_AFTER = "30"


def _starvation(scale: float) -> Workload:
    return starvation_workload(STARVATION)


SCENARIOS: Sequence[Scenario] = (
    Scenario("plain", "5,000 pods, mixed small requests, on 1,000 nodes", _plain),
    Scenario(
        "gang-1k",
        "50 gangs x 20 pods (min 20) on 100 nodes",
        _gang_1k,
        reference="Koordinator: 17.2 pods/s, 58 s, gang P99 56 s",
        reference_pods_per_s=17.2,
        gangs=True,
    ),
    Scenario("big-gang", "one gang of 2,000 pods on 1,000 nodes", _big_gang, gangs=True),
    Scenario(
        "gang-stream",
        "50 gangs x 20 on 100 nodes, created at 100 pods/s while the scheduler runs",
        _gang_1k,
        gangs=True,
        stream_rate=100.0,
    ),
    Scenario(
        "contention",
        "200 gangs x 8 (min 8), demand 1.5x the cluster",
        _contention,
        finish=Finish.CLUSTER_FULL,
        gangs=True,
        # Its window is about one second, and one collection cycle of the API server falling
        # in it or not (0-2 do, measured) moved a run between 690 and 1,070 pods/s; three
        # measurements still left medians of one commit 540-960 apart on one cluster, five
        # cost each scheduler about half a minute more.
        repeats=5,
    ),
    Scenario(
        "preemption",
        "1,000 nodes full of low-priority pods; 20 high-priority gangs of 50 arrive",
        _preemption,
        # Each preemption is logged at info, with its dry-run time: the figures come from there.
        daemon_args=("--log-level", "info"),
        gangs=True,
        koordgang_only="job-level preemption of gangs (seed 001) is koord-scheduler's only",
        peers=(KOORD_SCHEDULER.name,),
    ),
    Scenario(
        "topology",
        "64 gangs of 16-128 preferring one block, on 4 spines x 8 blocks x 32 nodes",
        lambda scale: _topology_jobs(scale, with_spec=True),
        gangs=True,
        koordgang_only="the network-topology spec and ClusterNetworkTopology are koordinator's",
        peers=(KOORD_SCHEDULER.name,),
    ),
    Scenario(
        "topology-plain",
        "the same gangs without a network-topology spec (the baseline for placement quality)",
        lambda scale: _topology_jobs(scale, with_spec=False),
        gangs=True,
        koordgang_only="the baseline of the topology scenario, which only koord-scheduler runs",
        peers=(KOORD_SCHEDULER.name,),
    ),
    Scenario(
        "starvation-guard",
        "a stream of 1-core pods keeps 12 nodes of 8 cores partly busy; a gang of 10 x 8 cores "
        f"arrives; starvation guard on (--reserve-after {STARVATION_RESERVE_AFTER})",
        _starvation,
        finish=Finish.GANG_STARTED,
        daemon_args=(RESERVE_AFTER_FLAG, STARVATION_RESERVE_AFTER),
        gangs=True,
        koordgang_only=STARVATION_ONLY,
        starvation=STARVATION,
    ),
    Scenario(
        "starvation-no-guard",
        "the same without the starvation guard (--reserve-after 0)",
        _starvation,
        finish=Finish.GANG_STARTED,
        daemon_args=(RESERVE_AFTER_FLAG, "0"),
        gangs=True,
        koordgang_only=STARVATION_ONLY,
        starvation=STARVATION,
    ),
    Scenario(
        "startup",
        "first bind with 20,000 pods bound on 1,000 nodes",
        _startup,
        finish=Finish.FIRST_BIND,
    ),
)


# -- Dynamic Resource Allocation: ``--scenarios dra`` -------------------------------------------

DRA_NODES = 1_000
DRA_LONE_PODS = 2_000
DRA_GANGS = 250
DRA_GANG_SIZE = 8


def _dra(scale: float) -> Workload:
    """1,000 nodes of 8 devices each (one ResourceSlice per node); 2,000 lone pods claiming 1
    device and 250 gangs of 8 whose members claim 1 or 2 in turn: 5,000 devices of 8,000,
    each pod's claim its own, made before the window. cpu and memory never bind (0.1 core
    per pod on nodes of 32): the devices decide."""
    nodes = standard_nodes(scaled(DRA_NODES, scale))
    lone = [
        with_claim(p) for p in plain_pods("dra", scaled(DRA_LONE_PODS, scale), mix=(POD_REQUESTS,))
    ]
    gangs = [
        with_claim(p)
        for p in gang_pods("dra-job", scaled(DRA_GANGS, scale), DRA_GANG_SIZE, POD_REQUESTS)
    ]
    plan = dra_plan(nodes, lone, gangs)
    return Workload(
        nodes=nodes,
        pods=[*lone, *gangs],
        dra=plan,
        notes={"devices": plan.devices, "devices_wanted": plan.wanted, "claims": len(plan.claims)},
    )


DRA_FORMS_NODES = 500
DRA_FORMS_EXTENDED = 600
DRA_FORMS_PARTS = 800
DRA_FORMS_GANGS = 100


def _dra_forms(scale: float) -> Workload:
    """500 nodes of 4 partitionable GPUs (each whole or 4 partitions) and a fabric pool every
    node reaches: 600 lone pods asking for a GPU as an extended resource, 800 lone pods
    claiming a partition, and 100 gangs of 8 whose members claim a partition each and share
    one fabric channel (``bench.dra_forms``): half the GPUs' memory."""
    nodes = standard_nodes(scaled(DRA_FORMS_NODES, scale))
    extended = [
        with_extended(p)
        for p in plain_pods("dra-ext", scaled(DRA_FORMS_EXTENDED, scale), mix=(POD_REQUESTS,))
    ]
    parts = [
        with_partition(p)
        for p in plain_pods("dra-part", scaled(DRA_FORMS_PARTS, scale), mix=(POD_REQUESTS,))
    ]
    gangs = [
        with_fabric(with_partition(p))
        for p in gang_pods("dra-pg", scaled(DRA_FORMS_GANGS, scale), DRA_GANG_SIZE, POD_REQUESTS)
    ]
    pods = [*extended, *parts, *gangs]
    plan = forms_plan(nodes, pods)
    gpus = len(nodes) * GPUS_PER_NODE
    return Workload(
        nodes=nodes,
        pods=pods,
        dra=plan,
        notes={
            "devices": plan.devices,
            # Whole GPUs' worth asked for: a partition is a quarter of one.
            "devices_wanted": len(extended) + (len(parts) + len(gangs)) // PARTS,
            "gpus": gpus,
            "claims": len(plan.claim_bodies),
        },
    )


DRA_SCENARIOS: Sequence[Scenario] = (
    Scenario(
        "dra",
        "2,000 lone pods and 250 gangs x 8, each pod with a ResourceClaim of 1-2 devices, on "
        "1,000 nodes of 8 devices",
        _dra,
        gangs=True,
        koordgang_only="DRA is compared with kube-scheduler only (the other peers have not "
        "been tried with DRA in the bench)",
        peers=(KUBE_SCHEDULER.name,),
        peer_gang_apis={KUBE_SCHEDULER.name: GangApi.UPSTREAM},
    ),
    Scenario(
        "dra-forms",
        "600 pods asking for a GPU as an extended resource, 800 claiming a GPU partition, and "
        "100 gangs x 8 claiming a partition each and sharing their gang's fabric claim, on 500 "
        "nodes of 4 partitionable GPUs (Kubernetes 1.37)",
        _dra_forms,
        gangs=True,
        koordgang_only="DRA is compared with kube-scheduler only (the other peers have not "
        "been tried with DRA in the bench)",
        peers=(KUBE_SCHEDULER.name,),
        peer_gang_apis={KUBE_SCHEDULER.name: GangApi.UPSTREAM},
    ),
)


#: Gangs of gangs (Kubernetes 1.37): selected by name, as the DRA scenario (not on 1.36).
COMPOSITE_SCENARIOS: Sequence[Scenario] = (
    Scenario(
        "composite",
        "a CompositePodGroup of 8 PodGroups x 64 (all 8, in one spine; each in one block), on "
        "2 spines x 8 blocks x 16 nodes",
        _composite,
        gangs=True,
        koordgang_only="CompositePodGroup is upstream's (Kubernetes 1.37): only kube-scheduler "
        "reads it",
        peers=(KUBE_SCHEDULER.name,),
        gang_api=GangApi.UPSTREAM,
    ),
)


# -- the 5,000-node run: ``--scenarios large`` -------------------------------------------------

LARGE_NODES = 5_000


def _plain_large(scale: float) -> Workload:
    return Workload(
        nodes=standard_nodes(scaled(LARGE_NODES, scale)),
        pods=plain_pods("plain", scaled(50_000, scale)),
    )


def _gangs_large(scale: float) -> Workload:
    return Workload(
        nodes=standard_nodes(scaled(LARGE_NODES, scale)),
        pods=gang_pods("job", scaled(100, scale), scaled(100, scale, 2), Requests("1", "2Gi")),
    )


def _big_gang_large(scale: float) -> Workload:
    return Workload(
        nodes=standard_nodes(scaled(LARGE_NODES, scale)),
        pods=gang_pods("big", 1, scaled(10_000, scale, minimum=2), Requests("1", "2Gi")),
    )


def _startup_large(scale: float) -> Workload:
    nodes = standard_nodes(scaled(LARGE_NODES, scale))
    fillers = spread_bound(
        "filler", scaled(100_000, scale), nodes, Requests("100m", "128Mi"), FILLER_SCHEDULER
    )
    return Workload(nodes=nodes, pods=plain_pods("first", 1), fillers=fillers)


LARGE_SCENARIOS: Sequence[Scenario] = (
    Scenario("plain-5k", "50,000 pods, mixed small requests, on 5,000 nodes", _plain_large),
    Scenario("gangs-5k", "100 gangs x 100 (min 100) on 5,000 nodes", _gangs_large, gangs=True),
    Scenario("big-gang-5k", "one gang of 10,000 pods on 5,000 nodes", _big_gang_large, gangs=True),
    Scenario(
        "startup-5k",
        "first bind with 100,000 pods bound on 5,000 nodes",
        _startup_large,
        finish=Finish.FIRST_BIND,
    ),
)


# -- in process: ``--scenarios simulate-50k`` -------------------------------------------------


# -- beside kube-scheduler: ``--scenarios coexist`` ----------------------------------------------

COEXIST = CoexistPlan()
COEXIST_SCENARIOS: Sequence[Scenario] = (
    Scenario(
        "coexist",
        f"koordgang ({COEXIST.pods_each} pods in gangs of {COEXIST.gang_size}) and kube-scheduler "
        f"({COEXIST.pods_each} plain pods) at once, 1 cpu each, created interleaved onto "
        f"{COEXIST.nodes} nodes of {COEXIST.node_cpu} cpu; {COEXIST.rounds} rounds of "
        "each variant: as koordgang ships, as it was before it looked out for other "
        "schedulers, and without guessing where their pods not tried yet go",
        lambda scale: coexist_workload(COEXIST, scale),
        gangs=True,
        koordgang_only="it runs kube-scheduler beside koordgang itself",
        coexist=COEXIST,
    ),
)


def _simulated(scale: float) -> Workload:
    raise TypeError("a simulated scenario creates nothing on a cluster")


SIMULATED_SCENARIOS: Sequence[Scenario] = (
    Scenario(
        "simulate-50k",
        "the engine in process (no API server): 50,000 nodes, 500,000 running pods",
        _simulated,
        simulated_nodes=50_000,
    ),
)


#: Names that select several scenarios, run one after the other.
GROUPS: Mapping[str, tuple[str, ...]] = {
    "starvation": ("starvation-guard", "starvation-no-guard"),
}


def select(names: str) -> list[Scenario]:
    """``"plain,gang-1k"`` -> those scenarios in the order given; ``"all"`` or ``""`` -> all
    but the 5,000-node ones, which ``"large"`` selects, and the simulations and the DRA
    scenario, which only their name selects; a name of ``GROUPS`` -> its scenarios.
    The ceiling is always measured and may be named without effect."""
    wanted = [n.strip() for n in names.split(",") if n.strip() and n.strip() != "ceiling"]
    if not wanted or wanted == ["all"]:
        return list(SCENARIOS)
    if wanted == ["large"]:
        return list(LARGE_SCENARIOS)
    wanted = [m for n in wanted for m in GROUPS.get(n, (n,))]
    by_name = {
        s.name: s
        for s in [
            *SCENARIOS,
            *LARGE_SCENARIOS,
            *SIMULATED_SCENARIOS,
            *DRA_SCENARIOS,
            *COMPOSITE_SCENARIOS,
            *COEXIST_SCENARIOS,
        ]
    }
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        known = ", ".join([*by_name, *GROUPS])
        raise ValueError(f"unknown scenarios {unknown}; known: ceiling, {known}")
    return [by_name[n] for n in dict.fromkeys(wanted)]
