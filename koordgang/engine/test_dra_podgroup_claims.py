"""Claims of a whole upstream PodGroup (Kubernetes 1.37's ``DRAWorkloadResourceClaims``),
through the engine over the fake API: the claim the resourceclaim controller made for the
PodGroup from its template is allocated once, inside the gang's decision, and reserved for the
PodGroup (one ``reservedFor`` entry however many members); a node-local device draws every
member onto its node, a network pool lets them spread over the nodes it reaches; a member that
comes later goes where the allocation reaches, with nothing written."""

from __future__ import annotations

from typing import Any

from koordgang.model.dra import parse_resource_slice
from koordgang.model.pod import PodInfo
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import (
    bound,
    device_class,
    labels_selector,
    network_slice_json,
    node,
    parse,
    pod_json,
    podgroup_claim_json,
    resource_claim_json,
    resource_slice,
    upstream_podgroup_json,
)
from koordgang.testing.claims import Claims, claim_writes
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness, MakeScheduler

PODGROUPS = "podgroups.scheduling.k8s.io"
CLAIM = "train-gpus-x7k2p"
GROUP_CONSUMER = {
    "apiGroup": "scheduling.k8s.io",
    "resource": "podgroups",
    "name": "train",
    "uid": "uid-train",
}


def podgroup(min_count: int, *, made: str | None = CLAIM) -> dict[str, Any]:
    """PodGroup ``train`` whose claim ``gpus`` comes from template ``pair``; ``made``: the
    claim the controller made for it (its status names it)."""
    return upstream_podgroup_json("train", min_count, made=made)


def group_claim(count: int = 2, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """The claim the resourceclaim controller made for PodGroup ``train``: owned by it."""
    return podgroup_claim_json(CLAIM, "train", count, status=status)


def member(index: int, *, cpu: str = "1", made: str | None = CLAIM) -> PodInfo:
    """A pod of PodGroup ``train`` whose claim entry ``gpus`` is the PodGroup's (same name,
    same template); ``made``: the claim its status names."""
    obj = pod_json(f"train-{index}", cpu=cpu)
    obj["spec"]["schedulingGroup"] = {"podGroupName": "train"}
    obj["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "pair"}]
    if made is not None:
        obj["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": made}]
    return parse(obj)


def see_podgroup(sched: Harness, obj: dict[str, Any]) -> None:
    sched.intake.on_object(PODGROUPS, "ADDED", obj)


def allocation_node(claims: Claims) -> str:
    selector = claims.objects[CLAIM]["status"]["allocation"]["nodeSelector"]
    values: list[str] = selector["nodeSelectorTerms"][0]["matchFields"][0]["values"]
    return values[0]


async def test_a_gangs_podgroup_claim_is_allocated_once_and_reserved_for_the_podgroup(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    see_podgroup(sched, podgroup(3))
    claims = Claims(api, [group_claim()])
    members = [member(i) for i in range(3)]
    sched.list(
        nodes=[node(f"n{i}", cpu="8") for i in range(3)],
        pods=members,
        resource_slices=[resource_slice(f"n{i}") for i in range(3)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    binds = dict(api.binds())
    assert sorted(binds) == [m.name for m in members]
    # A node-local device draws every member onto its node.
    assert set(binds.values()) == {allocation_node(claims)}
    status = claims.objects[CLAIM]["status"]
    assert len(status["allocation"]["devices"]["results"]) == 2
    assert status["reservedFor"] == [GROUP_CONSUMER]
    # One allocation written, once: not one per member.
    assert len([c for c in claim_writes(api) if c.path.endswith("/status")]) == 1


async def test_a_gang_whose_claim_node_cannot_hold_every_member_binds_nobody(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    see_podgroup(sched, podgroup(3))
    claims = Claims(api, [group_claim()])
    members = [member(i, cpu="2") for i in range(3)]
    # The only devices are on gpu-node, with room for two members; big has room, no devices.
    sched.list(
        nodes=[node("gpu-node", cpu="4"), node("big", cpu="16")],
        pods=members,
        resource_slices=[resource_slice("gpu-node")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    assert claim_writes(api) == []
    condition = api.condition("train-0")
    assert condition is not None
    # The third member is kept off big by where the PodGroup's claim was allocated.
    assert "2/3 members placed" in condition["message"]
    assert 'not where resourceclaim "train-gpus-x7k2p" is allocated' in condition["message"]


async def test_members_of_a_podgroup_claim_on_a_network_pool_spread_over_its_nodes(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    see_podgroup(sched, podgroup(2))
    claims = Claims(api, [group_claim(count=1)])
    # Each member fills a node: two of them need two nodes of rack a.
    members = [member(i, cpu="3") for i in range(2)]
    rack = {"rack": "a"}
    sched.list(
        nodes=[node(f"n{i}", cpu="4", labels=rack if i < 2 else {"rack": "b"}) for i in range(4)],
        pods=members,
        resource_slices=[parse_resource_slice(network_slice_json("fabric", 1, node_selector=rack))],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    binds = dict(api.binds())
    assert sorted(binds.values()) == ["n0", "n1"]
    status = claims.objects[CLAIM]["status"]
    assert status["allocation"]["nodeSelector"] == labels_selector(rack)
    assert status["reservedFor"] == [GROUP_CONSUMER]


async def test_a_member_coming_later_goes_where_the_podgroups_claim_is_with_no_write(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    see_podgroup(sched, podgroup(1))
    claims = Claims(api, [group_claim()])
    claims.set_allocation(CLAIM, "n1", ["gpu-0", "gpu-1"], [])
    claims.objects[CLAIM]["status"]["reservedFor"] = [GROUP_CONSUMER]
    sched.list(
        nodes=[node(f"n{i}", cpu="8") for i in range(3)],
        pods=[member(3)],
        resource_slices=[resource_slice(f"n{i}") for i in range(3)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == [("train-3", "n1")]
    assert claim_writes(api) == []


async def test_members_wait_for_the_claim_of_their_podgroup_to_be_made_and_are_told(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    see_podgroup(sched, podgroup(2, made=None))
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[member(i, made=None) for i in range(2)],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
    )
    await sched.run()
    assert api.binds() == []
    condition = api.condition("train-0")
    assert condition is not None
    assert 'claim of PodGroup "train" spec.resourceClaims "gpus"' in condition["message"]


async def test_a_podgroup_claim_is_not_reserved_for_a_pod_whose_entry_differs(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """A member whose own entry names the claim directly (not as the PodGroup names it) uses
    it as its own: reserved for the pod, as Kubernetes decides it."""
    sched = make_scheduler()
    see_podgroup(sched, podgroup(1))
    claims = Claims(api, [group_claim()])
    obj = pod_json("train-0")
    obj["spec"]["schedulingGroup"] = {"podGroupName": "train"}
    obj["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": CLAIM}]
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=[parse(obj)],
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == [("train-0", "n0")]
    [consumer] = claims.objects[CLAIM]["status"]["reservedFor"]
    assert consumer["resource"] == "pods" and consumer["name"] == "train-0"


async def test_a_podgroup_claim_allocated_on_a_node_now_gone_is_given_back_once_and_moves(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    """Written by an earlier attempt on a node that is gone, reserved for the PodGroup alone,
    no member placed: given back (one write for the gang), then allocated where the gang
    fits."""
    sched = make_scheduler()
    see_podgroup(sched, podgroup(2))
    claims = Claims(api, [group_claim()])
    claims.set_allocation(CLAIM, "gone", ["gpu-0", "gpu-1"], [])
    claims.objects[CLAIM]["status"]["reservedFor"] = [GROUP_CONSUMER]
    sched.list(
        nodes=[node("n1", cpu="8")],
        pods=[member(i) for i in range(2)],
        resource_slices=[resource_slice("n1")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    assert len(claim_writes(api)) == 1
    assert "allocation" not in claims.objects[CLAIM]["status"]
    claims.observe(sched)
    clock.advance(30)
    await sched.run()
    assert sorted(api.binds()) == [("train-0", "n1"), ("train-1", "n1")]
    assert claims.objects[CLAIM]["status"]["reservedFor"] == [GROUP_CONSUMER]


async def test_a_podgroup_claim_is_kept_while_a_member_runs_on_its_devices(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    see_podgroup(sched, podgroup(1))
    claims = Claims(api, [group_claim()])
    claims.set_allocation(CLAIM, "n1", ["gpu-0", "gpu-1"], [])
    claims.objects[CLAIM]["status"]["reservedFor"] = [GROUP_CONSUMER]
    running = bound(member(0), "n1")
    # n1 is full: the new member cannot join its running sibling there.
    sched.list(
        nodes=[node("n1", cpu="1"), node("n2", cpu="8")],
        pods=[running, member(1)],
        resource_slices=[resource_slice("n1"), resource_slice("n2")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == []
    assert claim_writes(api) == []


async def test_a_named_claim_of_the_podgroup_is_reserved_for_it_too(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """A PodGroup may name an existing claim (``resourceClaimName``): members whose entry
    names it the same way share it, reserved for the PodGroup."""
    sched = make_scheduler()
    group = podgroup(2, made=None)
    group["spec"]["resourceClaims"] = [{"name": "fabric", "resourceClaimName": "channel"}]
    see_podgroup(sched, group)
    claims = Claims(api, [resource_claim_json("channel", 1)])
    members = []
    for i in range(2):
        obj = pod_json(f"train-{i}")
        obj["spec"]["schedulingGroup"] = {"podGroupName": "train"}
        obj["spec"]["resourceClaims"] = [{"name": "fabric", "resourceClaimName": "channel"}]
        members.append(parse(obj))
    sched.list(
        nodes=[node("n0", cpu="8")],
        pods=members,
        resource_slices=[resource_slice("n0")],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert sorted(api.binds()) == [("train-0", "n0"), ("train-1", "n0")]
    assert claims.objects["channel"]["status"]["reservedFor"] == [GROUP_CONSUMER]
