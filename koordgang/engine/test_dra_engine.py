"""Devices through Dynamic Resource Allocation, end to end through the engine (fake API);
``Claims`` (koordgang.testing.claims) plays the API server for ResourceClaims."""

from __future__ import annotations

from dataclasses import replace

from koordgang.clients.errors import ApiError
from koordgang.model.dra import (
    CLAIM_FINALIZER,
    PodClaimRef,
    parse_resource_claim,
)
from koordgang.model.pod import PodInfo
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import (
    DRIVER,
    NS,
    device_class,
    gang_annotations,
    node,
    parse,
    pod,
    pod_json,
    resource_claim_json,
    resource_slice,
)
from koordgang.testing.claims import (
    Claims,
    allocated_devices,
    claim_writes,
    gpu_pod,
)
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import MakeScheduler


def gang_of_four(claims: list[str]) -> list[PodInfo]:
    annotations = gang_annotations("train", 4)
    return [gpu_pod(f"train-{i}", claims[i], annotations=annotations) for i in range(4)]


async def test_a_gang_short_of_devices_binds_nobody_and_each_member_is_told(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    names = [f"train-{i}-gpu" for i in range(4)]
    claims = Claims(api, [resource_claim_json(n, count=2) for n in names])
    members = gang_of_four(names)
    sched.list(
        nodes=[node(f"n{i}", cpu="8") for i in range(3)],
        pods=members,
        resource_slices=[resource_slice(f"n{i}") for i in range(3)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    assert claim_writes(api) == []
    short = []
    for member in members:
        condition = api.condition(member.name)
        assert condition is not None and condition["status"] == "False", member.name
        short.append(condition["message"])
    # The member that found no devices says which request is short and by how much.
    assert any(
        'request "gpus" wants 2 devices of class gpu' in text and "has 0 of 2 free" in text
        for text in short
    ), short


async def test_the_gang_binds_whole_once_a_fourth_node_publishes_its_devices(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler()
    names = [f"train-{i}-gpu" for i in range(4)]
    claims = Claims(api, [resource_claim_json(n, count=2) for n in names])
    members = gang_of_four(names)
    sched.list(
        nodes=[node(f"n{i}", cpu="8") for i in range(4)],
        pods=members,
        resource_slices=[resource_slice(f"n{i}") for i in range(3)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    sched.intake.kind("resourceslices").upsert(resource_slice("n3"))
    clock.advance(30)
    await sched.run()
    binds = dict(api.binds())
    assert sorted(binds) == [m.name for m in members]
    # Every claim was written before any binding went out: finalizer, then allocation.
    writes = claim_writes(api)
    first_bind = min(c.landed for c in api.landed() if c.path.endswith("/binding"))
    assert writes and all(c.landed < first_bind for c in writes)
    allocated = allocated_devices(claims)
    for member, name in zip(members, names, strict=True):
        obj = claims.objects[name]
        assert CLAIM_FINALIZER in obj["metadata"]["finalizers"]
        node_name, devices = allocated[name]
        assert node_name == binds[member.name]
        assert len(devices) == 2
        assert obj["status"]["reservedFor"] == [
            {"resource": "pods", "name": member.name, "uid": member.uid}
        ]
        # The class's configuration is copied into the allocation.
        assert obj["status"]["allocation"]["devices"]["config"] == [
            {
                "source": "FromClass",
                "requests": ["gpus"],
                "opaque": {"driver": DRIVER, "parameters": {"mode": "train"}},
            }
        ]
    used = [(n, d) for n, devices in allocated.values() for d in devices]
    assert len(used) == len(set(used)), "a device was given twice"


async def test_a_refused_claim_write_undoes_the_batch_and_binds_nobody(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    names = [f"train-{i}-gpu" for i in range(4)]
    claims = Claims(api, [resource_claim_json(n, count=2) for n in names])
    members = gang_of_four(names)
    sched.list(
        nodes=[node(f"n{i}", cpu="8") for i in range(4)],
        pods=members,
        resource_slices=[resource_slice(f"n{i}") for i in range(4)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    # Someone changed the last claim after the scheduler read it.
    claims.objects[names[3]]["metadata"]["resourceVersion"] = "77"
    await sched.run()
    assert api.binds() == []
    for name in names:
        obj = claims.objects[name]
        assert not obj["metadata"].get("finalizers"), name
        assert not (obj.get("status") or {}).get("allocation"), name
    message = api.condition(members[0].name)
    assert message is not None and "changed meanwhile" in message["message"]
    # Nothing stays assumed: every device is free again.
    ledger = sched.scheduler.stores.dra
    assert not any(ledger.in_use(d.id) for n in range(4) for d in ledger.devices_on(f"n{n}"))


async def test_a_device_taken_by_another_scheduler_meanwhile_is_not_bound_twice(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(
        api, [resource_claim_json("mine", count=1), resource_claim_json("theirs", count=1)]
    )
    pod = gpu_pod("p", "mine")
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[pod],
        resource_slices=[resource_slice("n0", devices=2)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    gate = api.hold(lambda c: c.method == "PATCH" and c.path.endswith("mine/status"))
    sched.step()
    await sched.settle(200)
    mine = sched.scheduler.stores.dra.in_flight_for(pod.uid)["ns/mine"].devices[0].device
    # Another scheduler allocates the same device to its claim before our write lands.
    claims.set_allocation("theirs", "n0", [mine], [])
    sched.intake.kind("resourceclaims").upsert(parse_resource_claim(claims.objects["theirs"]))
    gate.set()
    await sched.settle()
    assert api.binds() == []
    condition = api.condition("p")
    assert condition is not None and "held by resourceclaim ns/theirs" in condition["message"]
    assert not (claims.objects["mine"]["status"] or {}).get("allocation")


async def test_a_shared_claim_sends_its_pods_to_its_node_and_adds_them_as_consumers(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("team", count=1)])
    claims.set_allocation("team", "n1", ["gpu-0"], ["first"])
    pod = gpu_pod("second", "team")
    sched.list(
        nodes=[node("n0", cpu="8"), node("n1", cpu="8")],
        pods=[pod],
        resource_slices=[resource_slice("n0"), resource_slice("n1")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == [("second", "n1")]
    assert [c["name"] for c in claims.objects["team"]["status"]["reservedFor"]] == [
        "first",
        "second",
    ]


async def test_after_a_restart_between_writes_and_bindings_the_pods_bind_without_new_writes(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    names = [f"train-{i}-gpu" for i in range(4)]
    claims = Claims(api, [resource_claim_json(n, count=2) for n in names])
    members = gang_of_four(names)
    # What a scheduler that stopped after the claim writes left behind.
    for i, name in enumerate(names):
        claims.set_allocation(name, f"n{i}", ["gpu-0", "gpu-1"], [members[i].name])
        claims.objects[name]["metadata"]["finalizers"] = [CLAIM_FINALIZER]
    sched = make_scheduler()
    sched.list(
        nodes=[node(f"n{i}", cpu="8") for i in range(4)],
        pods=members,
        resource_slices=[resource_slice(f"n{i}") for i in range(4)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert sorted(api.binds()) == [(m.name, f"n{i}") for i, m in enumerate(members)]
    assert claim_writes(api) == []


async def test_a_pod_whose_claim_is_not_made_yet_waits_and_is_told(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    obj = pod_json("p")
    obj["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-tmpl"}]
    sched.list(
        nodes=[node("n0")],
        pods=[parse(obj)],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
    )
    await sched.run()
    assert api.binds() == []
    condition = api.condition("p")
    assert condition is not None
    assert "resourceclaim controller to make the claim" in condition["message"]
    assert 'template "gpu-tmpl"' in condition["message"]


async def test_an_unknown_device_class_is_named(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("c", device_class="nope", count=2)])
    sched.list(
        nodes=[node("n0")],
        pods=[gpu_pod("p", "c")],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    condition = api.condition("p")
    assert condition is not None and 'deviceclass "nope" not found' in condition["message"]


async def test_a_selector_failing_on_every_device_is_reported_with_its_source(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("c", count=1)])
    sched.list(
        nodes=[node("n0")],
        pods=[gpu_pod("p", "c")],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class(selector=f'device.attributes["{DRIVER}"].model == "a100"')],
        resource_claims=claims.infos(),
    )
    await sched.run()
    condition = api.condition("p")
    assert condition is not None
    assert "DeviceClass gpu" in condition["message"]
    assert "model" in condition["message"]


async def test_claims_are_freed_for_others_when_their_pods_finish(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("a", count=2), resource_claim_json("b", count=2)])
    first, second = gpu_pod("first", "a"), gpu_pod("second", "b")
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[first, second],
        resource_slices=[resource_slice("n0", devices=2)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert [name for name, _ in api.binds()] in (["first"], ["second"])
    winner = api.binds()[0][0]
    claims.observe(sched)
    sched.observe_binds()
    # The resourceclaim controller deallocates the claim of a pod that is gone.
    done = sched.cache.pod(f"uid-{NS}-{winner}")
    assert done is not None
    sched.intake.on_pod_delete(done.uid)
    claim = "a" if winner == "first" else "b"
    claims.objects[claim]["status"] = {}
    claims.observe(sched)
    clock.advance(30)
    await sched.run()
    assert sorted(name for name, _ in api.binds()) == ["first", "second"]


async def test_a_claim_allocated_on_a_node_that_is_gone_is_given_back_and_allocated_anew(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    claims = Claims(api, [resource_claim_json("c", count=1)])
    # Written by an earlier attempt for this pod, on a node that is gone now.
    claims.set_allocation("c", "gone", ["gpu-0"], ["p"])
    pod = gpu_pod("p", "c")
    sched = make_scheduler()
    sched.list(
        nodes=[node("n1", cpu="8")],
        pods=[pod],
        resource_slices=[resource_slice("n1", devices=1)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    condition = api.condition("p")
    assert (
        condition is not None and 'not where resourceclaim "c" is allocated' in condition["message"]
    )
    # The claim was given back: no allocation, no consumer.
    assert "allocation" not in claims.objects["c"]["status"]
    assert "reservedFor" not in claims.objects["c"]["status"]
    claims.observe(sched)
    clock.advance(30)
    await sched.run()
    assert api.binds() == [("p", "n1")]
    assert allocated_devices(claims)["c"] == ("n1", ["gpu-0"])


async def test_a_claim_another_pod_shares_is_not_given_back(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    claims = Claims(api, [resource_claim_json("c", count=1)])
    claims.set_allocation("c", "gone", ["gpu-0"], ["other"])
    sched = make_scheduler()
    sched.list(
        nodes=[node("n1", cpu="8")],
        pods=[gpu_pod("p", "c")],
        resource_slices=[resource_slice("n1", devices=1)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    assert claim_writes(api) == []


async def test_preemption_frees_the_devices_of_a_victim_for_a_higher_priority_pod(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    claims = Claims(
        api, [resource_claim_json("low", count=2), resource_claim_json("high", count=2)]
    )
    low = parse({**pod_json("low", node_name="n1", phase="Running", priority=0, scheduler="other")})
    low = replace(low, resource_claims=(PodClaimRef("gpu", "low"),))
    claims.set_allocation("low", "n1", ["gpu-0", "gpu-1"], ["low"])
    high = gpu_pod("high", "high", priority=100)
    sched = make_scheduler()
    sched.list(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8")],
        pods=[low, high],
        resource_slices=[resource_slice("n1", devices=2), resource_slice("n2", devices=1)],
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
    assert allocated_devices(claims)["high"] == ("n1", ["gpu-0", "gpu-1"])


# -- regressions: gangs sharing claims, batches given up, claims that move -----------------------


async def test_gang_members_sharing_a_claim_allocated_in_their_decision_bind_together(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("team", count=1)])
    members = [gpu_pod(f"m{i}", "team", annotations=gang_annotations("g", 2)) for i in range(2)]
    sched.list(
        nodes=[node("n0", cpu="8"), node("n1", cpu="8")],
        pods=members,
        resource_slices=[resource_slice("n0"), resource_slice("n1")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    binds = dict(api.binds())
    assert sorted(binds) == ["m0", "m1"] and len(set(binds.values())) == 1
    # One write: the allocation, with both members as consumers.
    status = [c for c in claim_writes(api) if c.path.endswith("/status")]
    assert len(status) == 1
    assert [c["name"] for c in claims.objects["team"]["status"]["reservedFor"]] == ["m0", "m1"]


async def test_a_gang_whose_writes_failed_is_decided_about_whole_again(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler()
    names = [f"train-{i}-gpu" for i in range(4)]
    claims = Claims(api, [resource_claim_json(n, count=2) for n in names])
    members = gang_of_four(names)
    sched.list(
        nodes=[node(f"n{i}", cpu="8") for i in range(4)],
        pods=members,
        resource_slices=[resource_slice(f"n{i}") for i in range(4)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    claims.objects[names[3]]["metadata"]["resourceVersion"] = "77"  # changed by someone
    await sched.run()
    assert api.binds() == []
    # Devices for 3 only now: the gang (which never bound) must not bind 3 of its 4.
    sched.intake.kind("resourceslices").delete("n3-gpus")
    for _ in range(4):
        clock.advance(120)
        await sched.run()
    assert api.binds() == []
    gang = sched.gangs.gang_of(members[0].uid)
    assert gang is not None and not gang.satisfied


async def test_a_pod_whose_binding_failed_is_tried_again_only_after_its_writes_are_undone(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("mine", count=1)])
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod("p", "mine")],
        resource_slices=[resource_slice("n0", devices=1)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    api.answer_bind("p", *([ApiError(500, "InternalError", "boom")] * 5), {})
    undo = api.hold(
        lambda c: (
            c.method == "PATCH"
            and c.path.endswith("mine/status")
            and c.body.get("status", {}).get("allocation", "") is None
        )
    )
    sched.step()
    await sched.settle(300)
    claims.observe(sched)  # the claim as written: allocated, reserved for p
    clock.advance(60)
    await sched.run()
    assert api.binds() == []  # not retried while the undo is on its way
    undo.set()
    await sched.settle()
    claims.observe(sched)
    clock.advance(60)
    await sched.run()
    assert api.binds() == [("p", "n0")]
    assert claims.objects["mine"]["status"]["allocation"]


async def test_a_pod_pinned_to_a_claim_that_moved_goes_where_it_is_now(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("team", count=1)])
    claims.set_allocation("team", "n0", ["gpu-0"], ["a"])
    sched.list(
        nodes=[node("n0", cpu="1"), node("n1", cpu="8")],
        pods=[pod("a", cpu="1", node_name="n0", phase="Running"), gpu_pod("p", "team")],
        resource_slices=[resource_slice("n0"), resource_slice("n1")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []  # n0, where the claim is, is full
    # Deallocated, then allocated on n1 (for another consumer): two events.
    claims.objects["team"]["status"] = {}
    claims.observe(sched)
    claims.set_allocation("team", "n1", ["gpu-1"], ["b"])
    claims.observe(sched)
    for _ in range(3):
        clock.advance(300)
        await sched.run()
    assert api.binds() == [("p", "n1")]


async def test_a_victim_gone_whose_claim_is_not_deallocated_yet_is_not_evicted_for_again(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    claims = Claims(
        api,
        [
            resource_claim_json("low", count=2),
            resource_claim_json("low2", count=2),
            resource_claim_json("high", count=2),
        ],
    )
    lows = []
    for name, node_name in (("low", "n1"), ("low2", "n2")):
        low = parse(pod_json(name, node_name=node_name, phase="Running", scheduler="other"))
        lows.append(replace(low, resource_claims=(PodClaimRef("gpu", name),)))
        claims.set_allocation(name, node_name, ["gpu-0", "gpu-1"], [name])
    sched = make_scheduler()
    sched.list(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8")],
        pods=[*lows, gpu_pod("high", "high", priority=100)],
        resource_slices=[resource_slice("n1", devices=2), resource_slice("n2", devices=2)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    [first] = [c.path.rsplit("/", 1)[1] for c in api.landed() if c.method == "DELETE"]
    victim = next(p for p in lows if p.name == first)
    sched.intake.on_pod_delete(victim.uid)  # gone; its claim not deallocated yet
    for _ in range(3):
        clock.advance(30)
        sched.scheduler.signals.request_move()
        await sched.run()
    assert [c.path.rsplit("/", 1)[1] for c in api.landed() if c.method == "DELETE"] == [first]


async def test_a_claim_created_after_its_pod_lets_that_pod_go(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("late", count=1)])
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[gpu_pod("p", "late")],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
    )
    await sched.run()
    condition = api.condition("p")
    assert condition is not None and 'resourceclaim "late" not found' in condition["message"]
    claims.observe(sched)  # created now
    await sched.run()  # no time passes: the pod is tried again at once, not after a backoff
    assert api.binds() == [("p", "n0")]


async def test_a_nonstrict_member_held_for_its_gang_holds_its_devices(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    # m1 wants 2 devices where there is 1: it waits, m0 is placed and held (NonStrict).
    claims = Claims(
        api,
        [
            resource_claim_json("m0", count=1),
            resource_claim_json("m1", count=2),
            resource_claim_json("solo", 1),
        ],
    )
    annotations = gang_annotations("g", 2, mode="NonStrict")
    members = [gpu_pod(f"m{i}", f"m{i}", annotations=annotations) for i in range(2)]
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=members,
        resource_slices=[resource_slice("n0", devices=1)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    assert [w.pod.name for w in sched.waiting] == ["m0"]
    # A pod alone wants the node's only device: held for m0, it is not given to it.
    sched.add(gpu_pod("solo", "solo"))
    await sched.run()
    assert api.binds() == []
    condition = api.condition("solo")
    assert condition is not None and "Insufficient devices of class gpu" in condition["message"]
    assert claim_writes(api) == []


async def test_the_best_node_named_is_one_with_devices_of_the_class(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [resource_claim_json("busy", count=2), resource_claim_json("c", count=2)])
    claims.set_allocation("busy", "gpu-node", ["gpu-0", "gpu-1"], ["other"])
    sched.list(
        # "a-cpu" comes first and has no devices; "gpu-node" has 2, both in use.
        nodes=[node("a-cpu", cpu="8"), node("gpu-node", cpu="8")],
        pods=[gpu_pod("p", "c")],
        resource_slices=[resource_slice("gpu-node", devices=2)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    condition = api.condition("p")
    assert condition is not None
    assert "the best node, gpu-node, has 0 of 2 free" in condition["message"]
