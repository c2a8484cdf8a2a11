"""Past one machine's API server, by simulation: the engine in process, with 50,000 nodes and
500,000 running pods, and no API server.

The whole engine runs (``Scheduler``: intake, queue, loop, binder, reporter, evictor) with the
daemon's framework and settings; only the API server is replaced, by ``SimApi``: a write is
answered at once, a bind comes back as the pod informer's MODIFIED event and an eviction as
its DELETED event, parsed by the daemon's own feeds. So the CPU per pod below is the daemon's
own (parsing watch events, cycles, binds, Events), without HTTP and JSON decoding.

It measures, at ``--nodes`` (50,000) and at a tenth of that with the same pods per node:

- start-up: a saved LIST (pages of 500 as the informer asks, one JSON page a line) read,
  decoded with orjson as the client does, parsed by the informer feeds, handed to the intake
  (``on_nodes_listed``, ``on_pods_listed``): seconds, CPU and memory;
- CPU per pod scheduled, plain pods and gangs, after a warm-up batch (the first pods of a
  shape build its score heaps over every node, once);
- at full size only: the gather of one job of 1,024 members over spine / block / node, and
  the preemption dry run for a job of 256 on the cluster filled with low-priority pods;
- peak RSS of the process.

``python -m bench.simulate [--nodes N] [--out DIR]``; ``python -m bench
--scenarios simulate-50k`` runs it (in a process of its own) without a control plane.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import re
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson
import structlog

from bench import report, targets
from bench.console import Ticker, say
from bench.gather_time import parsed_spec
from bench.report import table
from bench.results import ScenarioResult
from bench.scenarios import BENCH_TOPOLOGY, BLOCK, SPINE
from bench.workload import GANG_MIN, GANG_NAME, SMALL_MIX, TOPOLOGY_INDEX, TOPOLOGY_SPEC
from koordgang.adapters.feeds import Feed
from koordgang.clients.api import JSON
from koordgang.engine.kinds import KINDS
from koordgang.engine.scheduler import Scheduler
from koordgang.framework.cycle_state import CycleState
from koordgang.framework.group import GroupPart, GroupTopology, SchedulingGroup
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.model.group_key import GroupKey
from koordgang.model.namespace import NamespaceInfo
from koordgang.model.pod import parse_pod
from koordgang.plugins.networktopology.plugin import RESOURCE_ID, NetworkTopology
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.gangs import GangRegistry
from koordgang.state.network_topology import ClusterTopology
from koordgang.state.snapshot import Snapshot

# -- targets (issue 19, item 4) ----------------------------------------------------------------

TARGET_GROWTH = targets.CPU_GROWTH.limit
TARGET_GATHER_S = targets.GATHER_SECONDS.limit
TARGET_DRY_RUN_S = targets.DRY_RUN_SECONDS.limit
TARGET_RSS_GB = targets.SIMULATION_RSS_GB.limit

FULL_NODES = 50_000
FINISH = report.SIMULATED_FINISH
PODS_PER_NODE = 10
#: The cycle costs are compared with a cluster this many times smaller.
SMALL_FACTOR = 10
PAGE_SIZE = 500
SCHEDULER_NAME = Settings().scheduler_name
NAMESPACE = "sim"
LOW_PRIORITY = 10
HIGH_PRIORITY = 1000
NODE_CPU = 32
NODE_MEMORY_GI = 128
GATHER_RULES = json.dumps(
    {
        "gatherStrategy": [
            {"layer": "BlockLayer", "strategy": "PreferGather"},
            {"layer": "SpineLayer", "strategy": "MustGather"},
        ]
    }
)


# -- the cluster, as the API server lists it -----------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """``nodes`` nodes of 32 cores in spines of ``blocks_per_spine`` blocks of
    ``nodes_per_block``, each running ``pods_per_node`` pods of the bench's small mix."""

    nodes: int
    pods_per_node: int = PODS_PER_NODE
    nodes_per_block: int = 50
    blocks_per_spine: int = 20

    @property
    def running_pods(self) -> int:
        return self.nodes * self.pods_per_node

    def node_name(self, index: int) -> str:
        return f"node-{index:06d}"

    def domain(self, index: int) -> tuple[str, str]:
        """(spine, block) of node ``index``."""
        block = index // self.nodes_per_block
        spine = block // self.blocks_per_spine
        return f"s{spine:03d}", f"s{spine:03d}-b{block % self.blocks_per_spine:02d}"


def uid(index: int, kind: int = 0) -> str:
    """A UUID-shaped uid (the length of a real one, which the cache keys on)."""
    return f"{kind:08x}-0000-4000-8000-{index:012x}"


def node_object(layout: Layout, index: int) -> dict[str, Any]:
    """A node as the API server lists it (no images: kubelets report up to 50, which only make
    the JSON longer; the scheduler reads none of them)."""
    name = layout.node_name(index)
    spine, block = layout.domain(index)
    capacity = {
        "cpu": str(NODE_CPU),
        "memory": f"{NODE_MEMORY_GI}Gi",
        "pods": "110",
        "ephemeral-storage": "200Gi",
    }
    conditions = [
        {"type": t, "status": "False", "reason": f"Kubelet Has No {t}"}
        for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
    ]
    conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady"})
    return {
        "metadata": {
            "name": name,
            "uid": uid(index, 1),
            "resourceVersion": str(100 + index),
            "creationTimestamp": "2024-05-01T09:00:00Z",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "sim.32xlarge",
                "topology.kubernetes.io/zone": f"zone-{index % 3}",
                SPINE: spine,
                BLOCK: block,
            },
        },
        "spec": {"podCIDR": f"10.{index // 256 % 256}.{index % 256}.0/24"},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{index // 256 % 256}.{index % 256}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.31.0",
                "containerRuntimeVersion": "containerd://1.7.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def running_pod_object(layout: Layout, index: int) -> dict[str, Any]:
    """Running pod ``index`` (on node ``index // pods_per_node``), as listed: made by a
    ReplicaSet, scheduled by another scheduler, low priority, with the fields a kubelet and the
    admission chain add (one managedFields entry, the service-account volume, tolerations)."""
    requests = SMALL_MIX[index % len(SMALL_MIX)]
    app = f"app-{index // 50:05d}"
    name = f"{app}-5d8f7c9b4-{index % 50:05d}"
    node = layout.node_name(index // layout.pods_per_node)
    return {
        "metadata": {
            "name": name,
            "namespace": f"team-{index // 5000 % 100:02d}",
            "uid": uid(index, 2),
            "resourceVersion": str(1_000_000 + index),
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": app, "pod-template-hash": "5d8f7c9b4"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-5d8f7c9b4",
                    "uid": uid(index // 50, 3),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2024-05-01T10:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/app:1.2.3",
                    "resources": {"requests": requests.as_dict()},
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "imagePullPolicy": "IfNotPresent",
                    "volumeMounts": [
                        {
                            "name": "kube-api-access",
                            "readOnly": True,
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        }
                    ],
                }
            ],
            "nodeName": node,
            "schedulerName": "default-scheduler",
            "priority": LOW_PRIORITY,
            "priorityClassName": "low",
            "preemptionPolicy": "PreemptLowerPriority",
            "restartPolicy": "Always",
            "serviceAccountName": "default",
            "tolerations": [
                {
                    "key": f"node.kubernetes.io/{t}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for t in ("not-ready", "unreachable")
            ],
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt"}},
                        ],
                    },
                }
            ],
        },
        "status": {
            "phase": "Running",
            "hostIP": "10.0.0.1",
            "podIP": f"10.128.{index // 256 % 256}.{index % 256}",
            "startTime": "2024-05-01T10:00:01Z",
            "qosClass": "Burstable",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2024-05-01T10:00:01Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": "main",
                    "ready": True,
                    "restartCount": 0,
                    "image": "registry.example/app:1.2.3",
                    "started": True,
                    "state": {"running": {"startedAt": "2024-05-01T10:00:02Z"}},
                }
            ],
        },
    }


def pending_pod_object(
    name: str,
    cpu: str,
    memory: str,
    *,
    annotations: Mapping[str, str] | None = None,
    priority: int | None = None,
    node: str = "",
    scheduler: str = SCHEDULER_NAME,
) -> dict[str, Any]:
    """A pod of ours as its ADDED event shows it (or a running one when ``node`` is given)."""
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
    }
    if priority is not None:
        spec["priority"] = priority
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": "2024-05-01T11:00:00Z",
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def plain_batch(prefix: str, count: int) -> list[dict[str, Any]]:
    """The bench's plain pods: the small mix in turn."""
    shapes = [(r.cpu, r.memory) for r in SMALL_MIX]
    return [pending_pod_object(f"{prefix}-{i:06d}", *shapes[i % len(shapes)]) for i in range(count)]


def gang_batch(
    prefix: str,
    gangs: int,
    size: int,
    *,
    cpu: str = "1",
    priority: int | None = None,
    topology: str = "",
) -> list[dict[str, Any]]:
    """``gangs`` gangs of ``size`` (min ``size``) by Koordinator's annotations; with a
    network-topology spec and ranks when ``topology`` is given."""
    pods = []
    for g in range(gangs):
        gang = f"{prefix}-{g:04d}"
        for m in range(size):
            annotations = {GANG_NAME: gang, GANG_MIN: str(size)}
            if topology:
                annotations |= {TOPOLOGY_SPEC: topology, TOPOLOGY_INDEX: str(m)}
            pods.append(
                pending_pod_object(
                    f"{gang}-{m:05d}", cpu, "2Gi", annotations=annotations, priority=priority
                )
            )
    return pods


def list_pages(
    kind: str, items: Iterable[dict[str, Any]], size: int = PAGE_SIZE
) -> Iterator[dict[str, Any]]:
    """``items`` as the API server pages a LIST of ``kind`` (``limit`` = ``size``)."""
    page: list[dict[str, Any]] = []
    number = 0

    def reply(last: bool) -> dict[str, Any]:
        meta = {"resourceVersion": "9999999"}
        if not last:
            meta["continue"] = f"page-{number + 1}"
        return {"kind": kind, "apiVersion": "v1", "metadata": meta, "items": page}

    for item in items:
        page.append(item)
        if len(page) == size:
            yield reply(False)
            page, number = [], number + 1
    yield reply(True)


def write_list(path: Path, pages: Iterable[dict[str, Any]]) -> int:
    """One page a line; returns the bytes written. Page by page, so that the writer never
    holds more than one page either."""
    written = 0
    with path.open("wb") as out:
        for page in pages:
            line = orjson.dumps(page) + b"\n"
            out.write(line)
            written += len(line)
    return written


def saved_pages(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as lines:
        for line in lines:
            yield orjson.loads(line)


# -- the API server, answered in process ---------------------------------------------------------

_BINDING = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding$")
_POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$")


class SimApi:
    """``KubeApi.request`` with no server: every write succeeds after one turn of the event
    loop (as a reply would come); a bind and an eviction come back as the pod informer's
    events, through the daemon's own feed (``echo``)."""

    def __init__(self) -> None:
        #: Our pods not bound yet, by name: what a MODIFIED event after their bind shows.
        self.pending: dict[str, dict[str, Any]] = {}
        self.binds = 0
        self.evictions = 0
        self.writes: dict[str, int] = {}
        self.echo: Callable[[str, dict[str, Any]], None] = lambda kind, obj: None
        #: Set when ``pending`` has run dry.
        self.all_bound = asyncio.Event()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float = 30.0,
    ) -> Any:
        await asyncio.sleep(0)
        kind = method + (" binding" if _BINDING.match(path) else "")
        self.writes[kind] = self.writes.get(kind, 0) + 1
        bound = _BINDING.match(path)
        if bound:
            self._bound(bound[2], body["target"]["name"])
        elif method == "DELETE" and _POD.match(path):
            self.evictions += 1
            # A victim deleted: its grace period is not simulated, it is gone at once.
            asyncio.get_running_loop().call_soon(
                self.echo, "DELETED", {"metadata": {"uid": body["preconditions"]["uid"]}}
            )
        return {}

    def _bound(self, name: str, node: str) -> None:
        obj = self.pending.pop(name)
        spec = {**obj["spec"], "nodeName": node}
        meta = {**obj["metadata"], "resourceVersion": "2"}
        self.binds += 1
        asyncio.get_running_loop().call_soon(
            self.echo, "MODIFIED", {**obj, "metadata": meta, "spec": spec}
        )
        if not self.pending:
            self.all_bound.set()


# -- measuring ----------------------------------------------------------------------------------


def rss_mb() -> float:
    """Resident memory now."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


class GcTimer:
    """Seconds the cyclic garbage collector ran, while started (with 500,000 pods in memory
    a full collection walks every object: part of the cost, and worth showing apart)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._since = 0.0

    def __enter__(self) -> GcTimer:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._since = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._since


@dataclass
class Batch:
    """Pods of ours from their ADDED events to all bound (and the writes after it done)."""

    label: str
    pods: int
    cpu_s: float
    wall_s: float
    gc_s: float

    @property
    def cpu_ms_per_pod(self) -> float:
        return 1000 * self.cpu_s / self.pods if self.pods else 0.0


@dataclass
class StartUp:
    nodes: int
    pods: int
    list_mb: float
    seconds: float
    cpu_s: float
    rss_before_mb: float
    rss_after_mb: float


@dataclass
class SizeFigures:
    """What was measured on one cluster size."""

    nodes: int
    running_pods: int
    startup: StartUp
    warmup: list[Batch] = field(default_factory=list)
    plain: Batch | None = None
    gang: Batch | None = None
    notes: dict[str, Any] = field(default_factory=dict)


class Simulation:
    """One daemon's engine on one simulated cluster."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.settings = Settings()
        self.api = SimApi()
        gangs = GangRegistry(self.settings.default_gang_waiting_time, resolve=Resolve(GANG_APIS))
        # As the daemon does: the topology's status is written from what the plugin placed in.
        topology = ClusterTopology()
        self.framework = default_framework(self.settings, gangs, topology=topology)
        self.scheduler = Scheduler(
            self.settings,
            self.api,  # type: ignore[arg-type]
            self.framework,
            topology=topology,
        )
        intake = self.scheduler.intake
        feeds = {kind.name: Feed(kind, intake) for kind in KINDS if kind.store is None}
        self.pods = feeds["pods"]
        self.api.echo = self.pods.event
        self._nodes = feeds["nodes"]
        self._tasks: list[asyncio.Task[None]] = []

    # -- start-up ---------------------------------------------------------------------------

    def save_list(self, folder: Path) -> tuple[Path, Path]:
        """Writes the cluster's LIST replies, nodes and pods, with progress."""
        layout = self.layout
        nodes_path, pods_path = folder / "nodes.jsonl", folder / "pods.jsonl"
        write_list(
            nodes_path,
            list_pages("NodeList", (node_object(layout, i) for i in range(layout.nodes))),
        )
        ticker = Ticker(5.0)
        total = layout.running_pods

        def pods() -> Iterator[dict[str, Any]]:
            for i in range(total):
                if i % PAGE_SIZE == 0 and ticker.due():
                    say(f"  writing the saved LIST: {i:,} of {total:,} pods")
                yield running_pod_object(layout, i)

        size = write_list(pods_path, list_pages("PodList", pods()))
        say(f"  saved LIST written: {size / 2**20:,.0f} MB of pods")
        return nodes_path, pods_path

    def load_list(self, nodes_path: Path, pods_path: Path) -> StartUp:
        """The informers' first LIST, from the saved replies, page by page as they page it."""
        gc.collect()
        before = rss_mb()
        list_mb = (nodes_path.stat().st_size + pods_path.stat().st_size) / 2**20
        ticker = Ticker(5.0)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        # As the daemon does from its start until the first full view is in.
        self.scheduler.intake.collector.relax()
        for feed, path in ((self._nodes, nodes_path), (self.pods, pods_path)):
            feed.begin_list()
            for count, page in enumerate(saved_pages(path), 1):
                feed.list_page(page["items"])
                if ticker.due():
                    say(f"  start-up: {path.stem}: {count * PAGE_SIZE:,} parsed")
            feed.end_list()
        namespaces = [NamespaceInfo(NAMESPACE, {})]
        namespaces += [NamespaceInfo(f"team-{i:02d}", {}) for i in range(100)]
        intake = self.scheduler.intake
        for kind in KINDS:
            if kind.store is not None:  # nodes and pods: above
                intake.kind(kind.name).listed(namespaces if kind.name == "namespaces" else [])
        self.scheduler.intake.on_object(RESOURCE_ID, "ADDED", BENCH_TOPOLOGY)
        seconds, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        if not self.scheduler.ready:
            raise RuntimeError("the intake is not ready after every LIST")
        return StartUp(
            nodes=len(self.scheduler.cache.nodes()),
            pods=self.scheduler.cache.pod_count(),
            list_mb=round(list_mb, 1),
            seconds=round(seconds, 2),
            cpu_s=round(cpu, 2),
            rss_before_mb=round(before, 1),
            rss_after_mb=round(rss_mb(), 1),
        )

    # -- the engine running ------------------------------------------------------------------

    def start(self) -> None:
        """The loop and the writers, as ``Scheduler.start`` runs them (without the supervisor:
        a failure here ends the run instead of restarting the task)."""
        s = self.scheduler
        spawn = self._tasks.append
        for index in range(s.reporter.workers):
            spawn(asyncio.create_task(s.reporter.work(), name=f"reporter-{index}"))
        spawn(asyncio.create_task(s.status_writer.work(), name="status-writer"))
        for index in range(s.evictor.workers):
            spawn(asyncio.create_task(s.evictor.work(), name=f"evictor-{index}"))
        spawn(asyncio.create_task(s.loop.run(), name="scheduling-loop"))

    async def stop(self) -> None:
        self.scheduler.loop.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def schedule(self, label: str, objects: Sequence[dict[str, Any]]) -> Batch:
        """Delivers ``objects`` as ADDED events and waits until all are bound and the engine is
        quiet again (binds, Events, evictions written): the CPU of that is the batch's."""
        api = self.api
        api.all_bound.clear()
        api.pending = {obj["metadata"]["name"]: obj for obj in objects}
        with GcTimer() as gc_timer:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for obj in objects:
                self.pods.event("ADDED", obj)
            # Generous: 1,000 pods a second is about what the daemon binds on this machine.
            timeout = 60.0 + len(objects) / 100
            try:
                await asyncio.wait_for(api.all_bound.wait(), timeout)
            except TimeoutError:
                raise RuntimeError(
                    f"{label}: {len(api.pending)} of {len(objects)} pods not bound after "
                    f"{timeout:.0f} s"
                ) from None
            await self._quiet()
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        for task in self._tasks:
            if task.done():
                raise RuntimeError(f"{task.get_name()} ended: {task.exception()!r}")
        return Batch(label, len(objects), round(cpu, 3), round(wall, 3), round(gc_timer.seconds, 3))

    async def _quiet(self) -> None:
        s = self.scheduler
        # No event says "nothing left to write" (the daemon never needs one): poll.
        while s.binder.in_flight or s.evictor.backlog or s.reporter.backlog:  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    # -- gather and preemption -----------------------------------------------------------------

    def gather(self, members: int) -> dict[str, Any]:
        """One placement of a job of ``members`` pods of ``GATHER_CPU`` cores that prefers one
        block and must stay in one spine, timed as ``gather_time`` times it: the topology plugin's
        ``place_group`` on a fork of a snapshot of the live cache."""
        [plugin] = [p for p in self.framework.plugins if isinstance(p, NetworkTopology)]
        objects = gang_batch("gather", 1, members, cpu=GATHER_CPU, topology=GATHER_RULES)
        job = [parse_pod(o) for o in objects]
        group = SchedulingGroup(
            GroupKey((f"{NAMESPACE}/gather",)),
            [GroupPart(f"{NAMESPACE}/gather", job, minimum=members)],
            job[0],
            topology=GroupTopology(parsed_spec(GATHER_RULES)),
        )
        snapshot = Snapshot(self.scheduler.cache)
        started = time.perf_counter()
        plugin.tree(snapshot)  # built once per change of the node set or labels, not per job
        tree_s = time.perf_counter() - started
        started = time.perf_counter()
        plan = plugin.place_group(CycleState(), group, snapshot.fork(), self.framework.placer)
        seconds = time.perf_counter() - started
        placements = [] if plan is None else plan.placements()
        nodes = {p.node_name for p in placements}
        blocks = {self.scheduler.cache.node(n).info.labels.get(BLOCK) for n in nodes}  # type: ignore[union-attr]
        spines = {self.scheduler.cache.node(n).info.labels.get(SPINE) for n in nodes}  # type: ignore[union-attr]
        return {
            "members": members,
            "gather_s": round(seconds, 3),
            "tree_s": round(tree_s, 3),
            "placed": len(placements),
            "nodes": len(nodes),
            "blocks": len(blocks),
            "spines": len(spines),
        }

    def fill(self) -> int:
        """Low-priority pods that take every core left, one per node, as ADDED events (bound
        already): after them the cluster is full everywhere."""
        count = 0
        for state in self.scheduler.cache.nodes():
            free = state.free("cpu")
            if free <= 0:
                continue
            obj = pending_pod_object(
                f"fill-{state.name}",
                f"{free}m",
                "1Gi",
                priority=LOW_PRIORITY,
                node=state.name,
                scheduler="default-scheduler",
            )
            self.pods.event("ADDED", obj)
            count += 1
        return count

    def dry_run_seconds(self) -> tuple[int, float]:
        """(dry runs, their total seconds) from the daemon's own histogram."""
        runs, total = 0, 0.0
        for metric in self.scheduler.metrics.preemption_dry_run.collect():
            for sample in metric.samples:
                if sample.name.endswith("_count"):
                    runs = int(sample.value)
                elif sample.name.endswith("_sum"):
                    total = sample.value
        return runs, total


def _check_free_cpu_is_milli() -> None:
    """``fill`` reads the cache's CPU in millicores: fail loudly if that ever changes."""
    from koordgang.model.resources import parse_amounts

    if dict(parse_amounts({"cpu": "1"})).get("cpu") != 1000:
        raise RuntimeError("CPU amounts are not millicores any more: fix Simulation.fill")


# -- the run --------------------------------------------------------------------------------------


@dataclass
class Figures:
    nodes: int
    sizes: list[SizeFigures] = field(default_factory=list)
    gather: dict[str, Any] = field(default_factory=dict)
    preemption: dict[str, Any] = field(default_factory=dict)
    peak_rss_mb: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


#: Pods of ours per measured batch: the same at both sizes, so the cost per pod compares.
PLAIN_PODS = 10_000
GANGS, GANG_SIZE = 100, 100
WARMUP_PLAIN = 1_000
WARMUP_GANGS = 5
GATHER_MEMBERS = 1_024
#: Four cores a member: the job needs a few blocks of one spine, so that the tree is summed and
#: a domain chosen, not the first block taken whole.
GATHER_CPU = "4"
PREEMPTION_MEMBERS = 256


def quiet_logs() -> None:
    """The engine logs every preemption and eviction at info: not here."""
    import logging

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


async def _measure_size(
    layout: Layout, folder: Path, scale: float, *, full: bool, figures: Figures
) -> SizeFigures:
    say(
        f"=== {layout.nodes:,} nodes, {layout.running_pods:,} running pods "
        f"({layout.pods_per_node} a node) ==="
    )
    sim = Simulation(layout)
    nodes_path, pods_path = sim.save_list(folder)
    say("start-up: reading the saved LIST as the informers do ...")
    startup = sim.load_list(nodes_path, pods_path)
    say(
        f"start-up: {startup.nodes:,} nodes and {startup.pods:,} pods in {startup.seconds:.1f} s "
        f"({startup.cpu_s:.1f} s CPU), RSS {startup.rss_before_mb:,.0f} -> "
        f"{startup.rss_after_mb:,.0f} MB"
    )
    for path in (nodes_path, pods_path):
        path.unlink()
    size = SizeFigures(layout.nodes, layout.running_pods, startup)
    # Batches in proportion to the cluster asked for (they fit in its small size's free room).
    scale *= figures.nodes / FULL_NODES
    plain_pods = max(10, round(PLAIN_PODS * scale))
    gangs = max(2, round(GANGS * scale))
    sim.start()
    try:
        for label, objects in (
            ("warm-up plain", plain_batch("warm", max(5, round(WARMUP_PLAIN * scale)))),
            ("warm-up gangs", gang_batch("warm", max(1, round(WARMUP_GANGS * scale)), GANG_SIZE)),
        ):
            batch = await sim.schedule(label, objects)
            size.warmup.append(batch)
            say(f"{label}: {batch.pods:,} pods in {batch.wall_s:.2f} s, {batch.cpu_s:.2f} s CPU")
        size.plain = await sim.schedule("plain", plain_batch("plain", plain_pods))
        say(_batch_line(size.plain))
        size.gang = await sim.schedule("gang", gang_batch("job", gangs, GANG_SIZE))
        say(_batch_line(size.gang))
        if full:
            say(f"gather: one job of {GATHER_MEMBERS:,} over spine / block / node ...")
            figures.gather = sim.gather(GATHER_MEMBERS)
            say(f"gather: {figures.gather}")
            job = gang_batch("topo", 1, GATHER_MEMBERS, cpu=GATHER_CPU, topology=GATHER_RULES)
            through = await sim.schedule("gathered job", job)
            figures.gather["engine_wall_s"] = through.wall_s
            figures.gather["engine_cpu_s"] = through.cpu_s
            say(f"gather: the same job through the engine, ADDED -> all bound: {through.wall_s} s")
            filled = sim.fill()
            say(f"preemption: {filled:,} low-priority pods fill every node's free cores")
            evictions = sim.api.evictions
            job = gang_batch("urgent", 1, PREEMPTION_MEMBERS, priority=HIGH_PRIORITY)
            batch = await sim.schedule("preemption", job)
            runs, dry_s = sim.dry_run_seconds()
            figures.preemption = {
                "members": PREEMPTION_MEMBERS,
                "filled": filled,
                "dry_runs": runs,
                "dry_run_s": round(dry_s / runs, 3) if runs else None,
                "victims": sim.api.evictions - evictions,
                "engine_wall_s": batch.wall_s,
                "engine_cpu_s": batch.cpu_s,
            }
            say(f"preemption: {figures.preemption}")
    finally:
        await sim.stop()
    size.notes["writes"] = dict(sim.api.writes)
    return size


def _batch_line(batch: Batch) -> str:
    return (
        f"{batch.label}: {batch.pods:,} pods bound in {batch.wall_s:.2f} s, "
        f"{batch.cpu_ms_per_pod:.3f} CPU ms/pod (GC {batch.gc_s:.2f} s of {batch.cpu_s:.2f} s)"
    )


def run(nodes: int = FULL_NODES, scale: float = 1.0, list_dir: Path | None = None) -> Figures:
    """Both sizes, the small one first (its memory is given back before the large one is
    built, so the peak is the large one's)."""
    _check_free_cpu_is_milli()
    quiet_logs()
    figures = Figures(nodes=nodes)
    folder = Path(tempfile.mkdtemp(prefix="koordgang-sim-", dir=list_dir))
    try:
        for count, full in ((max(1, nodes // SMALL_FACTOR), False), (nodes, True)):
            size = asyncio.run(
                _measure_size(Layout(count), folder, scale, full=full, figures=figures)
            )
            figures.sizes.append(size)
            gc.collect()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    figures.peak_rss_mb = round(peak_rss_mb(), 1)
    figures.meta = {
        "host": platform.node(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
    }
    return figures


# -- the table ------------------------------------------------------------------------------------


def verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "MISSED")


def growth(figures: Figures, kind: str) -> float | None:
    """CPU per pod at the large size over the small one's."""
    if len(figures.sizes) < 2:
        return None
    small: Batch | None = getattr(figures.sizes[0], kind)
    large: Batch | None = getattr(figures.sizes[1], kind)
    if small is None or large is None or not small.cpu_ms_per_pod:
        return None
    return large.cpu_ms_per_pod / small.cpu_ms_per_pod


def result_lines(figures: Figures) -> list[str]:
    """The figures against the targets, one row each."""
    rows: list[list[str]] = []
    sizes = figures.sizes
    for kind in ("plain", "gang"):
        costs = [getattr(s, kind) for s in sizes]
        ratio = growth(figures, kind)
        rows.append(
            [
                f"CPU ms per pod, {kind}",
                " -> ".join(
                    f"{c.cpu_ms_per_pod:.3f} ({s.nodes:,} nodes)"
                    for s, c in zip(sizes, costs, strict=True)
                    if c is not None
                ),
                "-" if ratio is None else f"{ratio:.2f}x",
                f"<= {TARGET_GROWTH}x",
                verdict(None if ratio is None else ratio <= TARGET_GROWTH),
            ]
        )
    gather = figures.gather
    if gather:
        ok = gather["placed"] == gather["members"] and gather["gather_s"] < TARGET_GATHER_S
        rows.append(
            [
                f"gather, job of {gather['members']:,}",
                f"{gather['placed']:,} placed on {gather['nodes']} nodes, "
                f"{gather['blocks']} blocks, {gather['spines']} spine(s); "
                f"tree {gather['tree_s']} s",
                f"{gather['gather_s']:.3f} s",
                f"< {TARGET_GATHER_S:.0f} s",
                verdict(ok),
            ]
        )
    pre = figures.preemption
    if pre:
        seconds = pre["dry_run_s"]
        rows.append(
            [
                f"preemption dry run, job of {pre['members']}",
                f"{pre['victims']} victims, {pre['dry_runs']} dry run(s), all bound after "
                f"{pre['engine_wall_s']} s",
                "-" if seconds is None else f"{seconds:.3f} s",
                f"< {TARGET_DRY_RUN_S:.0f} s",
                verdict(None if seconds is None else seconds < TARGET_DRY_RUN_S),
            ]
        )
    for s in sizes:
        up = s.startup
        rows.append(
            [
                f"start-up, {up.nodes:,} nodes",
                f"{up.pods:,} pods from a {up.list_mb:,.0f} MB LIST, {up.cpu_s:.1f} s CPU, "
                f"RSS +{up.rss_after_mb - up.rss_before_mb:,.0f} MB",
                f"{up.seconds:.1f} s",
                "-",
                "-",
            ]
        )
    rss_gb = figures.peak_rss_mb / 1024
    rows.append(
        [
            "peak RSS",
            f"the process, at {figures.nodes:,} nodes",
            f"{rss_gb:.2f} GB",
            f"< {TARGET_RSS_GB:.0f} GB",
            verdict(rss_gb < TARGET_RSS_GB),
        ]
    )
    header = ["figure", "detail", "value", "target", "verdict"]
    return table(header, rows)


def cost_lines(figures: Figures) -> list[str]:
    """Every batch, with wall time and the collector's share."""
    rows = [
        [
            f"{s.nodes:,}",
            b.label,
            f"{b.pods:,}",
            f"{b.wall_s:.2f}",
            f"{b.cpu_s:.2f}",
            f"{b.gc_s:.2f}",
            f"{b.cpu_ms_per_pod:.3f}",
        ]
        for s in figures.sizes
        for b in [*s.warmup, *(x for x in (s.plain, s.gang) if x is not None)]
    ]
    header = ["nodes", "batch", "pods", "wall s", "CPU s", "GC wall s", "CPU ms/pod"]
    return table(header, rows)


def to_json(figures: Figures) -> dict[str, Any]:
    document = asdict(figures)
    for kind in ("plain", "gang"):
        document[f"growth_{kind}"] = growth(figures, kind)
    return document


def write(figures: Figures, out: Path, name: str) -> list[str]:
    """``<name>.txt`` and ``<name>.json`` in ``out``; returns the text's lines."""
    lines = [
        f"simulation: the engine in process, {figures.nodes:,} nodes "
        f"({figures.meta.get('cores')} cores, Python {figures.meta.get('python')})",
        "",
        *result_lines(figures),
        "",
        *cost_lines(figures),
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.txt").write_text("\n".join(lines) + "\n")
    (out / f"{name}.json").write_text(json.dumps(to_json(figures), indent=2) + "\n")
    return lines


def bench_result(name: str, summary: str, out: Path, exit_code: int) -> ScenarioResult:
    """What ``python -m bench`` records of a simulation it ran (``write`` wrote ``out``)."""
    path = out / f"{name}.json"
    if exit_code or not path.is_file():
        return ScenarioResult(
            name, summary, FINISH, 0, 0, 0, 0, problems=[f"run failed: exit code {exit_code}"]
        )
    document = json.loads(path.read_text())
    lines = (out / f"{name}.txt").read_text().splitlines()
    large = document["sizes"][-1]
    return ScenarioResult(
        name,
        summary,
        FINISH,
        nodes=large["nodes"],
        pods=large["running_pods"],
        gangs=0,
        expected=0,
        daemon_peak_rss_mb=document["peak_rss_mb"],
        notes={report.SIMULATION_LINES: lines, "figures": document},
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.simulate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--nodes", type=int, default=FULL_NODES, help="(default: %(default)s)")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiplies the pods of ours per batch, which are in proportion to --nodes "
        "already (default: 1)",
    )
    parser.add_argument("--out", type=Path, help="writes NAME.txt and NAME.json there")
    parser.add_argument("--name", default="simulate-50k", help="(default: %(default)s)")
    parser.add_argument(
        "--list-dir", type=Path, help="where the saved LIST is written (default: the temp dir)"
    )
    args = parser.parse_args(argv)
    if args.nodes < SMALL_FACTOR or args.scale <= 0:
        parser.error(f"--nodes must be at least {SMALL_FACTOR}, --scale positive")
    figures = run(args.nodes, args.scale, args.list_dir)
    lines = write(figures, args.out, args.name) if args.out else [*result_lines(figures)]
    print("\n" + "\n".join(lines if args.out else [*lines, "", *cost_lines(figures)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
