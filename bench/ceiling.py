"""The ceiling: how fast the API server accepts Bindings when nobody has to decide anything.

Pods are created pending (for a scheduler nobody runs), each is given a node in advance, and
a bare client (``bare_binder.py``: requests serialised before the clock starts, connections
opened and kept) POSTs their Bindings. How many it keeps in flight is swept upwards, a fresh
share of the pods at each level on a settled control plane; the best level's rate is the
ceiling. Once one more level binds no faster, the API server, not the client, is the limit:
the result says whether the sweep got there. The figure is taken from the same watch the
scenarios use, so it carries the same observation overhead.

A scheduler binding faster than the ceiling means it is not one; ``report.ceiling_lines``
says so.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from bench.bare_binder import BareBinder, Target, binding_request, target_of
from bench.console import Ticker, say
from bench.procstats import CpuSampler, describe_cores
from bench.results import CeilingResult
from bench.scenarios import ceiling_workload
from bench.stage import RunContext, set_stage, settle
from bench.watch import BindWatcher
from bench.workload import round_robin

#: Requests in flight, level by level (the client's connections: one request each).
SWEEP = (32, 64, 128, 256, 512)
#: A last level binding less than this much faster than the one before: the API server has
#: saturated.
SATURATED_GAIN = 1.05
#: Seconds to wait for the watch to see a level's last bind.
SEEN_WITHIN = 30.0


@dataclass(frozen=True, slots=True)
class Level:
    concurrency: int
    pods: int
    bound: int
    errors: int
    started: float
    last_seen: float
    acks_done: float

    @property
    def seconds(self) -> float:
        return self.last_seen - self.started

    @property
    def binds_per_s(self) -> float:
        return self.bound / self.seconds if self.seconds > 0 else 0.0


def saturated(rates: Sequence[float]) -> bool:
    """Whether the sweep found where the API server saturates: its best level is not its
    last, or the last bound less than ``SATURATED_GAIN`` faster than the one before."""
    if len(rates) < 2:
        return False
    best = max(range(len(rates)), key=rates.__getitem__)
    return best < len(rates) - 1 or rates[-1] < SATURATED_GAIN * rates[-2]


async def measure_ceiling(
    ctx: RunContext, label: str, sweep: Sequence[int] = SWEEP
) -> CeilingResult:
    workload = ceiling_workload(ctx.scale, levels=len(sweep))
    namespace = f"bench-ceiling-{label}-{ctx.run_id}"
    per_level = len(workload.pods) // len(sweep)
    say(
        f"=== ceiling ({label}): bind pre-created pods to pre-chosen nodes "
        f"({len(workload.nodes)} nodes), {per_level} at each of "
        f"{', '.join(map(str, sweep))} in flight"
    )
    await set_stage(ctx, workload, namespace, keep_dra=True)
    await settle(ctx)

    target = target_of(ctx.cluster.api.conn)
    nodes = round_robin(workload.nodes)
    requests = [binding_request(target, namespace, p.name, next(nodes)) for p in workload.pods]
    watcher = BindWatcher(ctx.cluster, namespace)
    await watcher.start()
    sampler = ctx.sampler()
    sampler.start()
    levels: list[Level] = []
    try:
        # Every level, even past one that bound no faster: a level's rate moves by a fifth
        # from one to the next on this machine, and a dip is no proof of saturation.
        for index, concurrency in enumerate(sweep):
            if index:
                await settle(ctx)  # the pods of the level before made Running by kwok
            chunk = requests[index * per_level : (index + 1) * per_level]
            levels.append(await _level(target, concurrency, chunk, watcher, sampler))
    finally:
        await sampler.stop()
        await watcher.stop()

    best = max(levels, key=lambda level: level.binds_per_s)
    cores = sampler.cores(best.started, best.acks_done)
    result = CeilingResult(
        label=label,
        pods=best.pods,
        nodes=len(workload.nodes),
        concurrency=best.concurrency,
        binds_per_s=round(best.binds_per_s, 1),
        acks_per_s=round(best.pods / (best.acks_done - best.started), 1),
        seconds=round(best.seconds, 2),
        errors=sum(level.errors for level in levels),
        cores=cores,
        window_s=round(best.acks_done - best.started, 3),
        sweep={level.concurrency: round(level.binds_per_s, 1) for level in levels},
        saturated=saturated([level.binds_per_s for level in levels]),
    )
    say(
        f"ceiling ({label}): {result.binds_per_s:.0f} binds/s at {best.concurrency} in flight "
        f"(sweep: {describe_sweep(result.sweep)}; {result.errors} errors); "
        f"cores used: {describe_cores(cores)}"
    )
    return result


def describe_sweep(sweep: dict[int, float]) -> str:
    return ", ".join(f"{level} -> {rate:.0f}/s" for level, rate in sweep.items())


async def _level(
    target: Target,
    concurrency: int,
    requests: Sequence[bytes],
    watcher: BindWatcher,
    sampler: CpuSampler,
) -> Level:
    """One level of the sweep: ``requests`` with ``concurrency`` in flight on connections
    opened beforehand, timed from the first request to the last bind the watch sees."""
    binder = BareBinder(target, concurrency)
    await binder.open()
    seen_before = watcher.count
    answered = 0
    ticker = Ticker()

    def on_reply(status: int) -> None:
        nonlocal answered
        answered += 1
        if ticker.due(final=answered == len(requests)):
            say(
                f"ceiling, {concurrency} in flight: {answered}/{len(requests)} binds answered, "
                f"{watcher.count - seen_before} seen bound"
            )

    started = sampler.sample()
    try:
        errors = await binder.run(requests, on_reply)
        acks_done = sampler.sample()
    finally:
        await binder.close()
    expected = len(requests) - errors
    deadline = acks_done + SEEN_WITHIN
    while watcher.count - seen_before < expected and time.monotonic() < deadline:
        await watcher.wait_for_bind(timeout=0.5)
    bound = watcher.count - seen_before
    level = Level(
        concurrency=concurrency,
        pods=len(requests),
        bound=bound,
        errors=errors,
        started=started,
        last_seen=watcher.last_bind() or acks_done,
        acks_done=acks_done,
    )
    say(f"ceiling, {concurrency} in flight: {level.binds_per_s:.0f} binds/s")
    return level
