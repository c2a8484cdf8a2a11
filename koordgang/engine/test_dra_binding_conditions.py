"""Devices with binding conditions (DRADeviceBindingConditions), through the engine over the
fake API: the gang binds only once the driver (the test) reports every device prepared; a
failure condition or the timeout gives every member's devices back, nobody bound."""

from __future__ import annotations

import asyncio
from typing import Any

from koordgang.model.dra import parse_resource_slice
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import (
    DRIVER,
    device_class,
    gang_annotations,
    node,
    resource_claim_json,
    resource_slice_json,
)
from koordgang.testing.claims import Claims, gpu_pod
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness, MakeScheduler

READY = "dra.example.com/is-prepared"
FAILED = "dra.example.com/preparation-failed"
NAMES = ["bc-0", "bc-1"]


def prepared_slice() -> Any:
    obj = resource_slice_json("n0", 2)
    for device in obj["spec"]["devices"]:
        device["bindingConditions"] = [READY]
        device["bindingFailureConditions"] = [FAILED]
        device["bindsToNode"] = True
    return parse_resource_slice(obj)


async def started(
    make_scheduler: MakeScheduler, api: FakeApi, **settings: Any
) -> tuple[Harness, Claims]:
    """A gang of two, each with a claim for one device that must be prepared, placed and
    written; its binding waits."""
    sched = make_scheduler(**settings)
    claims = Claims(api, [resource_claim_json(n) for n in NAMES])
    annotations = gang_annotations("bc", 2)
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod(f"bc-pod-{i}", NAMES[i], annotations=annotations) for i in range(2)],
        resource_slices=[prepared_slice()],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    sched.step()
    await sched.settle(turns=300)
    claims.observe(sched)
    await sched.settle(turns=300)
    return sched, claims


def report(claims: Claims, name: str, condition: str) -> None:
    """The driver: ``condition`` True on the claim's device."""
    obj = claims.objects[name]
    obj["metadata"]["resourceVersion"] = str(next(claims.versions))
    [result] = obj["status"]["allocation"]["devices"]["results"]
    entry = {k: result[k] for k in ("driver", "pool", "device")}
    entry["conditions"] = [
        {
            "type": condition,
            "status": "True",
            "reason": "Done",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    obj["status"]["devices"] = [entry]


async def test_the_gang_binds_once_the_driver_reports_every_device_prepared(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched, claims = await started(make_scheduler, api)
    assert api.binds() == []
    for name in NAMES:
        allocation = claims.objects[name]["status"]["allocation"]
        [result] = allocation["devices"]["results"]
        assert result["bindingConditions"] == [READY]
        assert result["bindingFailureConditions"] == [FAILED]
        assert allocation["allocationTimestamp"].endswith("Z")
        assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
            "n0"
        ]
    [waiting] = api.events("bc-pod-0", "BindingConditionsPending")
    assert READY in waiting["message"]
    assert f"{DRIVER}/n0/gpu-" in waiting["message"]
    condition = api.condition("bc-pod-1")
    assert condition is not None
    assert condition["reason"] == "BindingConditionsPending"
    assert READY in condition["message"]

    report(claims, NAMES[0], READY)
    claims.observe(sched)
    await sched.settle(turns=300)
    assert api.binds() == []

    report(claims, NAMES[1], READY)
    claims.observe(sched)
    assert await sched.settle()
    assert sorted(api.binds()) == [("bc-pod-0", "n0"), ("bc-pod-1", "n0")]


async def test_a_failure_condition_gives_every_members_devices_back(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched, claims = await started(make_scheduler, api)
    report(claims, NAMES[1], FAILED)
    claims.observe(sched)
    assert await sched.settle()
    assert api.binds() == []
    for name in NAMES:
        status = claims.objects[name].get("status") or {}
        assert "allocation" not in status
        assert "devices" not in status
        assert "reservedFor" not in status


async def test_the_timeout_gives_every_members_devices_back(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched, claims = await started(make_scheduler, api, dra_binding_timeout=30.0)
    clock.advance(29)
    await asyncio.sleep(0.7)
    await sched.settle(turns=300)
    assert "allocation" in claims.objects[NAMES[0]]["status"]
    clock.advance(2)
    await asyncio.sleep(0.7)
    assert await sched.settle()
    assert api.binds() == []
    for name in NAMES:
        assert "allocation" not in (claims.objects[name].get("status") or {})


async def test_after_a_restart_a_written_allocation_still_waits_for_its_conditions(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """The allocation and the consumer were written before a restart: nothing is left to
    write, and the pod binds only once its device is prepared all the same."""
    result = {
        "request": "gpus",
        "driver": DRIVER,
        "pool": "n0",
        "device": "gpu-0",
        "bindingConditions": [READY],
        "bindingFailureConditions": [FAILED],
    }
    status = {
        "allocation": {
            "devices": {"results": [result]},
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0"]}]}
                ]
            },
            "allocationTimestamp": "2026-01-01T00:00:00Z",
        },
        "reservedFor": [{"resource": "pods", "name": "solo", "uid": "uid-ns-solo"}],
    }
    claims = Claims(api, [resource_claim_json(NAMES[0], status=status)])
    sched = make_scheduler()
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod("solo", NAMES[0])],
        resource_slices=[prepared_slice()],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    sched.step()
    await sched.settle(turns=300)
    assert api.binds() == []
    report(claims, NAMES[0], READY)
    claims.observe(sched)
    assert await sched.settle()
    assert api.binds() == [("solo", "n0")]
