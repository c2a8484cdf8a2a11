"""Pods created at a fixed rate while the scheduler runs, as a stream of jobs arrives in a real
cluster: gang by gang, member by member. Records when each gang's last member was created, the
start of that gang's latency."""

from __future__ import annotations

import asyncio
import contextlib
import time

from bench.console import say
from bench.stage import RunContext
from bench.workload import PodPlan, Workload

#: Creations in flight at once: enough to keep the rate on 2 cores, few enough to keep order.
IN_FLIGHT = 8


class Streamer:
    def __init__(self, ctx: RunContext, namespace: str, workload: Workload, rate: float) -> None:
        self.ctx = ctx
        self.namespace = namespace
        self.pods = list(workload.pods)
        self.rate = rate
        self.task: asyncio.Task[None] | None = None
        #: Gang name -> time.monotonic() when its last member's creation was acknowledged.
        self.last_created: dict[str, float] = {}
        self.created = 0
        self.started_at = 0.0
        self.finished_at = 0.0

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name="bench-streamer")

    async def stop(self) -> None:
        if self.task is None:
            return
        if not self.task.done():
            self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    def achieved_rate(self) -> float:
        end = self.finished_at or time.monotonic()
        return self.created / (end - self.started_at) if end > self.started_at else 0.0

    async def _run(self) -> None:
        self.started_at = time.monotonic()
        remaining: dict[str, int] = {}
        for pod in self.pods:
            if pod.gang is not None:
                remaining[pod.gang.name] = remaining.get(pod.gang.name, 0) + 1
        slots = asyncio.Semaphore(IN_FLIGHT)
        pending: set[asyncio.Task[None]] = set()

        async def create(plan: PodPlan) -> None:
            try:
                await self.ctx.cluster.create_pod(self.namespace, plan, self.ctx.scheduler.gang_api)
            finally:
                slots.release()
            self.created += 1
            if plan.gang is not None:
                remaining[plan.gang.name] -= 1
                if remaining[plan.gang.name] == 0:
                    self.last_created[plan.gang.name] = time.monotonic()

        for index, plan in enumerate(self.pods):
            # Paced against the start, so a slow reply is made up for rather than accumulated.
            delay = self.started_at + index / self.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await slots.acquire()
            task = asyncio.create_task(create(plan))
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.gather(*pending)
        self.finished_at = time.monotonic()
        say(f"streamed {self.created} pods at {self.achieved_rate():.0f} pods/s")
