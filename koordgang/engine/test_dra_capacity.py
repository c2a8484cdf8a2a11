"""Consumable capacity through the engine over the fake API: GPUs that several claims may have
at once (``allowMultipleAllocations``), each taking a share of their memory."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from koordgang.model.dra import PodClaimRef, parse_resource_slice
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import (
    DRIVER,
    NS,
    capacity_claim_json,
    device_class,
    gang_annotations,
    node,
    parse,
    pod_json,
    resource_slice,
    shared_gpu_json,
)
from koordgang.testing.claims import Claims, claim_writes, gpu_pod
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import MakeScheduler

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
SHARE = "0f5c3f5e-8a39-4bd4-9d8b-2a0a3c8d5e71"
#: A policy of 10Gi steps from 10Gi, 10Gi unless asked.
STEPS = {"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}


def shared(node_name: str, **kwargs: Any) -> Any:
    return parse_resource_slice(shared_gpu_json(node_name, **kwargs))


def results(claims: Claims, name: str) -> list[dict[str, Any]]:
    allocation = (claims.objects[name].get("status") or {}).get("allocation") or {}
    found: list[dict[str, Any]] = allocation.get("devices", {}).get("results", [])
    return found


def message(api: FakeApi, pod: str) -> str:
    condition = api.condition(pod)
    assert condition is not None
    return str(condition["message"])


async def test_four_pods_share_one_gpu_in_20gi_shares_and_a_fifth_waits_naming_it(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    names = [f"c{i}" for i in range(5)]
    claims = Claims(api, [capacity_claim_json(n, memory="20Gi") for n in names])
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod(f"p{i}", names[i], cpu="1") for i in range(4)],
        resource_slices=[shared("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert sorted(api.binds()) == [(f"p{i}", "n0") for i in range(4)]
    shares = [r for n in names[:4] for r in results(claims, n)]
    assert [(r["device"], r["consumedCapacity"]) for r in shares] == [
        ("gpu-0", {"memory": "20Gi"})
    ] * 4
    assert all(UUID.match(r["shareID"]) for r in shares)
    assert len({r["shareID"] for r in shares}) == 4
    claims.observe(sched)
    sched.add(gpu_pod("p4", "c4", cpu="1"))
    await sched.run()
    assert len(api.binds()) == 4
    assert "device gpu-0 has 0 of memory left, the request asks 20Gi" in message(api, "p4")
    assert results(claims, "c4") == []


async def test_what_is_left_is_named_and_a_smaller_share_still_fits(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(
        api,
        [
            capacity_claim_json("big", memory="70Gi"),
            capacity_claim_json("more", memory="20Gi"),
            capacity_claim_json("small", memory="10Gi"),
        ],
    )
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod("big", "big", cpu="1")],
        resource_slices=[shared("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    claims.observe(sched)
    sched.add(gpu_pod("more", "more", cpu="1"))
    sched.add(gpu_pod("small", "small", cpu="1"))
    await sched.run()
    assert sorted(api.binds()) == [("big", "n0"), ("small", "n0")]
    assert "device gpu-0 has 10Gi of memory left, the request asks 20Gi" in message(api, "more")


async def test_the_request_policy_rounds_what_a_share_takes(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """15Gi is taken as 20Gi (steps of 10Gi), nothing asked as the default 10Gi, 5Gi as the
    minimum 10Gi: 40Gi of 80Gi; a 50Gi request is told what it asks once rounded."""
    sched = make_scheduler()
    claims = Claims(
        api,
        [
            capacity_claim_json("odd", memory="15Gi"),
            capacity_claim_json("silent"),
            capacity_claim_json("tiny", memory="5Gi"),
            capacity_claim_json("late", memory="45Gi"),
        ],
    )
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod(n, n, cpu="1") for n in ("odd", "silent", "tiny")],
        resource_slices=[shared("n0", policy=STEPS)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    consumed = {n: results(claims, n)[0]["consumedCapacity"] for n in ("odd", "silent", "tiny")}
    assert consumed == {
        "odd": {"memory": "20Gi"},
        "silent": {"memory": "10Gi"},
        "tiny": {"memory": "10Gi"},
    }
    claims.observe(sched)
    sched.add(gpu_pod("late", "late", cpu="1"))
    await sched.run()
    assert "late" not in [name for name, _ in api.binds()]
    assert (
        "device gpu-0 has 40Gi of memory left, the request asks 45Gi (50Gi by its request policy)"
        in message(api, "late")
    )


async def test_a_request_beyond_what_the_policy_allows_is_told_so(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [capacity_claim_json("odd", memory="30Gi")])
    policy = {"default": "10Gi", "validValues": ["10Gi", "20Gi"]}
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod("odd", "odd", cpu="1")],
        resource_slices=[shared("n0", policy=policy)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    said = message(api, "odd")
    assert "device gpu-0 does not allow 30Gi of memory: only 10Gi, 20Gi may be taken" in said


async def test_a_gang_that_does_not_fit_in_the_capacity_gets_nothing(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler()
    names = [f"c{i}" for i in range(5)]
    claims = Claims(api, [capacity_claim_json(n, memory="20Gi") for n in names])
    annotations = gang_annotations("g", 5)
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod(f"m{i}", names[i], cpu="1", annotations=annotations) for i in range(5)],
        resource_slices=[shared("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    assert claim_writes(api) == []
    said = [message(api, f"m{i}") for i in range(5)]
    assert all("4/5 members placed" in m for m in said)
    assert any("device gpu-0 has 0 of memory left, the request asks 20Gi" in m for m in said)
    # With a GPU for the fifth on another node, the whole gang goes.
    sched.intake.kind("resourceslices").upsert(shared("n1"))
    sched.intake.kind("nodes").upsert(node("n1", cpu="8"))
    clock.advance(30)
    await sched.run()
    assert len(api.binds()) == 5


async def test_a_deleted_claim_gives_its_share_back(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler()
    names = [f"c{i}" for i in range(3)]
    claims = Claims(api, [capacity_claim_json(n, memory="40Gi") for n in names])
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod(f"p{i}", names[i], cpu="1") for i in range(2)],
        resource_slices=[shared("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    claims.observe(sched)
    sched.add(gpu_pod("p2", "c2", cpu="1"))
    await sched.run()
    assert len(api.binds()) == 2
    # c0 is deleted (deallocated and its finalizer removed): its 40Gi are free again.
    sched.intake.kind("resourceclaims").delete(f"{NS}/c0")
    clock.advance(30)
    await sched.run()
    assert ("p2", "n0") in api.binds()


async def test_one_claim_may_take_two_shares_of_one_gpu(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claim = capacity_claim_json("two", memory="30Gi")
    first = claim["spec"]["devices"]["requests"][0]
    claim["spec"]["devices"]["requests"].append({**first, "name": "more"})
    claims = Claims(api, [claim])
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod("p", "two", cpu="1")],
        resource_slices=[shared("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == [("p", "n0")]
    found = results(claims, "two")
    assert [(r["request"], r["device"]) for r in found] == [("gpus", "gpu-0"), ("more", "gpu-0")]
    assert found[0]["shareID"] != found[1]["shareID"]


async def test_a_device_not_shared_is_taken_whole_and_its_capacity_checked(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """A device without ``allowMultipleAllocations`` serves one claim, as ever, and a request
    asking more than it has is told so; no share is written for it."""
    sched = make_scheduler()
    plain = shared_gpu_json("n0", devices=2)
    for device in plain["spec"]["devices"]:
        del device["allowMultipleAllocations"]
    claims = Claims(
        api,
        [
            capacity_claim_json("a", memory="20Gi"),
            capacity_claim_json("b", memory="20Gi"),
            capacity_claim_json("huge", memory="100Gi"),
        ],
    )
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod(n, n, cpu="1") for n in ("a", "b", "huge")],
        resource_slices=[parse_resource_slice(plain)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert sorted(api.binds()) == [("a", "n0"), ("b", "n0")]
    devices = sorted(results(claims, n)[0]["device"] for n in ("a", "b"))
    assert devices == ["gpu-0", "gpu-1"]
    assert all("shareID" not in results(claims, n)[0] for n in ("a", "b"))
    assert "device gpu-0 has 80Gi of memory, the request asks 100Gi" in message(api, "huge")


async def test_a_class_selects_devices_by_their_capacity(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [capacity_claim_json("c", memory="10Gi")])
    big = device_class(
        selector=f'device.driver == "{DRIVER}" && '
        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
    )
    sched.list(
        nodes=[node("n0", cpu="8"), node("n1", cpu="8")],
        pods=[gpu_pod("p", "c", cpu="1")],
        resource_slices=[shared("n0", memory="16Gi"), shared("n1", memory="80Gi")],
        device_classes=[big],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == [("p", "n1")]


async def test_a_request_naming_a_capacity_the_devices_lack_waits_naming_it(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [capacity_claim_json("sized", memory="1Gi")])
    sched.list(
        nodes=[node("n0")],
        pods=[gpu_pod("p", "sized")],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    assert "device gpu-0 has no capacity memory" in message(api, "p")


async def test_preemption_frees_the_share_of_a_victim_for_a_higher_priority_pod(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    claims = Claims(
        api, [capacity_claim_json("low", memory="60Gi"), capacity_claim_json("high", memory="40Gi")]
    )
    low = parse(pod_json("low", node_name="n1", phase="Running", priority=0, scheduler="other"))
    low = replace(low, resource_claims=(PodClaimRef("gpu", "low"),))
    claims.set_allocation("low", "n1", ["gpu-0"], ["low"])
    [result] = results(claims, "low")
    result.update(shareID=SHARE, consumedCapacity={"memory": "60Gi"})
    sched = make_scheduler()
    sched.list(
        nodes=[node("n1", cpu="8")],
        pods=[low, gpu_pod("high", "high", priority=100)],
        resource_slices=[shared("n1")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    deleted = [c.path.rsplit("/", 1)[1] for c in api.landed() if c.method == "DELETE"]
    assert deleted == ["low"]
    assert api.binds() == []
    # The victim goes; the resourceclaim controller deallocates its claim: high binds there.
    sched.intake.on_pod_delete(low.uid)
    claims.objects["low"]["status"] = {}
    claims.observe(sched)
    clock.advance(30)
    sched.scheduler.signals.request_move()
    await sched.run()
    assert api.binds() == [("high", "n1")]
    assert results(claims, "high")[0]["consumedCapacity"] == {"memory": "40Gi"}
