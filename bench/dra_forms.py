"""The DRA scenario in the forms a Kubernetes 1.37 GPU cluster offers (``--scenarios
dra-forms``): partitioned GPUs, GPUs asked for as an extended resource, and one claim for a
whole gang.

Every node has ``GPUS_PER_NODE`` GPUs of the driver ``DRIVER``, published as MIG is: each GPU's
counter set (``GPU_MEMORY`` of memory) in a slice of counters, and in a slice of devices the
whole GPU (``gpu-<g>``, profile ``whole``, drawing all of it) and ``PARTS`` partitions
(``gpu-<g>-part-<p>``, profile ``part``, a share each): a pool of two slices named after the
node. A network-attached pool (``allNodes``) of ``FABRIC_CHANNELS`` channels of the driver
``FABRIC_DRIVER`` reaches every node. Three DeviceClasses: ``WHOLE_CLASS`` (whole GPUs, also
the extended resource ``EXTENDED_RESOURCE``: nodes do not have it as allocatable, so it is
served through DRA), ``PART_CLASS`` (partitions) and ``FABRIC_CLASS`` (channels).

The pods: lone pods asking ``EXTENDED_RESOURCE: 1`` and no claim (the scheduler makes the claim
as it binds them); lone pods with a claim of one partition each; gangs whose members each
claim a partition and share one fabric channel, the gang's claim: in upstream's gang API their
PodGroup names it (Kubernetes 1.37's PodGroup claims, reserved for the PodGroup), in the others
it is a claim every member names (reserved for each). Claims are made before the window, as in
``bench.dra``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from bench.dra import API_VERSION, CLAIM_FINALIZER, SPEC_DIGEST, resource_claim
from bench.workload import BENCH_LABEL, ClaimUse, DraPlan, PodPlan
from controlplane import NodeSpec

__all__ = [
    "CLAIM_FINALIZER",
    "DRIVER",
    "EXTENDED_RESOURCE",
    "FABRIC_DRIVER",
    "forms_plan",
    "with_extended",
    "with_fabric",
    "with_partition",
]

DRIVER = "gpu.example.com"
FABRIC_DRIVER = "fabric.example.com"
GPUS_PER_NODE = 4
PARTS = 4
GPU_MEMORY_GI = 80
FABRIC_POOL = "fabric"
FABRIC_CHANNELS = 128
WHOLE_CLASS = "whole.gpu.example.com"
PART_CLASS = "part.gpu.example.com"
FABRIC_CLASS = FABRIC_DRIVER
EXTENDED_RESOURCE = "gpu.example.com/gpu"
#: The entries' names in the pods (and the PodGroups): a partition, the gang's channel.
PART_ENTRY = "part"
FABRIC_ENTRY = "fabric"
#: Each claim's one request.
REQUEST = "dev"


def device_classes() -> list[dict[str, Any]]:
    def cls(name: str, expression: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}], **(extra or {})}
        return {
            "apiVersion": API_VERSION,
            "kind": "DeviceClass",
            "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}},
            "spec": spec,
        }

    profile = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].profile == '
    return [
        cls(WHOLE_CLASS, profile + '"whole"', {"extendedResourceName": EXTENDED_RESOURCE}),
        cls(PART_CLASS, profile + '"part"'),
        cls(FABRIC_CLASS, f'device.driver == "{FABRIC_DRIVER}"'),
    ]


def _slice(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {
            "name": name,
            "labels": {BENCH_LABEL: "1"},
            "annotations": {SPEC_DIGEST: digest},
        },
        "spec": spec,
    }


def node_slices(node: str) -> list[dict[str, Any]]:
    """The two slices of ``node``'s pool: its GPUs' counter sets, and the devices drawing on
    them."""
    pool = {"name": node, "generation": 1, "resourceSliceCount": 2}
    share = GPU_MEMORY_GI // PARTS

    def device(name: str, gpu: int, profile: str, gib: int) -> dict[str, Any]:
        return {
            "name": name,
            "attributes": {"profile": {"string": profile}, "gpu": {"int": gpu}},
            "consumesCounters": [
                {"counterSet": f"gpu-{gpu}", "counters": {"memory": {"value": f"{gib}Gi"}}}
            ],
        }

    counters = [
        {"name": f"gpu-{g}", "counters": {"memory": {"value": f"{GPU_MEMORY_GI}Gi"}}}
        for g in range(GPUS_PER_NODE)
    ]
    devices: list[dict[str, Any]] = []
    for g in range(GPUS_PER_NODE):
        devices.append(device(f"gpu-{g}", g, "whole", GPU_MEMORY_GI))
        devices += [device(f"gpu-{g}-part-{p}", g, "part", share) for p in range(PARTS)]
    base = {"driver": DRIVER, "nodeName": node, "pool": pool}
    return [
        _slice(f"{node}-{DRIVER}-counters", {**base, "sharedCounters": counters}),
        _slice(f"{node}-{DRIVER}-gpus", {**base, "devices": devices}),
    ]


def fabric_slice() -> dict[str, Any]:
    """The network-attached pool: ``FABRIC_CHANNELS`` channels every node reaches."""
    devices = [
        {"name": f"channel-{i}", "attributes": {"index": {"int": i}}}
        for i in range(FABRIC_CHANNELS)
    ]
    spec = {
        "driver": FABRIC_DRIVER,
        "allNodes": True,
        "pool": {"name": FABRIC_POOL, "generation": 1, "resourceSliceCount": 1},
        "devices": devices,
    }
    return _slice(f"{FABRIC_POOL}-{FABRIC_DRIVER}", spec)


def claim(name: str, device_class: str) -> dict[str, Any]:
    return resource_claim(name, 1, device_class, REQUEST)


def partition_claim(pod: str) -> str:
    return f"{pod}-{PART_ENTRY}"


def fabric_claim(gang: str) -> str:
    return f"{gang}-{FABRIC_ENTRY}"


def with_partition(plan: PodPlan) -> PodPlan:
    """``plan`` with a claim of its own for one partition, beside the claims it has."""
    return replace(plan, claims=(*plan.claims, ClaimUse(PART_ENTRY, partition_claim(plan.name))))


def with_fabric(plan: PodPlan) -> PodPlan:
    """``plan`` (a gang member) naming its gang's fabric claim too."""
    assert plan.gang is not None
    use = ClaimUse(FABRIC_ENTRY, fabric_claim(plan.gang.name))
    return replace(plan, claims=(*plan.claims, use))


def with_extended(plan: PodPlan, count: int = 1) -> PodPlan:
    """``plan`` asking for ``count`` GPUs as the extended resource."""
    return replace(plan, extended={EXTENDED_RESOURCE: count})


def forms_plan(nodes: Sequence[NodeSpec], pods: Sequence[PodPlan]) -> DraPlan:
    """The slices of ``nodes`` and the fabric; a claim per ``pods``' partition entry, one per
    gang whose members name a fabric entry."""
    slices = [s for n in nodes for s in node_slices(n.name)]
    bodies: list[dict[str, Any]] = []
    shared: dict[str, ClaimUse] = {}
    for pod in pods:
        for use in pod.claims:
            if use.name == PART_ENTRY:
                bodies.append(claim(use.claim, PART_CLASS))
            elif use.name == FABRIC_ENTRY and pod.gang is not None and pod.gang.name not in shared:
                shared[pod.gang.name] = use
                bodies.append(claim(use.claim, FABRIC_CLASS))
    return DraPlan(
        device_classes=device_classes(),
        slices=[*slices, fabric_slice()],
        claim_bodies=bodies,
        group_claims=shared,
        check="dra-forms",
    )
