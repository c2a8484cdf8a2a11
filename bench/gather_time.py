"""The gather algorithm for one large job, in process (no API server): 4,096 nodes of 8 cores
in 4 spines x 32 blocks x 32 nodes, a quarter of the blocks partly used; one job of 256
one-core members that prefers one block and must stay in one spine.

``python -m bench.gather_time [--nodes N] [--members M]`` prints the time; the bench's
``topology`` scenario reports it too.
"""

from __future__ import annotations

import argparse
import json
import time

from bench.scenarios import BENCH_TOPOLOGY, BLOCK, SPINE
from bench.synthetic import one_core_pod, ready_node
from koordgang.framework.cycle_state import CycleState
from koordgang.framework.group import GroupPart, GroupTopology, SchedulingGroup
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.model.gather import TopologySpec, parse_gather_spec
from koordgang.model.group_key import GroupKey
from koordgang.plugins.networktopology import NetworkTopology
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.snapshot import Snapshot

RULES = json.dumps(
    {
        "gatherStrategy": [
            {"layer": "BlockLayer", "strategy": "PreferGather"},
            {"layer": "SpineLayer", "strategy": "MustGather"},
        ]
    }
)


def parsed_spec(text: str) -> TopologySpec:
    spec, problem = parse_gather_spec(text)
    assert spec is not None, problem
    return spec


def measure(nodes: int = 4096, members: int = 256) -> tuple[float, int]:
    """(seconds for one placement of the job, members placed)."""
    spines, blocks_per_spine = 4, 32
    per_block = max(1, nodes // (spines * blocks_per_spine))
    cache = SchedulerCache()
    infos = []
    busy = []
    for s in range(spines):
        for b in range(blocks_per_spine):
            for n in range(per_block):
                name = f"s{s}-b{b:02d}-n{n:02d}"
                infos.append(ready_node(name, "8", {SPINE: f"s{s}", BLOCK: f"b{b:02d}"}))
                if b % 4 == 0:  # a quarter of the blocks half full
                    busy += [one_core_pod(f"busy-{name}-{k}", name) for k in range(4)]
    cache.replace_nodes(infos)
    cache.replace_pods(busy)
    framework = default_framework(Settings(), GangRegistry(600.0, resolve=Resolve(GANG_APIS)))
    [plugin] = [p for p in framework.plugins if isinstance(p, NetworkTopology)]
    plugin.on_object("clusternetworktopologies.scheduling.koordinator.sh", "ADDED", BENCH_TOPOLOGY)
    job = [one_core_pod(f"job-{m:03d}") for m in range(members)]
    group = SchedulingGroup(
        GroupKey(("bench/job",)),
        [GroupPart("bench/job", job, minimum=members)],
        job[0],
        topology=GroupTopology(parsed_spec(RULES)),
    )
    snapshot = Snapshot(cache)
    plugin.tree(snapshot)  # built once per node change, not per job
    started = time.perf_counter()
    plan = plugin.place_group(CycleState(), group, snapshot.fork(), framework.placer)
    seconds = time.perf_counter() - started
    placed = 0 if plan is None else len(plan.placements())
    return seconds, placed


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.gather_time", description=__doc__)
    parser.add_argument("--nodes", type=int, default=4096)
    parser.add_argument("--members", type=int, default=256)
    args = parser.parse_args()
    print(f"building {args.nodes} nodes ...", flush=True)
    seconds, placed = measure(args.nodes, args.members)
    print(
        f"gather for one job of {args.members} on {args.nodes} nodes: {seconds * 1000:.0f} ms, "
        f"{placed} members placed"
    )


if __name__ == "__main__":
    main()
