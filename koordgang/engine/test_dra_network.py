"""Network-attached devices through the engine over the fake API: pools whose slices name the
nodes by a selector (``nodeSelector``), all nodes (``allNodes``), or each device's own
(``perDeviceNodeSelection``). A device is offered on every node it reaches and is in use for
all once allocated; the claim's allocation carries the selector upstream writes."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.model.dra import parse_resource_slice
from koordgang.plugins.dynamicresources.plugin import DynamicResources
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import (
    device_class,
    gang_annotations,
    labels_selector,
    network_slice_json,
    node,
    pod,
    resource_claim_json,
    resource_slice_json,
)
from koordgang.testing.claims import Claims, gpu_pod
from koordgang.testing.harness import MakeScheduler

RACK_A = labels_selector({"rack": "a"})
NODES = 40


def racks() -> list[Any]:
    """n1, n2 on rack a; n3, n4 on rack b."""
    return [node(f"n{i}", labels={"rack": "a" if i <= 2 else "b"}) for i in (1, 2, 3, 4)]


def allocation(claims: Claims, name: str) -> dict[str, Any]:
    result: dict[str, Any] = claims.objects[name]["status"]["allocation"]
    return result


def names(count: int) -> list[str]:
    return [f"c{i}" for i in range(count)]


async def test_devices_of_a_pool_on_rack_a_go_to_pods_on_rack_a_alone(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json(n) for n in names(3)])
    sched.list(
        nodes=racks(),
        pods=[gpu_pod(f"p{i}", f"c{i}") for i in range(3)],
        resource_slices=[
            parse_resource_slice(network_slice_json("fabric", 2, node_selector={"rack": "a"}))
        ],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    binds = dict(api.binds())
    # Two devices for three pods: one device is one device, whichever node asks.
    assert len(binds) == 2
    assert set(binds.values()) <= {"n1", "n2"}
    allocated = [n for n in names(3) if claims.objects[n]["status"].get("allocation")]
    assert len(allocated) == 2
    devices = {allocation(claims, n)["devices"]["results"][0]["device"] for n in allocated}
    assert devices == {"nic-0", "nic-1"}
    for name in allocated:
        assert allocation(claims, name)["nodeSelector"] == RACK_A


async def test_devices_on_all_nodes_are_allocated_without_a_node_selector(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json(n) for n in names(3)])
    sched.list(
        nodes=racks(),
        pods=[gpu_pod(f"p{i}", f"c{i}") for i in range(3)],
        resource_slices=[parse_resource_slice(network_slice_json("fabric", 2))],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert len(api.binds()) == 2
    allocated = [n for n in names(3) if claims.objects[n]["status"].get("allocation")]
    assert len(allocated) == 2
    for name in allocated:
        assert "nodeSelector" not in allocation(claims, name)


async def test_each_device_of_a_per_device_slice_is_where_it_says(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    per_device: dict[str, dict[str, Any]] = {
        "nic-0": {"nodeName": "n3"},
        "nic-1": {"nodeSelector": RACK_A},
    }
    claims = Claims(api, [resource_claim_json(n) for n in names(2)])
    sched.list(
        nodes=racks(),
        pods=[gpu_pod(f"p{i}", f"c{i}") for i in range(2)],
        resource_slices=[
            parse_resource_slice(network_slice_json("fabric", 2, per_device=per_device))
        ],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    binds = dict(api.binds())
    assert len(binds) == 2
    by_device = {allocation(claims, n)["devices"]["results"][0]["device"]: n for n in names(2)}
    local = allocation(claims, by_device["nic-0"])
    assert local["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["n3"]
    assert binds[f"p{by_device['nic-0'][1:]}"] == "n3"
    assert allocation(claims, by_device["nic-1"])["nodeSelector"] == RACK_A
    assert binds[f"p{by_device['nic-1'][1:]}"] in {"n1", "n2"}


async def test_a_claim_allocated_on_rack_a_keeps_its_next_pod_there(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    status = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "gpus",
                        "driver": "gpu.example.com",
                        "pool": "fabric",
                        "device": "nic-0",
                    }
                ]
            },
            "nodeSelector": RACK_A,
        }
    }
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("shared", status=status)])
    # The pod would rather be on rack b (n3, n4 have more room): the claim keeps it on a.
    nodes = [
        node(f"n{i}", cpu="2" if i <= 2 else "16", labels={"rack": "a" if i <= 2 else "b"})
        for i in (1, 2, 3, 4)
    ]
    sched.list(
        nodes=nodes,
        pods=[gpu_pod("p", "shared")],
        resource_slices=[
            parse_resource_slice(network_slice_json("fabric", 2, node_selector={"rack": "a"}))
        ],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    binds = dict(api.binds())
    assert binds["p"] in {"n1", "n2"}


async def test_a_gang_of_four_spreads_over_two_nodes_on_one_network_pool(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json(n) for n in names(4)])
    annotations = gang_annotations("net", 4)
    sched.list(
        # Room for two members a node: the gang needs both nodes.
        nodes=[node(f"n{i}", cpu="2", labels={"rack": "a"}) for i in (1, 2)],
        pods=[gpu_pod(f"m{i}", f"c{i}", annotations=annotations) for i in range(4)],
        resource_slices=[
            parse_resource_slice(network_slice_json("fabric", 4, node_selector={"rack": "a"}))
        ],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    binds = dict(api.binds())
    assert sorted(binds) == [f"m{i}" for i in range(4)]
    assert sorted(binds.values()) == ["n1", "n1", "n2", "n2"]
    devices = sorted(allocation(claims, n)["devices"]["results"][0]["device"] for n in names(4))
    assert devices == [f"nic-{i}" for i in range(4)]


async def test_gangs_sharing_a_channel_of_all_nodes_do_not_score_every_node_per_gang(
    make_scheduler: MakeScheduler, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four gangs of 4, each member with a GPU of its own and every member of a gang sharing
    the gang's channel of a fabric every node reaches. Once a gang's channel is allocated in
    its decision, it filters no node: the other members are placed from the heaps every gang
    shares, not from one scored afresh over every node for each gang."""
    nodes = [node(f"n{i:02d}") for i in range(NODES)]
    gangs = 4
    objects = [resource_claim_json(f"fabric-{g}", device_class="fabric") for g in range(gangs)]
    pods = []
    for g in range(gangs):
        for m in range(4):
            name = f"g{g}-{m}"
            objects.append(resource_claim_json(f"{name}-gpu"))
            pods.append(
                pod(
                    name,
                    claims={"gpu": f"{name}-gpu", "fabric": f"fabric-{g}"},
                    annotations=gang_annotations(f"g{g}", 4),
                )
            )
    claims = Claims(api, objects)
    fabric = 'device.driver == "fabric.example.com"'
    sched = make_scheduler()
    sched.list(
        nodes=nodes,
        pods=pods,
        resource_slices=[
            *(parse_resource_slice(resource_slice_json(n.name, 4)) for n in nodes),
            parse_resource_slice(network_slice_json("fabric", 8, driver="fabric.example.com")),
        ],
        device_classes=[
            device_class(),
            device_class("fabric", selector=fabric, driver="fabric.example.com"),
        ],
        resource_claims=claims.infos(),
    )
    filters = 0
    original = DynamicResources.filter

    def counted(self: DynamicResources, *args: Any) -> Any:
        nonlocal filters
        filters += 1
        return original(self, *args)

    monkeypatch.setattr(DynamicResources, "filter", counted)
    await sched.run()
    assert len(api.binds()) == gangs * 4
    channels = {
        allocation(claims, f"fabric-{g}")["devices"]["results"][0]["device"] for g in range(gangs)
    }
    assert len(channels) == gangs
    # A heap per gang would score every node again for each gang (269 here, 149 shared).
    assert filters < gangs * NODES, filters
