"""The start plan's cost at scale, in process: a synthetic cluster (nodes of 32 cpu and 128Gi,
pods filling them, a tenth without a time limit, the rest ending within a day) and jobs
waiting for room (1 to 8 members of 8 cpu and 32Gi, running 10 minutes to 2 hours).

``python -m bench.start_plan_time [--nodes N --pods P --jobs J]`` prints the CPU seconds of
one plan (what the daemon spends at most once every 50 times that long) and how many jobs got
a start time within the plan's budget; then of the plan made again a minute later, a hundredth
of the pods having come and gone meanwhile, with the nodes' timelines kept from the first (as
the daemon plans from its second plan on).
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from dataclasses import dataclass

from koordgang.model.resources import Resources
from koordgang.state.start_plan import Estimate, Holder, Timelines, Waiter, plan_starts

GIB = 1 << 30


@dataclass(frozen=True)
class PlanTime:
    nodes: int
    pods: int
    jobs: int
    cpu_seconds: float
    #: start, held (no bound), unplanned (budget spent), never (fits nowhere).
    outcomes: dict[str, int]
    #: CPU seconds of the plan made again a minute later, timelines kept.
    again_cpu_seconds: float
    again_outcomes: dict[str, int]


def _outcome(estimate: Estimate) -> str:
    if estimate.start is not None:
        return "start"
    if estimate.unplanned:
        return "unplanned"
    return "held" if estimate.held_by else "never"


def measure(nodes: int, pods: int, jobs: int, seed: int = 1) -> PlanTime:
    rng = random.Random(seed)
    room = {f"n{i}": Resources({"cpu": 32_000, "memory": 128 * GIB}) for i in range(nodes)}
    per_node = max(1, pods // nodes)
    share = Resources({"cpu": 32_000 // per_node, "memory": 128 * GIB // per_node})
    holders = [
        Holder(
            f"p{i}-{j}",
            f"n{i}",
            share,
            None if rng.random() < 0.1 else rng.uniform(0, 86_400),
        )
        for i in range(nodes)
        for j in range(per_node)
    ]
    member = Resources({"cpu": 8_000, "memory": 32 * GIB})
    waiters = [
        Waiter(f"job-{k}", (member,) * rng.choice((1, 2, 4, 8)), rng.uniform(600, 7_200))
        for k in range(jobs)
    ]
    kept = Timelines()
    started = time.process_time()
    estimates = plan_starts(0.0, room, holders, waiters, kept)
    spent = time.process_time() - started
    # A minute on: a hundredth of the pods replaced by others on the same nodes.
    later = [
        Holder(f"q{h.pod}", h.node, h.requests, rng.uniform(60, 86_400))
        if rng.random() < 0.01
        else h
        for h in holders
    ]
    started = time.process_time()
    again = plan_starts(60.0, room, later, waiters, kept)
    again_spent = time.process_time() - started
    return PlanTime(
        nodes,
        len(holders),
        jobs,
        spent,
        dict(Counter(map(_outcome, estimates))),
        again_spent,
        dict(Counter(map(_outcome, again))),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=1_000)
    args = parser.parse_args()
    result = measure(args.nodes, args.pods, args.jobs)
    print(
        f"{result.nodes} nodes, {result.pods} pods, {result.jobs} jobs waiting: "
        f"{result.cpu_seconds:.2f} CPU s per plan; {result.outcomes}; "
        f"a minute later, 1% of pods changed: {result.again_cpu_seconds:.2f} CPU s; "
        f"{result.again_outcomes}"
    )


if __name__ == "__main__":
    main()
