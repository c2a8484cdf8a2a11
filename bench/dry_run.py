"""The preemption dry run for one large job, in process (no API server): 4,096 nodes of 4
cores, each full of four one-core low-priority pods; one job of 256 one-core members.

``python -m bench.dry_run [--nodes N] [--members M]`` prints the time; the bench's
``preemption`` scenario reports it too.
"""

from __future__ import annotations

import argparse
import time

from bench.synthetic import one_core_pod, ready_node
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.plugins.preemption.dry_run import plan_room
from koordgang.plugins.preemption.victims import CostModel, not_a_victim
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.snapshot import Snapshot


def measure(nodes: int = 4096, members: int = 256) -> tuple[float, int]:
    """(seconds for the dry run, victims chosen)."""
    cache = SchedulerCache()
    cache.replace_nodes(ready_node(f"n{i:05d}", "4") for i in range(nodes))
    cache.replace_pods(
        one_core_pod(f"low-{i}-{k}", f"n{i:05d}", 10) for i in range(nodes) for k in range(4)
    )
    job = [one_core_pod(f"job-{m}", "", 1000) for m in range(members)]
    placer = default_framework(Settings(), GangRegistry(600.0, resolve=Resolve(GANG_APIS))).placer
    snapshot = Snapshot(cache)
    started = time.perf_counter()
    model = CostModel(lambda pod: None)
    eligible = {}
    for state in snapshot.nodes:
        pods = [p for p in snapshot.pods_on(state) if not not_a_victim(p, 1000)]
        eligible[state.name] = sorted(pods, key=model.eviction_order)
    result = plan_room(
        job, snapshot, placer, model, list(eligible), eligible, lambda p: p.is_terminating
    )
    seconds = time.perf_counter() - started
    if result.failure or len(result.nominations) != members:
        raise RuntimeError(f"the dry run found no room: {result.failure}")
    return seconds, len(result.victims)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dry_run", description=__doc__)
    parser.add_argument("--nodes", type=int, default=4096)
    parser.add_argument("--members", type=int, default=256)
    args = parser.parse_args()
    print(f"building {args.nodes} nodes with {args.nodes * 4} pods ...", flush=True)
    seconds, victims = measure(args.nodes, args.members)
    print(
        f"dry run for one job of {args.members} on {args.nodes} nodes: {seconds * 1000:.0f} ms, "
        f"{victims} victims (least possible {args.members})"
    )


if __name__ == "__main__":
    main()
