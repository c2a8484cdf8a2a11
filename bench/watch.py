"""When was each pod first bound? One watch on the scenario's namespace says.

The watch asks only for pods that have a node (``fieldSelector=spec.nodeName!=``): a pod enters
that selection when it is bound, which the API server reports as ADDED. kwok's later status
updates arrive as MODIFIED and are skipped without decoding, so watching costs the benchmark
one JSON decode per bound pod while the daemon and the API server share the two cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import aiohttp

from bench.cluster import BenchCluster
from bench.console import say

BOUND = "spec.nodeName!="
WATCH_SECONDS = 600


class BindWatcher:
    #: Which objects the watch asks for.
    selector = BOUND

    def __init__(self, cluster: BenchCluster, namespace: str) -> None:
        self.cluster = cluster
        self.namespace = namespace
        #: pod name -> time.monotonic() when first seen bound.
        self.bound_at: dict[str, float] = {}
        #: pod name -> its node.
        self.node_of: dict[str, str] = {}
        self._resource_version = ""
        self._task: asyncio.Task[None] | None = None
        self._bind_seen = asyncio.Event()
        self.restarts = 0

    @property
    def path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    async def start(self) -> None:
        """Lists what is bound already, then watches from there (returns once watching)."""
        await self._relist()
        self._task = asyncio.create_task(self._run(), name=f"watch:{self.namespace}")
        await asyncio.sleep(0)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def count(self) -> int:
        return len(self.bound_at)

    def last_bind(self) -> float | None:
        return max(self.bound_at.values()) if self.bound_at else None

    def first_bind(self) -> float | None:
        return min(self.bound_at.values()) if self.bound_at else None

    async def wait_for_bind(self, timeout: float) -> bool:
        """True as soon as a new bind is seen, False after ``timeout`` seconds without one."""
        self._bind_seen.clear()
        try:
            await asyncio.wait_for(self._bind_seen.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _record(self, obj: dict[str, object], when: float) -> None:
        metadata = obj.get("metadata")
        spec = obj.get("spec")
        if not isinstance(metadata, dict) or not isinstance(spec, dict):
            return
        name = str(metadata.get("name"))
        node = spec.get("nodeName")
        if node and name not in self.bound_at:
            self.bound_at[name] = when
            self.node_of[name] = str(node)
            self._bind_seen.set()

    async def _relist(self) -> None:
        items, self._resource_version = await self.cluster.list_all(
            self.path, {"fieldSelector": self.selector}
        )
        now = time.monotonic()
        for item in items:
            self._record(item, now)

    async def _run(self) -> None:
        while True:
            try:
                await self._watch_once()
            except asyncio.CancelledError:
                raise
            except (aiohttp.ClientError, TimeoutError, ValueError) as error:
                self.restarts += 1
                say(f"watch on {self.namespace} interrupted ({error!r}); listing again")
                await asyncio.sleep(0.5)
                await self._relist()

    async def _watch_once(self) -> None:
        params = {
            "watch": "true",
            "fieldSelector": self.selector,
            "resourceVersion": self._resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_SECONDS),
        }
        async with self.cluster.api.session.get(
            self.cluster.api.conn.server + self.path,
            params=params,
            headers=self.cluster.headers(),
            timeout=aiohttp.ClientTimeout(total=None, sock_read=WATCH_SECONDS + 30),
        ) as response:
            if response.status >= 400:
                raise ValueError(f"watch refused: {response.status} {await response.text()}")
            async for line in response.content:
                head = line[:40]
                if b'"MODIFIED"' in head or b'"DELETED"' in head or not line.strip():
                    continue
                when = time.monotonic()
                event = json.loads(line)
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    # Usually 410 Gone: the resourceVersion is too old; list again.
                    raise ValueError(f"watch error: {obj.get('message')}")
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if version:
                    self._resource_version = str(version)
                if kind == "ADDED":
                    self._record(obj, when)


class ScheduledEvents(BindWatcher):
    """When each pod's ``Scheduled`` Event was first seen (``bound_at`` is keyed by the pod's
    name here): a run that must write one per bound pod ends once the last is written."""

    selector = "reason=Scheduled"

    @property
    def path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/events"

    def _record(self, obj: dict[str, object], when: float) -> None:
        involved = obj.get("involvedObject")
        if not isinstance(involved, dict) or involved.get("kind") != "Pod":
            return
        name = str(involved.get("name"))
        if name not in self.bound_at:
            self.bound_at[name] = when
            self._bind_seen.set()
