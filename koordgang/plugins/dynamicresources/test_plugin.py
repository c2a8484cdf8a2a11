"""The plugin inside the framework: what pods with claims share, and what they do not."""

from __future__ import annotations

from koordgang.model.pod import PodInfo
from koordgang.settings import Settings
from koordgang.testing.builders import (
    device_class,
    node,
    parse,
    pod_json,
    resource_claim,
    resource_slice,
)
from koordgang.testing.cycles import CycleHarness


def with_claim(name: str, claim_name: str) -> PodInfo:
    return parse(pod_json(name, uid=name, cpu="100m", claims={"gpu": claim_name}, container="c"))


def test_pods_whose_claims_ask_alike_share_the_node_index_and_others_do_not() -> None:
    claims = [resource_claim(f"one-{i}", uid=f"one-{i}") for i in range(6)] + [
        resource_claim(f"two-{i}", 2, uid=f"two-{i}") for i in range(6)
    ]
    pods = [with_claim(f"p-{c.name}", c.name) for c in claims]
    scheduler = CycleHarness(
        pods,
        [node(f"n{i}", cpu="8", memory="32Gi") for i in range(20)],
        settings=Settings(),
        resource_slices=[resource_slice(f"n{i}", 4) for i in range(20)],
        device_classes=[device_class(parameters=None)],
        resource_claims=claims,
    )
    dra, framework = scheduler.harness.scheduler.stores.dra, scheduler.framework
    for pod in pods:
        outcome = scheduler.cycle(pod.name)
        assert outcome.bind, outcome.status
    # Twelve pods, twelve claims: one heap for the claims of 1 device, one for those of 2.
    heaps = framework.pods.index._shared
    assert len(heaps) == 2
    used = [d for n in range(20) for d in dra.devices_on(f"n{n}") if dra.in_use(d.id)]
    assert len(used) == 6 + 12
