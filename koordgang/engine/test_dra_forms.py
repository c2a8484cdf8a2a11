"""Devices in the forms a GPU cluster offers them, through the engine over the fake API:
partitions of one GPU drawing on its shared counters (how MIG is offered)."""

from __future__ import annotations

from typing import Any

from koordgang.model.dra import parse_resource_slice
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import (
    DRIVER,
    device_class,
    gang_annotations,
    node,
    partitioned_gpu_json,
    resource_claim_json,
    resource_slice,
)
from koordgang.testing.claims import Claims, claim_writes, gpu_pod
from koordgang.testing.harness import MakeScheduler


def partitioned(node_name: str) -> list[Any]:
    return [parse_resource_slice(obj) for obj in partitioned_gpu_json(node_name)]


def by_profile(profile: str) -> Any:
    """The class of the GPU's partitions, or of the whole GPU."""
    return device_class(
        profile,
        selector=f'device.driver == "{DRIVER}" && '
        f'device.attributes["{DRIVER}"].profile == "{profile}"',
    )


async def test_a_gang_of_four_gets_the_four_partitions_of_one_gpu(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    names = [f"part-{i}" for i in range(4)]
    claims = Claims(api, [resource_claim_json(n, device_class="part") for n in names])
    annotations = gang_annotations("mig", 4)
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod(f"mig-{i}", names[i], annotations=annotations) for i in range(4)],
        resource_slices=partitioned("n0"),
        device_classes=[by_profile("part"), by_profile("whole")],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert sorted(api.binds()) == [(f"mig-{i}", "n0") for i in range(4)]
    devices = sorted(
        r["device"]
        for obj in claims.objects.values()
        for r in obj["status"]["allocation"]["devices"]["results"]
    )
    assert devices == [f"gpu-0-part-{i}" for i in range(4)]


async def test_the_whole_gpu_waits_while_a_partition_is_in_use_naming_the_counter(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(
        api,
        [
            resource_claim_json("part", device_class="part"),
            resource_claim_json("whole", device_class="whole"),
        ],
    )
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod("small", "part")],
        resource_slices=partitioned("n0"),
        device_classes=[by_profile("part"), by_profile("whole")],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == [("small", "n0")]
    claims.observe(sched)
    sched.add(gpu_pod("big", "whole"))
    await sched.run()
    assert api.binds() == [("small", "n0")]
    condition = api.condition("big")
    assert condition is not None
    message = condition["message"]
    assert f"counter memory of counter set gpu-0 in pool {DRIVER}/n0 has 60Gi of 80Gi" in message
    assert [w for w in claim_writes(api) if "whole" in w.path] == []


def first_available_claim(name: str) -> dict[str, Any]:
    """A claim that prefers a device of class ``big``, else takes one of class ``small``."""
    claim = resource_claim_json(name)
    claim["spec"]["devices"]["requests"] = [
        {
            "name": "gpu",
            "firstAvailable": [
                {"name": "big", "deviceClassName": "big"},
                {"name": "small", "deviceClassName": "small"},
            ],
        }
    ]
    return claim


async def test_nodes_where_the_first_alternative_fits_are_preferred(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """n0 has only the fallback's devices, n1 the first choice's: every pod goes to n1, though
    spreading over the two would leave more room free (LeastAllocated)."""
    sched = make_scheduler()
    names = [f"c{i}" for i in range(4)]
    claims = Claims(api, [first_available_claim(n) for n in names])
    sched.list(
        nodes=[node("n0", cpu="8"), node("n1", cpu="8")],
        pods=[gpu_pod(f"p{i}", names[i], cpu="1") for i in range(4)],
        resource_slices=[
            resource_slice("n0", 4, driver="small.example.com"),
            resource_slice("n1", 4, driver="big.example.com"),
        ],
        device_classes=[
            device_class("big", selector='device.driver == "big.example.com"'),
            device_class("small", selector='device.driver == "small.example.com"'),
        ],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert sorted(api.binds()) == [(f"p{i}", "n1") for i in range(4)]
    results = [
        r["request"]
        for obj in claims.objects.values()
        for r in obj["status"]["allocation"]["devices"]["results"]
    ]
    assert results == ["gpu/big"] * 4
