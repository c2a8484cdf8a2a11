"""The ceiling: how fast the API server accepts Bindings when nobody has to decide anything.

Pods are created pending (for a scheduler nobody runs), each is given a node in advance, and
a minimal client POSTs their Bindings with a fixed number in flight. Bodies are serialised
before the clock starts; every reply is read, so its connection goes back to the pool and TLS
is set up only once per connection. The figure is taken from the same watch the scenarios use,
so it carries the same observation overhead.
"""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp

from bench.console import Ticker, say
from bench.procstats import describe_cores
from bench.results import CeilingResult
from bench.scenarios import ceiling_workload
from bench.stage import RunContext, set_stage, settle
from bench.watch import BindWatcher
from bench.workload import round_robin
from koordgang.clients.api import KubeApi

CONCURRENCY = 64


def binding_body(namespace: str, pod: str, node: str) -> bytes:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    return json.dumps(body, separators=(",", ":")).encode()


async def measure_ceiling(
    ctx: RunContext, label: str, concurrency: int = CONCURRENCY
) -> CeilingResult:
    workload = ceiling_workload(ctx.scale)
    namespace = f"bench-ceiling-{label}-{ctx.run_id}"
    say(
        f"=== ceiling ({label}): bind {len(workload.pods)} pre-created pods to pre-chosen nodes "
        f"({len(workload.nodes)} nodes), {concurrency} in flight, no scheduling"
    )
    await set_stage(ctx, workload, namespace, keep_dra=True)
    await settle(ctx)

    nodes = round_robin(workload.nodes)
    server = ctx.cluster.api.conn.server
    requests = [
        (
            f"{server}/api/v1/namespaces/{namespace}/pods/{pod.name}/binding",
            binding_body(namespace, pod.name, next(nodes)),
        )
        for pod in workload.pods
    ]
    headers = {**ctx.cluster.headers(), "Content-Type": "application/json"}
    client = KubeApi(ctx.cluster.api.conn, pool_size=concurrency, user_agent="bench-ceiling")
    watcher = BindWatcher(ctx.cluster, namespace)
    await watcher.start()
    sampler = ctx.sampler()
    sampler.start()

    errors = 0
    next_index = 0
    acked = 0
    ticker = Ticker()

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal errors, next_index, acked
        while next_index < len(requests):
            url, body = requests[next_index]
            next_index += 1
            async with session.post(url, data=body, headers=headers) as reply:
                await reply.read()
                if reply.status >= 300:
                    errors += 1
            acked += 1
            if ticker.due(final=acked == len(requests)):
                say(f"ceiling: {acked}/{len(requests)} binds answered, {watcher.count} seen bound")

    started = sampler.sample()
    try:
        await asyncio.gather(*(worker(client.session) for _ in range(concurrency)))
        acks_done = sampler.sample()
        deadline = acks_done + 30
        while watcher.count < len(requests) - errors and time.monotonic() < deadline:
            await watcher.wait_for_bind(timeout=0.5)
    finally:
        await sampler.stop()
        await watcher.stop()
        await client.close()

    last = watcher.last_bind() or acks_done
    seconds = last - started
    cores = sampler.cores(started, acks_done)
    result = CeilingResult(
        label=label,
        pods=len(requests),
        nodes=len(workload.nodes),
        concurrency=concurrency,
        binds_per_s=round(watcher.count / seconds, 1) if seconds > 0 else 0.0,
        acks_per_s=round(len(requests) / (acks_done - started), 1),
        seconds=round(seconds, 2),
        errors=errors,
        cores=cores,
        window_s=round(acks_done - started, 3),
    )
    say(
        f"ceiling ({label}): {result.binds_per_s:.0f} binds/s ({watcher.count} bound in "
        f"{seconds:.2f} s, {errors} errors); cores used: {describe_cores(cores)}"
    )
    return result
