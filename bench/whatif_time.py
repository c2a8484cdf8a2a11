"""How long `koordgang whatif` takes on a daemon's state, in process (no API server): 1,000
nodes of 32 cores with 10,000 running pods in 1,000 gangs, and a Job of 64 members that fits,
that must preempt, and that can neither fit nor preempt. The whole answer is timed: reading the
file, forking the daemon's state (a framework of its own, fed the cache), the cycle.

``python -m bench.whatif_time [--nodes N] [--runs R]`` prints the median and the slowest.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from koordgang.settings import Settings
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import bound, gang_annotations, node, pod
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness
from koordgang.whatif.fork import what_if
from koordgang.whatif.inputs import read_input

#: (what, members, cpu per member, priority, the outcome the answer must give)
CASES = (
    ("fits", 64, "1", 0, "bind"),
    ("must preempt", 64, "8", 100, "preempt"),
    ("neither fits nor can preempt", 64, "8", 0, "pending"),
)


def job(members: int, cpu: str, priority: int) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: train, namespace: ns}}
spec:
  parallelism: {members}
  completions: {members}
  completionMode: Indexed
  template:
    metadata:
      annotations:
        gang.scheduling.koordinator.sh/name: train
        gang.scheduling.koordinator.sh/min-available: "{members}"
    spec:
      schedulerName: koord-scheduler
      priority: {priority}
      containers: [{{name: main, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


async def measure(nodes: int = 1000, runs: int = 5) -> list[tuple[str, float, float]]:
    """(case, median seconds, slowest seconds) per case."""
    harness = Harness(FakeApi(), FakeClock(), Settings(explain_after=0.0))
    harness.list(
        nodes=[node(f"n{i:05d}", cpu="32", memory="128Gi") for i in range(nodes)],
        pods=[
            bound(
                pod(f"p{i}-{j}", cpu="3", annotations=gang_annotations(f"g{i}", 10)),
                f"n{i:05d}",
            )
            for i in range(nodes)
            for j in range(10)
        ],
    )
    state = harness.daemon_state()
    results = []
    for name, members, cpu, priority, expected in CASES:
        text = job(members, cpu, priority)
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            parsed = read_input(text, "koord-scheduler")
            answer = what_if(harness.settings, state, parsed)
            times.append(time.perf_counter() - started)
            outcome = answer["groups"][0]["outcome"]
            if outcome != expected:
                raise RuntimeError(f"{name}: the answer was {outcome}, not {expected}")
        results.append((name, statistics.median(times), max(times)))
    await harness.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.whatif_time", description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"building {args.nodes} nodes with {args.nodes * 10} running pods ...", flush=True)
    for name, median, slowest in asyncio.run(measure(args.nodes, args.runs)):
        print(
            f"whatif, a Job of 64 that {name}: median {median * 1000:.0f} ms, slowest "
            f"{slowest * 1000:.0f} ms ({args.runs} runs, {args.nodes} nodes)"
        )


if __name__ == "__main__":
    main()
