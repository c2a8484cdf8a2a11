"""Devices never handed out when they must not be, and gangs never kept waiting for devices that
are free: taints (a device's own, and DeviceTaintRules'), admin access, pools not all
published, claims shared by more pods than a claim can name, and selectors that fail on a
device. End to end through the engine over the fake API."""

from __future__ import annotations

from typing import Any

from koordgang.model.dra import CLAIM_FINALIZER, MAX_RESERVED_FOR
from koordgang.model.namespace import NamespaceInfo
from koordgang.model.pod import PodInfo
from koordgang.state.queue import QueueState
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import (
    DRIVER,
    NS,
    device_class,
    device_taint_rule,
    gang_annotations,
    node,
    resource_claim_json,
    resource_slice,
    uid_of,
)
from koordgang.testing.claims import Claims, allocated_devices, claim_writes, gpu_pod
from koordgang.testing.harness import MakeScheduler

NODES = [node(f"n{i}", cpu="8") for i in range(3)]


def pair(claims: list[str]) -> list[PodInfo]:
    """A gang of two pods, each with its claim of two GPUs."""
    annotations = gang_annotations("train", 2)
    return [gpu_pod(f"train-{i}", claims[i], annotations=annotations) for i in range(2)]


def two_gpus(name: str, **exactly: Any) -> dict[str, Any]:
    claim = resource_claim_json(name, count=2)
    claim["spec"]["devices"]["requests"][0]["exactly"].update(exactly)
    return claim


async def test_a_gang_is_never_placed_on_devices_a_rule_drains(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [two_gpus("a"), two_gpus("b")])
    sched.list(
        nodes=NODES,
        pods=pair(["a", "b"]),
        resource_slices=[resource_slice(f"n{i}") for i in range(3)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
        device_taint_rules=[device_taint_rule("drain-n0", pool="n0")],
    )
    await sched.run()
    assert sorted(node for _, node in api.binds()) == ["n1", "n2"]
    assert {node for node, _ in allocated_devices(claims).values()} == {"n1", "n2"}


async def test_a_gang_that_fits_only_on_drained_devices_waits_and_binds_once_the_rule_goes(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [two_gpus("a"), two_gpus("b")])
    sched.list(
        nodes=NODES[:2],
        pods=pair(["a", "b"]),
        resource_slices=[resource_slice("n0"), resource_slice("n1")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
        device_taint_rules=[device_taint_rule("drain", key="example.com/drain", pool="n1")],
    )
    await sched.run()
    assert api.binds() == []
    assert claim_writes(api) == []
    messages = [c["message"] for m in ("train-0", "train-1") if (c := api.condition(m))]
    assert any(
        "tainted example.com/drain:NoSchedule (DeviceTaintRule drain)" in text
        and "does not tolerate" in text
        for text in messages
    ), messages
    sched.intake.kind("devicetaintrules").delete("drain")
    sched.clock.advance(30)
    await sched.run()
    assert sorted(node for _, node in api.binds()) == ["n0", "n1"]


async def test_a_tolerated_taint_of_the_devices_slice_does_not_keep_them_away(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    toleration = {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoSchedule"}
    claims = Claims(api, [two_gpus("tolerant", tolerations=[toleration]), two_gpus("plain")])
    taint = {"key": "example.com/maintenance", "value": "soon", "effect": "NoSchedule"}
    sched.list(
        nodes=NODES[:1],
        pods=[gpu_pod("tolerant", "tolerant"), gpu_pod("plain", "plain")],
        resource_slices=[resource_slice("n0", 4, taints=[taint])],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == [("tolerant", "n0")]
    results = claims.objects["tolerant"]["status"]["allocation"]["devices"]["results"]
    assert all(r["tolerations"] == [toleration] for r in results)
    plain = api.condition("plain")
    assert plain is not None and "does not tolerate" in plain["message"]


async def test_a_noexecute_taint_tolerated_for_a_while_only_keeps_the_devices_away(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """The eviction controller would evict the pod when its tolerationSeconds run out: a
    gang placed there would lose members after it was declared whole."""
    sched = make_scheduler()
    briefly = {"key": "example.com/failing", "operator": "Exists", "tolerationSeconds": 60}
    claims = Claims(
        api, [two_gpus("a", tolerations=[briefly]), two_gpus("b", tolerations=[briefly])]
    )
    sched.list(
        nodes=NODES[:2],
        pods=pair(["a", "b"]),
        resource_slices=[resource_slice("n0"), resource_slice("n1")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
        device_taint_rules=[
            device_taint_rule("failing", key="example.com/failing", effect="NoExecute", pool="n1")
        ],
    )
    await sched.run()
    assert api.binds() == []
    messages = [c["message"] for m in ("train-0", "train-1") if (c := api.condition(m))]
    assert any("only for tolerationSeconds" in text for text in messages), messages


async def test_a_taint_that_only_informs_keeps_nothing_away(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [two_gpus("a"), two_gpus("b")])
    sched.list(
        nodes=NODES[:2],
        pods=pair(["a", "b"]),
        resource_slices=[resource_slice("n0"), resource_slice("n1")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
        device_taint_rules=[
            device_taint_rule("note", effect="None"),
            device_taint_rule("later", effect="SomeEffectOfALaterRelease"),
        ],
    )
    await sched.run()
    assert sorted(node for _, node in api.binds()) == ["n0", "n1"]


def monitor(name: str, node_name: str) -> dict[str, Any]:
    """A claim a monitoring DaemonSet holds with admin access on every GPU of a node."""
    results = [
        {"request": "gpus", "driver": DRIVER, "pool": node_name, "device": d, "adminAccess": True}
        for d in ("gpu-0", "gpu-1")
    ]
    return resource_claim_json(
        name,
        count=2,
        status={
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": f"dcgm-{node_name}", "uid": "u"}],
        },
    )


async def test_devices_monitors_hold_with_admin_access_stay_free_for_a_gang(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [two_gpus("a"), two_gpus("b"), monitor("m0", "n0"), monitor("m1", "n1")])
    sched.list(
        nodes=NODES[:2],
        pods=pair(["a", "b"]),
        resource_slices=[resource_slice("n0"), resource_slice("n1")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert sorted(node for _, node in api.binds()) == ["n0", "n1"]
    gauges = sched.framework.gauges()
    assert gauges["koordgang_dra_admin_devices"] == {"": 4}


ADMIN_NAMESPACE = NamespaceInfo(NS, {"resource.kubernetes.io/admin-access": "true"})


async def test_an_admin_request_gets_devices_in_use_and_takes_nothing_from_workloads(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [two_gpus("work"), two_gpus("watch", adminAccess=True)])
    sched.list(
        nodes=NODES[:1],
        pods=[gpu_pod("work", "work"), gpu_pod("watch", "watch")],
        namespaces=[ADMIN_NAMESPACE],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert sorted(api.binds()) == [("watch", "n0"), ("work", "n0")]
    watched = claims.objects["watch"]["status"]["allocation"]["devices"]["results"]
    worked = claims.objects["work"]["status"]["allocation"]["devices"]["results"]
    assert all(r.get("adminAccess") is True for r in watched)
    assert not any("adminAccess" in r for r in worked)
    assert {r["device"] for r in watched} == {r["device"] for r in worked}


async def test_an_admin_request_outside_a_namespace_labelled_for_it_waits_without_a_write(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """The API server refuses the allocation there (the label was removed since the claim was
    made): nothing is written, the pod says why, and goes once the label is back."""
    sched = make_scheduler()
    claims = Claims(api, [two_gpus("watch", adminAccess=True)])
    sched.list(
        nodes=NODES[:1],
        pods=[gpu_pod("watch", "watch")],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == [] and claim_writes(api) == []
    condition = api.condition("watch")
    assert condition is not None
    assert 'resource.kubernetes.io/admin-access="true"' in condition["message"]
    sched.intake.kind("namespaces").upsert(ADMIN_NAMESPACE)
    sched.clock.advance(30)
    await sched.run()
    assert api.binds() == [("watch", "n0")]


async def test_a_pool_not_all_published_serves_nothing_and_says_so(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("c", count=1)])
    first = resource_slice("n0", ["gpu-0", "gpu-1"], name="n0-a", count=2)
    sched.list(
        nodes=NODES[:1],
        pods=[gpu_pod("p", "c")],
        resource_slices=[first],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    condition = api.condition("p")
    assert condition is not None
    assert f"pool {DRIVER}/n0 has 1 of its 2 slices" in condition["message"]
    sched.intake.kind("resourceslices").upsert(
        resource_slice("n0", ["gpu-2", "gpu-3"], name="n0-b", count=2)
    )
    sched.clock.advance(30)
    await sched.run()
    assert api.binds() == [("p", "n0")]


def full_claim(name: str, reserved: int) -> dict[str, Any]:
    """A claim allocated on n0 and reserved for ``reserved`` pods already."""
    results = [{"request": "gpus", "driver": DRIVER, "pool": "n0", "device": "gpu-0"}]
    selector = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0"]}]}
        ]
    }
    return resource_claim_json(
        name,
        status={
            "allocation": {"devices": {"results": results}, "nodeSelector": selector},
            "reservedFor": [
                {"resource": "pods", "name": f"old-{i}", "uid": f"old-{i}"} for i in range(reserved)
            ],
        },
    )


async def test_pods_past_the_256_a_claim_can_name_wait_without_a_write(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [full_claim("shared-fabric", MAX_RESERVED_FOR - 1)])
    pods = [gpu_pod(f"p{i}", "shared-fabric", cpu="100m") for i in range(3)]
    sched.list(
        nodes=NODES[:1],
        pods=pods,
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert len(api.binds()) == 1
    writes = len(claim_writes(api))
    reserved = claims.objects["shared-fabric"]["status"]["reservedFor"]
    assert len(reserved) == MAX_RESERVED_FOR
    waiting = [p.name for p in pods if (p.name, "n0") not in api.binds()]
    for name in waiting:
        condition = api.condition(name)
        assert condition is not None
        assert (
            "claim shared-fabric is reserved for 256 pods, the most a claim can name"
            in condition["message"]
        )
    # Asked again later, they still write nothing.
    sched.clock.advance(600)
    await sched.run()
    assert len(claim_writes(api)) == writes
    assert len(api.binds()) == 1


async def test_a_selector_failing_on_a_device_fails_the_attempt_naming_it_and_retries_with_backoff(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("c", count=1)])
    selector = f'device.attributes["{DRIVER}"].model == "a100"'
    sched.list(
        nodes=NODES[:1],
        pods=[gpu_pod("p", "c")],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class(selector=selector)],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    condition = api.condition("p")
    assert condition is not None
    message = condition["message"]
    assert selector in message and "DeviceClass gpu" in message
    assert f"on device {DRIVER}/n0/gpu-" in message and "no such key: model" in message
    entry = sched.queue.get(uid_of("p", NS))
    assert entry is not None and entry.state is QueueState.BACKOFF


async def test_a_pod_sharing_a_claim_another_batch_allocates_waits_for_that_allocation(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """Two plain pods share a claim nobody allocated yet: the first pod's batch allocates
    it; the second, placed on that allocation before it is written, waits for it instead of
    asking the API server to name a consumer of a claim not allocated (refused: 422)."""
    sched = make_scheduler()
    shared = resource_claim_json("shared", count=1)
    shared["metadata"]["finalizers"] = [CLAIM_FINALIZER]
    claims = Claims(api, [shared])
    sched.list(
        nodes=NODES[:1],
        pods=[gpu_pod("p0", "shared"), gpu_pod("p1", "shared")],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    # The first pod's allocation is slow to land: the second's write would come first.
    gate = api.hold(lambda c: c.method == "PATCH" and "allocation" in str(c.body))
    sched.step()
    await sched.settle(200)
    gate.set()
    await sched.settle()
    assert not [c for c in api.calls if "422" in c.outcome], "a refused write was sent"
    claims.observe(sched)
    sched.clock.advance(30)
    await sched.run()
    assert sorted(api.binds()) == [("p0", "n0"), ("p1", "n0")]
