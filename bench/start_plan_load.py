"""Scheduling throughput while start times are planned, in process (the engine over the fake
API server and clock of ``koordgang.testing``, no HTTP): nodes of 32 cpu each running 20 pods
of 1.25 cpu with time limits (7 cpu free), jobs of 1 to 8 members of 8 cpu waiting for room
(each told a start time), and batches of pods of 1 cpu that fit.

Each round makes a plan due (the clock passes the plan's interval and a waiting job is tried
again, which asks for one) and schedules a batch, timed from its pods' arrival to their last
binding. Three ways, round after round in one run:

- ``off``: StartTimes out of the profile (no job remembered, no plan);
- ``thread``: as the daemon runs it, the plan made by its task in a worker thread while the
  batch is scheduled;
- ``in cycle``: the plan made in the cycle that finds it due (as a what-if's fork does).

``python -m bench.start_plan_load [--nodes N --jobs J --batch B --rounds R]`` prints each
way's pods per second of the wall clock and per CPU second of the event loop's thread (median
of its rounds, and their range), and the plans made. The plan's thread shares the
interpreter's lock with the loop: its CPU shows in the wall clock's rate, not the loop's.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from dataclasses import dataclass, replace

from koordgang.framework.interfaces import PostFilterPlugin
from koordgang.model.pod import PodInfo
from koordgang.plugins.starttimes import StartTimes
from koordgang.plugins.starttimes import plugin as starttimes_plugin
from koordgang.settings import Settings
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import bound, gang, node, pod
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness

WAYS = ("off", "thread", "in cycle")
PER_NODE = 20


@dataclass
class Load:
    #: Pods per second of each round, by way: of the wall clock, and of the loop's CPU.
    ways: dict[str, list[float]]
    loop_cpu: dict[str, list[float]]
    #: Plans made, by way.
    plans: dict[str, int]
    #: CPU seconds of each plan made off the cycle: reading its inputs on the loop, the plan.
    costs: list[tuple[float, float]]
    setup_seconds: float


def _cluster(harness: Harness, nodes: int, jobs: int, rng: random.Random) -> list[list[PodInfo]]:
    """Lists the cluster; the waiting jobs' members, by job."""
    wall = harness.clock.wall()
    running = [
        replace(
            bound(pod(f"r{i}-{j}", cpu="1250m"), f"n{i:05d}"),
            phase="Running",
            start_time=wall - rng.uniform(0, 3_600),
            active_deadline_seconds=rng.randint(3_600, 86_400),
        )
        for i in range(nodes)
        for j in range(PER_NODE)
    ]
    waiting: list[list[PodInfo]] = []
    for k in range(jobs):
        size = rng.choice((1, 2, 4, 8))
        members = gang(f"job-{k}", size, size, cpu="8")
        waiting.append(
            [replace(m, active_deadline_seconds=rng.randint(600, 7_200)) for m in members]
        )
    harness.list(
        nodes=[node(f"n{i:05d}", cpu="32") for i in range(nodes)],
        pods=running + [member for members in waiting for member in members],
    )
    return waiting


async def _round(
    harness: Harness, plugin: StartTimes, batch: int, index: int, job: list[PodInfo]
) -> tuple[float, float]:
    """Seconds from a batch's arrival to its last binding, and the CPU seconds of the event
    loop's thread meanwhile. A plan is due as it arrives (the clock passes the plan's
    interval), and one waiting job is tried again with it, which asks for the plan."""
    harness.clock.advance(plugin.interval() + 1)
    harness.intake.activate(job)
    before = len(harness.api.binds())
    harness.add(*(pod(f"b{index}-{i}", cpu="1") for i in range(batch)))
    started, cpu = time.perf_counter(), time.thread_time()
    while len(harness.api.binds()) < before + batch:
        await harness.run(limit=500)
    return time.perf_counter() - started, time.thread_time() - cpu


async def _plan_done(harness: Harness, timeout: float = 120.0) -> None:
    """Waits (real time: the plan's thread runs on it) until no plan is in flight, so that
    a round's plan does not run into the next."""
    for _ in range(int(timeout / 0.01)):
        if not harness.framework.working():
            return
        await asyncio.sleep(0.01)
    raise TimeoutError("a plan still in flight after two minutes")


def _use(
    harness: Harness,
    plugin: StartTimes,
    way: str,
    kept: list[PostFilterPlugin],
    wake: asyncio.Event | None,
) -> None:
    framework = harness.framework
    framework.post_filters = [p for p in kept if way != "off" or p is not plugin]
    # Without its event the plugin plans in the cycle, as a what-if's fork does.
    plugin._wake = None if way == "in cycle" else wake


async def measure(
    nodes: int, jobs: int, batch: int, rounds: int, seed: int = 1, ways: tuple[str, ...] = WAYS
) -> Load:
    if rounds * len(ways) * batch > nodes * 7:
        raise ValueError("the batches do not fit in the room the nodes have free (7 cpu each)")
    started = time.perf_counter()
    harness = Harness(FakeApi(), FakeClock(), Settings(explain_after=0.0, reserve_after=1e9))
    # The waiting jobs are not all tried again each round (their cycles would swamp the
    # batch): they stay remembered, as the daemon's retries keep them.
    forget_after = starttimes_plugin.FORGET_AFTER
    starttimes_plugin.FORGET_AFTER = float("inf")
    try:
        return await _rounds(harness, nodes, jobs, batch, rounds, seed, ways, started)
    finally:
        starttimes_plugin.FORGET_AFTER = forget_after


async def _rounds(
    harness: Harness,
    nodes: int,
    jobs: int,
    batch: int,
    rounds: int,
    seed: int,
    ways: tuple[str, ...],
    started: float,
) -> Load:
    harness.start_writers()
    plugin = next(p for p in harness.framework.plugins if isinstance(p, StartTimes))
    wake = plugin._wake
    waiting = _cluster(harness, nodes, jobs, random.Random(seed))
    await harness.run(limit=10_000)  # every waiting job tried once; the first plan
    await harness.settle()
    setup = time.perf_counter() - started
    kept = list(harness.framework.post_filters)
    rates: dict[str, list[float]] = {way: [] for way in ways}
    cpu_rates: dict[str, list[float]] = {way: [] for way in ways}
    costs: list[tuple[float, float]] = []
    plans = dict.fromkeys(ways, 0)
    for index in range(rounds):
        for number, way in enumerate(ways):
            _use(harness, plugin, way, kept, wake)
            planned = plugin._planned
            count = index * len(ways) + number
            seconds, cpu = await _round(harness, plugin, batch, count, waiting[count % jobs])
            await _plan_done(harness)
            await harness.settle()
            rates[way].append(batch / seconds)
            cpu_rates[way].append(batch / cpu)
            plans[way] += planned != plugin._planned
            if way == "thread" and planned != plugin._planned:
                costs.append(plugin.last_costs)
    _use(harness, plugin, "thread", kept, wake)
    await harness.close()
    return Load(rates, cpu_rates, plans, costs, setup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--jobs", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ways", default=",".join(WAYS), help="of: " + ", ".join(WAYS))
    args = parser.parse_args()
    ways = tuple(args.ways.split(","))
    load = asyncio.run(measure(args.nodes, args.jobs, args.batch, args.rounds, ways=ways))
    print(
        f"{args.nodes} nodes, {args.nodes * PER_NODE} running pods, {args.jobs} jobs waiting; "
        f"batches of {args.batch} pods; set-up {load.setup_seconds:.0f} s; plans made {load.plans}"
    )
    if load.costs:
        reading = statistics.median(c[0] for c in load.costs)
        planning = statistics.median(c[1] for c in load.costs)
        print(
            f"a plan off the cycle: {reading:.2f} CPU s reading its inputs on the loop, "
            f"{planning:.2f} CPU s planning in its thread (medians)"
        )
    print("way        pods/s (wall; rounds)      pods per CPU s of the loop (rounds)")
    for way, rates in load.ways.items():
        cpu = load.loop_cpu[way]
        print(
            f"{way:<9}  {statistics.median(rates):>6,.0f} ({min(rates):,.0f}-{max(rates):,.0f})"
            f"{'':>8}{statistics.median(cpu):>6,.0f} ({min(cpu):,.0f}-{max(cpu):,.0f})"
        )


if __name__ == "__main__":
    main()
