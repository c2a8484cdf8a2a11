"""What a scenario puts on the cluster: fake nodes, pods of ours, and pods already placed.

Pods are plain dictionaries ready to POST; each carries the label ``BENCH_LABEL`` so that
leftovers of any run can be found and deleted, whatever namespace they are in.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controlplane import NodeSpec

#: Our scheduler; the daemon schedules only pods naming it.
SCHEDULER = "koord-scheduler"
#: Pods the ceiling client binds itself; no scheduler picks them up.
CEILING_SCHEDULER = "bench-ceiling"
#: Pods created already bound (spec.nodeName), only there to fill the daemon's cache.
FILLER_SCHEDULER = "bench-filler"

BENCH_LABEL = "koordgang-bench"
GANG_NAME = "gang.scheduling.koordinator.sh/name"
GANG_MIN = "gang.scheduling.koordinator.sh/min-available"
TOPOLOGY_SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"
TOPOLOGY_INDEX = "gang.scheduling.koordinator.sh/network-topology-index"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

#: PriorityClasses the scenarios use, by name: value.
PRIORITY_CLASSES: Mapping[str, int] = {"bench-low": 10, "bench-high": 1000}

#: The usual fake node: 32 cores, 128 GiB, 110 pods.
STANDARD_NODE: Mapping[str, str] = {"cpu": "32", "memory": "128Gi", "pods": "110"}


@dataclass(frozen=True, slots=True)
class Requests:
    cpu: str
    memory: str

    def as_dict(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory}


#: "Mixed small requests": what a plain batch of web or batch pods tends to ask for.
SMALL_MIX: tuple[Requests, ...] = (
    Requests("100m", "128Mi"),
    Requests("250m", "256Mi"),
    Requests("500m", "512Mi"),
    Requests("1", "1Gi"),
    Requests("200m", "384Mi"),
)


@dataclass(frozen=True, slots=True)
class GangRef:
    name: str
    min_available: int


@dataclass(frozen=True, slots=True)
class CompositePlan:
    """A CompositePodGroup over gangs of the workload: ``min_groups`` of ``children`` whole at
    once, all of them inside one value of ``key``, each child inside one value of
    ``child_key`` ("": no constraint)."""

    name: str
    min_groups: int
    children: tuple[str, ...]
    key: str = ""
    child_key: str = ""


@dataclass(frozen=True, slots=True)
class ClaimUse:
    """A ResourceClaim the pod uses: ``name`` in its ``spec.resourceClaims`` (and its
    container's ``resources.claims``), ``claim`` the ResourceClaim's own name."""

    name: str
    claim: str


@dataclass(frozen=True, slots=True)
class PodPlan:
    """One pod to create. ``node_name`` set means it is created already bound."""

    name: str
    requests: Requests
    scheduler: str = SCHEDULER
    gang: GangRef | None = None
    node_name: str = ""
    #: A PriorityClass (see ``PRIORITY_CLASSES``); "" for none.
    priority_class: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: ResourceClaims (made beforehand, by name) that the pod's one container uses.
    claims: tuple[ClaimUse, ...] = ()
    #: Extended resources (name -> count) its container asks for, as requests and limits.
    extended: Mapping[str, int] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "labels": {BENCH_LABEL: "1"}}
        annotations = dict(self.annotations)
        if self.gang is not None:
            annotations[GANG_NAME] = self.gang.name
            annotations[GANG_MIN] = str(self.gang.min_available)
        if annotations:
            metadata["annotations"] = annotations
        spec: dict[str, Any] = {
            "schedulerName": self.scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": PAUSE_IMAGE,
                    "resources": {"requests": self.requests.as_dict()},
                }
            ],
        }
        if self.extended:
            counts = {name: str(count) for name, count in self.extended.items()}
            spec["containers"][0]["resources"]["requests"].update(counts)
            spec["containers"][0]["resources"]["limits"] = dict(counts)
        if self.claims:
            spec["resourceClaims"] = [
                {"name": c.name, "resourceClaimName": c.claim} for c in self.claims
            ]
            spec["containers"][0]["resources"]["claims"] = [{"name": c.name} for c in self.claims]
        if self.node_name:
            spec["nodeName"] = self.node_name
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


@dataclass(frozen=True)
class DraPlan:
    """The DRA objects of one workload (built by ``bench.dra`` or ``bench.dra_forms``)."""

    device_classes: Sequence[Mapping[str, Any]]
    #: The drivers' ResourceSlices: one per node (``bench.dra``), or more.
    slices: Sequence[Mapping[str, Any]]
    #: ResourceClaim name -> devices of the bench's one class it asks for, in pod order
    #: (``bench.dra``).
    claims: Mapping[str, int] = field(default_factory=dict)
    #: Further ResourceClaims, whole (``bench.dra_forms``).
    claim_bodies: Sequence[Mapping[str, Any]] = ()
    #: Gang name -> the claim its members share (an upstream PodGroup names it too).
    group_claims: Mapping[str, ClaimUse] = field(default_factory=dict)
    #: Which check judges the run: "dra" (``bench.dra_check``) or "dra-forms"
    #: (``bench.dra_forms_check``).
    check: str = "dra"

    @property
    def devices(self) -> int:
        return sum(len(s["spec"].get("devices") or ()) for s in self.slices)

    @property
    def wanted(self) -> int:
        return sum(self.claims.values())


@dataclass(frozen=True)
class Workload:
    """Everything one scenario creates before the daemon starts.

    ``pods`` go into the scenario's namespace and are what the run measures; ``fillers`` go into
    a namespace of their own, already bound, and only occupy the daemon's cache and the nodes.
    ``capacity_pods`` is how many of ``pods`` the cluster can hold when that is fewer than all
    (a contention scenario is over when that many are bound).
    """

    nodes: Sequence[NodeSpec]
    pods: Sequence[PodPlan]
    fillers: Sequence[PodPlan] = ()
    capacity_pods: int | None = None
    notes: Mapping[str, Any] = field(default_factory=dict)
    #: The ClusterNetworkTopology to create (None: there is none).
    topology: Mapping[str, Any] | None = None
    #: Dynamic Resource Allocation: the DeviceClass and ResourceSlices of the cluster (set-up)
    #: and the ResourceClaims the pods use (made afresh before each measurement); None: none.
    dra: DraPlan | None = None
    #: Gangs of gangs: upstream CompositePodGroups over the gangs of ``pods`` (empty: none).
    composites: Sequence[CompositePlan] = ()

    @property
    def gangs(self) -> dict[str, int]:
        """Gang name -> min-available, for the pods of ours."""
        return {p.gang.name: p.gang.min_available for p in self.pods if p.gang is not None}

    @property
    def members(self) -> dict[str, list[str]]:
        """Gang name -> the names of its pods, for the pods of ours."""
        members: dict[str, list[str]] = {}
        for pod in self.pods:
            if pod.gang is not None:
                members.setdefault(pod.gang.name, []).append(pod.name)
        return members

    @property
    def expected_bound(self) -> int:
        return len(self.pods) if self.capacity_pods is None else self.capacity_pods


def scaled(count: int, scale: float, minimum: int = 1) -> int:
    return max(minimum, round(count * scale))


def node_specs(prefix: str, count: int, capacity: Mapping[str, str]) -> list[NodeSpec]:
    """``prefix-0001`` ...; names are stable, so scenarios with the same nodes reuse them."""
    return [NodeSpec(name=f"{prefix}-{i:04d}", capacity=dict(capacity)) for i in range(count)]


def standard_nodes(count: int) -> list[NodeSpec]:
    return node_specs("bench-node", count, STANDARD_NODE)


def plain_pods(
    prefix: str, count: int, mix: Sequence[Requests] = SMALL_MIX, scheduler: str = SCHEDULER
) -> list[PodPlan]:
    shapes = itertools.cycle(mix)
    return [
        PodPlan(name=f"{prefix}-{i:05d}", requests=next(shapes), scheduler=scheduler)
        for i in range(count)
    ]


def gang_pods(
    prefix: str,
    gangs: int,
    size: int,
    requests: Requests,
    min_available: int | None = None,
    priority_class: str = "",
) -> list[PodPlan]:
    """``gangs`` gangs of ``size`` members each (min-available defaults to the size)."""
    pods: list[PodPlan] = []
    for g in range(gangs):
        ref = GangRef(name=f"{prefix}-{g:03d}", min_available=min_available or size)
        pods += [
            PodPlan(
                name=f"{ref.name}-{m:04d}",
                requests=requests,
                gang=ref,
                priority_class=priority_class,
            )
            for m in range(size)
        ]
    return pods


def spread_bound(
    prefix: str,
    count: int,
    nodes: Sequence[NodeSpec],
    requests: Requests,
    scheduler: str,
    priority_class: str = "",
) -> list[PodPlan]:
    """``count`` pods assigned round-robin to ``nodes`` (as created bound, or as bind targets)."""
    names = round_robin(nodes)
    return [
        PodPlan(
            name=f"{prefix}-{i:05d}",
            requests=requests,
            scheduler=scheduler,
            node_name=next(names),
            priority_class=priority_class,
        )
        for i in range(count)
    ]


def round_robin(nodes: Sequence[NodeSpec]) -> Iterator[str]:
    return itertools.cycle([n.name for n in nodes])
