"""The plugin inside the framework: what pods with claims share, and what they do not."""

from __future__ import annotations

import random

from koordgang.framework.cycle import run_cycle
from koordgang.framework.group import SchedulingGroup
from koordgang.framework.handle import Services
from koordgang.model.dra import (
    DeviceClassInfo,
    ResourceClaimInfo,
    ResourceSliceInfo,
    parse_device_class,
    parse_resource_claim,
    parse_resource_slice,
)
from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.gangs import GangRegistry
from koordgang.state.snapshot import Snapshot
from koordgang.state.stores import Stores


def node(name: str) -> NodeInfo:
    return parse_node(
        {
            "metadata": {"name": name},
            "status": {
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def gpu_slice(node_name: str, devices: int) -> ResourceSliceInfo:
    return parse_resource_slice(
        {
            "metadata": {"name": f"{node_name}-gpus"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": node_name,
                "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"gpu-{i}"} for i in range(devices)],
            },
        }
    )


def gpu_class() -> DeviceClassInfo:
    selector = {"cel": {"expression": 'device.driver == "gpu.example.com"'}}
    return parse_device_class({"metadata": {"name": "gpu"}, "spec": {"selectors": [selector]}})


def claim(name: str, count: int = 1) -> ResourceClaimInfo:
    return parse_resource_claim(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name, "resourceVersion": "1"},
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "gpus", "exactly": {"deviceClassName": "gpu", "count": count}}
                    ]
                }
            },
        }
    )


def with_claim(name: str, claim_name: str) -> PodInfo:
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {
                "schedulerName": "koord-scheduler",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
            },
        }
    )


def test_pods_whose_claims_ask_alike_share_the_node_index_and_others_do_not() -> None:
    stores = Stores()
    dra = stores.dra
    cache = stores.new_cache()
    for i in range(20):
        cache.upsert_node(node(f"n{i}"))
    dra.replace_slices([gpu_slice(f"n{i}", 4) for i in range(20)])
    dra.replace_classes([gpu_class()])
    claims = [claim(f"one-{i}") for i in range(6)] + [claim(f"two-{i}", 2) for i in range(6)]
    dra.replace_claims(claims)
    framework = default_framework(Settings(), GangRegistry(600.0), rng=random.Random(3))
    framework.serve(
        Services(
            cache=cache,
            stores=stores,
            now=lambda: 0.0,
            wall=lambda: 0.0,
            report=lambda report: None,
            record=lambda metric, value: None,
            activate=lambda pods: None,
            request_move=lambda: None,
            is_pending=lambda pod: not pod.node_name,
        )
    )
    pods = [with_claim(f"p-{c.name}", c.name) for c in claims]
    for pod in pods:
        cache.upsert_pod(pod)
    for pod in pods:
        outcome = run_cycle(framework, SchedulingGroup.single(pod), Snapshot(cache), 0.0)
        assert outcome.bind, outcome.status
    # Twelve pods, twelve claims: one heap for the claims of 1 device, one for those of 2.
    heaps = framework.pods.index._shared
    assert len(heaps) == 2
    used = [d for n in range(20) for d in dra.devices_on(f"n{n}") if dra.in_use(d.id)]
    assert len(used) == 6 + 12
