"""The plugin inside the framework: what pods with claims share, and what they do not."""

from __future__ import annotations

import random

from koordgang.engine.conftest import gpu_class, gpu_slice, node, parse, pod_json
from koordgang.framework.cycle import run_cycle
from koordgang.framework.group import SchedulingGroup
from koordgang.model.dra import ResourceClaimInfo, parse_resource_claim
from koordgang.model.pod import PodInfo
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.snapshot import Snapshot


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
    obj = pod_json(name, cpu="100m")
    obj["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return parse(obj)


def test_pods_whose_claims_ask_alike_share_the_node_index_and_others_do_not() -> None:
    cache = SchedulerCache()
    for i in range(20):
        cache.upsert_node(node(f"n{i}", cpu="8"))
    cache.replace_resource_slices([gpu_slice(f"n{i}", 4) for i in range(20)])
    cache.replace_device_classes([gpu_class()])
    claims = [claim(f"one-{i}") for i in range(6)] + [claim(f"two-{i}", 2) for i in range(6)]
    cache.replace_resource_claims(claims)
    framework = default_framework(Settings(), GangRegistry(600.0), rng=random.Random(3))
    pods = [with_claim(f"p-{c.name}", c.name) for c in claims]
    for pod in pods:
        cache.upsert_pod(pod)
    for pod in pods:
        outcome = run_cycle(framework, SchedulingGroup.single(pod), Snapshot(cache), 0.0)
        assert outcome.bind, outcome.status
    # Twelve pods, twelve claims: one heap for the claims of 1 device, one for those of 2.
    heaps = framework.pods.index._shared
    assert len(heaps) == 2
    used = [
        d
        for n in range(20)
        for d in cache.devices.devices_on(f"n{n}")
        if cache.devices.in_use(d.id)
    ]
    assert len(used) == 6 + 12
