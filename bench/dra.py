"""Dynamic Resource Allocation in the bench: fake devices on the kwok nodes, and a claim per pod.

Every node publishes one ResourceSlice of ``DEVICES_PER_NODE`` devices of the driver
``DRIVER`` (a node-local pool named after the node, generation 1, one slice), and the
DeviceClass ``DEVICE_CLASS`` selects that driver by CEL: these are the cluster's set-up, made
(and kept) by ``stage.py`` like the nodes. Each pod under test has a ResourceClaim of its own,
asking for 1 or 2 devices of that class, which the bench creates before the pods and before
the timed window (so the resourceclaim controller's pace is not measured), and creates afresh
for every scheduler's run: a claim one scheduler allocated never carries into another's run.

Everything here is labelled ``BENCH_LABEL`` so that the stage can find and delete it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from bench.workload import BENCH_LABEL, ClaimUse, DraPlan, PodPlan, Requests
from controlplane import NodeSpec

API_VERSION = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"
DEVICE_CLASS = "gpu.example.com"
DEVICES_PER_NODE = 8
#: The request's name in every claim, and the pod's name for its claim.
REQUEST = "gpu"
POD_CLAIM = "gpu"
#: Small enough that devices, not cpu or memory, decide where a pod fits.
POD_REQUESTS = Requests("100m", "128Mi")
#: What a scheduler writes on a claim it allocates (upstream's and koordgang's alike).
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
#: On each ResourceSlice: a digest of what the bench wants it to be, to tell a slice that can
#: be kept from one to replace (the API server adds defaults to the spec it stores).
SPEC_DIGEST = "koordgang-bench/spec-digest"


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS, "labels": {BENCH_LABEL: "1"}},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def slice_name(node: str) -> str:
    return f"{node}-{DRIVER}"


def resource_slice(node: str, devices: int = DEVICES_PER_NODE) -> dict[str, Any]:
    """The slice a driver's kubelet plugin would publish for ``node``: a pool of its own."""
    spec = {
        "driver": DRIVER,
        "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(devices)
        ],
    }
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {
            "name": slice_name(node),
            "labels": {BENCH_LABEL: "1"},
            "annotations": {SPEC_DIGEST: digest},
        },
        "spec": spec,
    }


def resource_claim(
    name: str, count: int, device_class: str = DEVICE_CLASS, request: str = REQUEST
) -> dict[str, Any]:
    """A claim of the bench's asking for ``count`` devices of ``device_class`` (one request)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": request,
                        "exactly": {"deviceClassName": device_class, "count": count},
                    }
                ]
            }
        },
    }


def claim_manifests(plan: DraPlan) -> list[dict[str, Any]]:
    made = [resource_claim(name, count) for name, count in plan.claims.items()]
    return [*made, *(dict(body) for body in plan.claim_bodies)]


def claim_name(pod: str) -> str:
    return f"{pod}-{POD_CLAIM}"


def with_claim(plan: PodPlan) -> PodPlan:
    """``plan`` using a claim of its own (named after the pod)."""
    return PodPlan(
        name=plan.name,
        requests=plan.requests,
        scheduler=plan.scheduler,
        gang=plan.gang,
        node_name=plan.node_name,
        priority_class=plan.priority_class,
        annotations=plan.annotations,
        claims=(ClaimUse(POD_CLAIM, claim_name(plan.name)),),
    )


def gang_member_devices(member: int) -> int:
    """Devices a gang's ``member``-th pod asks for: 1, 2, 1, 2, ..."""
    return 1 + member % 2


def dra_plan(
    nodes: Sequence[NodeSpec], lone: Sequence[PodPlan], gangs: Sequence[PodPlan]
) -> DraPlan:
    """One slice per node; a claim of 1 device per lone pod, of 1 or 2 (alternating, by the
    member's place in its gang) per gang member."""
    claims: dict[str, int] = {claim_name(p.name): 1 for p in lone}
    place: dict[str, int] = {}
    for pod in gangs:
        assert pod.gang is not None
        member = place.get(pod.gang.name, 0)
        place[pod.gang.name] = member + 1
        claims[claim_name(pod.name)] = gang_member_devices(member)
    return DraPlan(
        device_classes=[device_class()],
        slices=[resource_slice(n.name) for n in nodes],
        claims=claims,
    )


def expected_claims(pods: Sequence[PodPlan], plan: DraPlan) -> dict[str, tuple[str, int]]:
    """Pod name -> (the claim it uses, devices the claim asks for): what the checker holds the
    cluster to."""
    out: dict[str, tuple[str, int]] = {}
    for pod in pods:
        if len(pod.claims) > 1:
            raise ValueError(f"{pod.name}: the bench gives each pod one claim")
        for use in pod.claims:
            out[pod.name] = (use.claim, plan.claims[use.claim])
    return out
