"""Gangs of gangs through the whole engine (fake API server, fake clock): a CompositePodGroup
(Kubernetes 1.37, ``scheduling.k8s.io/v1alpha3``) binds at least ``minGroupCount`` of its
PodGroups whole in one decision, each child all or nothing, the others later and whole; an
unusable hierarchy places nothing and says why; its condition says what happened."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from koordgang.model.pod import PodInfo
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import NS, node, parse, pod_json
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness

PODGROUPS = "podgroups.scheduling.k8s.io"
COMPOSITES = "compositepodgroups.scheduling.k8s.io"


def meta(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": NS,
        "uid": f"uid-{name}",
        "resourceVersion": "1",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }


def composite(
    name: str, min_groups: int | None, parent: str = "", topology: str = "", **status: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "workloadRef": {"workloadName": "w", "templateName": name},
        "schedulingPolicy": {"gang": {"minGroupCount": min_groups}}
        if min_groups is not None
        else {"basic": {}},
    }
    if parent:
        spec["parentCompositePodGroupName"] = parent
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": meta(name),
        "spec": spec,
        "status": status,
    }


def podgroup(name: str, min_count: int, parent: str, topology: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "parentCompositePodGroupName": parent,
        "workloadRef": {"workloadName": "w", "templateName": name},
        "schedulingPolicy": {"gang": {"minCount": min_count}},
    }
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": meta(name),
        "spec": spec,
        "status": {},
    }


def members(group: str, count: int, cpu: str = "1") -> list[PodInfo]:
    pods = []
    for i in range(count):
        obj = pod_json(f"{group}-{i}", cpu=cpu)
        obj["spec"]["schedulingGroup"] = {"podGroupName": group}
        pods.append(parse(obj))
    return pods


def tree(sched: Harness, children: int = 3, size: int = 4, min_groups: int = 2) -> list[PodInfo]:
    """``cpg`` with ``children`` PodGroups ``g0..`` of ``size`` members each."""
    sched.intake.on_object(COMPOSITES, "ADDED", composite("cpg", min_groups))
    pods = []
    for c in range(children):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(f"g{c}", size, "cpg"))
        pods += members(f"g{c}", size)
    return pods


def bound_groups(api: FakeApi) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, _ in api.binds():
        group = name.rsplit("-", 1)[0]
        counts[group] = counts.get(group, 0) + 1
    return counts


async def publish(sched: Harness, clock: FakeClock) -> None:
    clock.advance(1.0)
    await sched.run()


def composite_condition(api: FakeApi, name: str = "cpg") -> dict[str, Any] | None:
    patches = api.custom_status_patches("compositepodgroups", name)
    if not patches:
        return None
    conditions: list[dict[str, Any]] = patches[-1]["conditions"]
    [condition] = [c for c in conditions if c["type"] == "CompositePodGroupInitiallyScheduled"]
    return condition


async def test_the_minimum_of_children_binds_whole_and_the_rest_later_whole(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    pods = tree(sched)
    # Room for two children of four, and two more pods: the third child does not fit whole.
    sched.list(nodes=[node("n1", cpu="5"), node("n2", cpu="5")], pods=pods)
    await sched.run()
    assert sorted(bound_groups(api).values()) == [4, 4]
    [left] = {"g0", "g1", "g2"} - set(bound_groups(api))
    for member in [p for p in pods if p.name.startswith(left)]:
        condition = api.condition(member.name)
        assert condition is not None and condition["status"] == "False"
    sched.observe_binds()
    await publish(sched, clock)
    condition = composite_condition(api)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "Scheduled")

    # The third child goes on its own now, whole once there is room.
    sched.intake.on_node_upsert(node("n3", cpu="4"))
    clock.advance(30.0)
    await sched.run()
    assert sorted(bound_groups(api).values()) == [4, 4, 4]


async def test_below_the_minimum_nothing_binds_and_every_member_says_which_level(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    pods = tree(sched)
    sched.list(nodes=[node("n1", cpu="7")], pods=pods)
    await sched.run()
    assert api.binds() == []
    for member in pods:
        condition = api.condition(member.name)
        assert condition is not None and condition["status"] == "False"
        assert "CompositePodGroup ns/cpg: 1 of min 2 children whole" in condition["message"]
    await publish(sched, clock)
    condition = composite_condition(api)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")

    sched.intake.on_node_upsert(node("n2", cpu="2"))
    clock.advance(30.0)
    await sched.run()
    assert sorted(bound_groups(api).values()) == [4, 4]


async def test_children_that_cannot_be_tried_yet_do_not_hold_back_the_minimum(
    sched: Harness, api: FakeApi
) -> None:
    pods = tree(sched)
    # g2's pods do not exist yet: g0 and g1 are two, the minimum.
    created = [p for p in pods if not p.name.startswith("g2")]
    sched.list(nodes=[node("n1", cpu="16")], pods=created)
    await sched.run()
    assert bound_groups(api) == {"g0": 4, "g1": 4}


async def test_a_minimum_out_of_reach_waits_and_says_what_is_missing(
    sched: Harness, api: FakeApi
) -> None:
    pods = tree(sched, min_groups=3)
    created = [p for p in pods if not p.name.startswith("g2")]
    sched.list(nodes=[node("n1", cpu="16")], pods=created)
    await sched.run()
    assert api.binds() == []
    condition = api.condition("g0-0")
    assert condition is not None
    assert "waits for its CompositePodGroup ns/cpg" in condition["message"]
    assert "ns/g2: 0/4 members created" in condition["message"], condition["message"]


async def test_nested_composites_need_their_own_minimum_at_each_level(
    sched: Harness, api: FakeApi
) -> None:
    # root needs 2 of {a, b}; a needs 1 of {a0, a1}; b needs 2 of {b0, b1}.
    sched.intake.on_object(COMPOSITES, "ADDED", composite("root", 2))
    sched.intake.on_object(COMPOSITES, "ADDED", composite("a", 1, parent="root"))
    sched.intake.on_object(COMPOSITES, "ADDED", composite("b", 2, parent="root"))
    pods = []
    for name, parent in (("a0", "a"), ("a1", "a"), ("b0", "b"), ("b1", "b")):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(name, 2, parent))
        pods += members(name, 2)
    # Room for three children of two: a (one child) and b (both).
    sched.list(nodes=[node("n1", cpu="6")], pods=pods)
    await sched.run()
    bound = bound_groups(api)
    assert sorted(bound.values()) == [2, 2, 2]
    assert bound.get("b0") == 2 and bound.get("b1") == 2


async def test_an_unusable_hierarchy_places_nothing_and_says_why(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    # A missing parent.
    sched.intake.on_object(PODGROUPS, "ADDED", podgroup("lost", 1, "nowhere"))
    # A cycle: x -> y -> x.
    sched.intake.on_object(COMPOSITES, "ADDED", composite("x", 1, parent="y"))
    sched.intake.on_object(COMPOSITES, "ADDED", composite("y", 1, parent="x"))
    sched.intake.on_object(PODGROUPS, "ADDED", podgroup("looped", 1, "x"))
    # Five composites above one PodGroup.
    for level in range(5):
        parent = f"d{level + 1}" if level < 4 else ""
        sched.intake.on_object(COMPOSITES, "ADDED", composite(f"d{level}", 1, parent=parent))
    sched.intake.on_object(PODGROUPS, "ADDED", podgroup("deep", 1, "d0"))
    pods = members("lost", 1) + members("looped", 1) + members("deep", 1)
    sched.list(nodes=[node("n1", cpu="16")], pods=pods)
    await sched.run()
    assert api.binds() == []
    said = {p.name: (api.condition(p.name) or {}).get("message", "") for p in pods}
    assert "CompositePodGroup ns/nowhere does not exist" in said["lost-0"], said
    assert "form a cycle" in said["looped-0"] and "ns/x" in said["looped-0"], said
    assert "more than 4 CompositePodGroups" in said["deep-0"], said
    await publish(sched, clock)
    condition = composite_condition(api, "x")
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "Invalid")


async def test_a_bad_min_group_count_is_explained_on_the_composite_and_the_pods(
    sched: Harness, api: FakeApi
) -> None:
    sched.intake.on_object(COMPOSITES, "ADDED", composite("bad", 0))
    sched.intake.on_object(PODGROUPS, "ADDED", podgroup("c0", 1, "bad"))
    sched.list(nodes=[node("n1", cpu="4")], pods=members("c0", 1))
    await sched.run()
    assert api.binds() == []
    condition = api.condition("c0-0")
    assert condition is not None and "minGroupCount" in condition["message"], condition
    [event] = api.events("bad", "InvalidGangConfig")
    assert "spec.schedulingPolicy.gang.minGroupCount" in event["message"]


# -- topology keys at each level ---------------------------------------------------------------


def rack(name: str, value: str, cpu: str, block: str = "") -> Any:
    labels = {"rack": value}
    if block:
        labels["block"] = block
    return node(name, cpu=cpu, labels=labels)


def nodes_of(api: FakeApi) -> dict[str, str]:
    return dict(api.binds())


async def test_a_composite_topology_key_holds_all_its_children_in_one_value(
    sched: Harness, api: FakeApi
) -> None:
    sched.intake.on_object(COMPOSITES, "ADDED", composite("cpg", 2, topology="rack"))
    pods = []
    for c in range(2):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(f"g{c}", 2, "cpg"))
        pods += members(f"g{c}", 2)
    # r1 has room for three members, r2 for five: only r2 holds both children.
    nodes = [
        rack("a1", "r1", "2"),
        rack("a2", "r1", "1"),
        rack("b1", "r2", "4"),
        rack("b2", "r2", "1"),
    ]
    sched.list(nodes=nodes, pods=pods)
    await sched.run()
    placed = nodes_of(api)
    assert len(placed) == 4
    assert set(placed.values()) <= {"b1", "b2"}, placed


async def test_each_podgroup_keeps_to_one_value_of_its_own_key(
    sched: Harness, api: FakeApi
) -> None:
    sched.intake.on_object(COMPOSITES, "ADDED", composite("cpg", 2, topology="rack"))
    pods = []
    for c in range(2):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(f"g{c}", 2, "cpg", topology="block"))
        pods += members(f"g{c}", 2)
    # One rack, two blocks of room for two each: each child fills one block.
    nodes = [
        rack("x1", "r1", "1", block="k1"),
        rack("x2", "r1", "1", block="k1"),
        rack("y1", "r1", "1", block="k2"),
        rack("y2", "r1", "1", block="k2"),
    ]
    sched.list(nodes=nodes, pods=pods)
    await sched.run()
    placed = nodes_of(api)
    assert len(placed) == 4
    for c in range(2):
        blocks = {placed[f"g{c}-{i}"][0] for i in range(2)}
        assert len(blocks) == 1, placed


async def test_no_value_of_the_key_holding_the_minimum_places_nothing_and_says_so(
    sched: Harness, api: FakeApi
) -> None:
    sched.intake.on_object(COMPOSITES, "ADDED", composite("cpg", 2, topology="rack"))
    pods = []
    for c in range(2):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(f"g{c}", 2, "cpg"))
        pods += members(f"g{c}", 2)
    # Room for four members, but two in each rack.
    sched.list(nodes=[rack("a1", "r1", "2"), rack("b1", "r2", "2")], pods=pods)
    await sched.run()
    assert api.binds() == []
    condition = api.condition("g0-0")
    assert condition is not None
    assert "no rack value holds 2 of its children whole" in condition["message"], condition


async def test_a_later_child_joins_its_siblings_value_of_the_composite_key(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(COMPOSITES, "ADDED", composite("cpg", 2, topology="rack"))
    pods = []
    for c in range(3):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(f"g{c}", 2, "cpg"))
        pods += members(f"g{c}", 2)
    sched.list(nodes=[rack("b1", "r2", "4")], pods=pods)
    await sched.run()
    assert len(api.binds()) == 4
    sched.observe_binds()
    # Room for the third child in r1 (a tighter fit) and in r2: it goes where its siblings run.
    sched.intake.on_node_upsert(rack("a1", "r1", "2"))
    sched.intake.on_node_upsert(rack("b2", "r2", "3"))
    clock.advance(30.0)
    await sched.run()
    placed = nodes_of(api)
    assert {placed["g2-0"], placed["g2-1"]} == {"b2"}, placed


async def test_a_podgroup_of_its_own_with_a_topology_key_shares_one_value(
    sched: Harness, api: FakeApi
) -> None:
    obj = podgroup("solo", 3, "", topology="rack")
    del obj["spec"]["parentCompositePodGroupName"]
    sched.intake.on_object(PODGROUPS, "ADDED", obj)
    sched.list(
        nodes=[rack("a1", "r1", "2"), rack("b1", "r2", "2"), rack("b2", "r2", "1")],
        pods=members("solo", 3),
    )
    await sched.run()
    assert set(nodes_of(api).values()) == {"b1", "b2"}


# -- each child tried on its own, each level at its own minimum --------------------------------


async def test_a_child_that_cannot_fit_leaves_the_room_to_the_others(
    sched: Harness, api: FakeApi
) -> None:
    sched.intake.on_object(COMPOSITES, "ADDED", composite("cpg", 2))
    pods = []
    for name, cpu in (("g0", "100"), ("g1", "1"), ("g2", "1")):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(name, 2, "cpg"))
        pods += members(name, 2, cpu=cpu)
    sched.list(nodes=[node("n1", cpu="16")], pods=pods)
    await sched.run()
    assert bound_groups(api) == {"g1": 2, "g2": 2}


async def test_a_whole_child_of_a_nested_composite_short_of_its_minimum_is_not_bound(
    sched: Harness, api: FakeApi
) -> None:
    # root needs 1 of {A, b}; A needs both a0 and a1; room for five pods of two-pod groups.
    sched.intake.on_object(COMPOSITES, "ADDED", composite("root", 1))
    sched.intake.on_object(COMPOSITES, "ADDED", composite("A", 2, parent="root"))
    pods = []
    for name, parent in (("a0", "A"), ("a1", "A"), ("b", "root")):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(name, 2, parent))
        pods += members(name, 2)
    sched.list(nodes=[node("n1", cpu="5")], pods=pods)
    await sched.run()
    assert bound_groups(api) == {"b": 2}


async def test_extra_children_of_a_nested_level_do_not_take_a_siblings_room(
    sched: Harness, api: FakeApi
) -> None:
    # root (one rack) needs A and b; A needs 1 of {a0, a1}; the rack holds two children.
    sched.intake.on_object(COMPOSITES, "ADDED", composite("root", 2, topology="rack"))
    sched.intake.on_object(COMPOSITES, "ADDED", composite("A", 1, parent="root"))
    pods = []
    for name, parent in (("a0", "A"), ("a1", "A"), ("b", "root")):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(name, 2, parent))
        pods += members(name, 2)
    sched.list(nodes=[rack("r1-n", "r1", "4")], pods=pods)
    await sched.run()
    bound = bound_groups(api)
    assert bound.get("b") == 2 and sum(bound.values()) == 4, bound


async def test_an_unusable_composite_below_the_root_places_nothing(
    sched: Harness, api: FakeApi
) -> None:
    sched.intake.on_object(COMPOSITES, "ADDED", composite("root", 2))
    sched.intake.on_object(COMPOSITES, "ADDED", composite("bad", 0, parent="root"))
    pods = []
    for name, parent in (("x0", "bad"), ("b", "root")):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(name, 1, parent))
        pods += members(name, 1)
    sched.list(nodes=[node("n1", cpu="8")], pods=pods)
    await sched.run()
    assert api.binds() == []
    condition = api.condition("b-0")
    assert condition is not None and "minGroupCount" in condition["message"], condition


async def test_a_basic_composite_under_a_gang_composite_counts_as_one_child(
    sched: Harness, api: FakeApi
) -> None:
    # root needs 2 of {B (basic), c0}; c0 never fits: B's children are not bound either.
    sched.intake.on_object(COMPOSITES, "ADDED", composite("root", 2))
    sched.intake.on_object(COMPOSITES, "ADDED", composite("B", None, parent="root"))
    pods = []
    for name, parent, cpu in (("b0", "B", "1"), ("b1", "B", "1"), ("c0", "root", "100")):
        sched.intake.on_object(PODGROUPS, "ADDED", podgroup(name, 1, parent))
        pods += members(name, 1, cpu=cpu)
    sched.list(nodes=[node("n1", cpu="8")], pods=pods)
    await sched.run()
    assert api.binds() == []


async def test_a_podgroup_with_a_topology_key_preempts_inside_one_value(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    obj = podgroup("urgent", 2, "", topology="rack")
    del obj["spec"]["parentCompositePodGroupName"]
    sched.intake.on_object(PODGROUPS, "ADDED", obj)
    urgent = []
    for i in range(2):
        body = pod_json(f"urgent-{i}", cpu="2", priority=1000)
        body["spec"]["schedulingGroup"] = {"podGroupName": "urgent"}
        urgent.append(parse(body))
    low = [
        parse(pod_json(f"low-{i}", cpu="2", priority=0, node_name="r1-n", phase="Running"))
        for i in range(2)
    ]
    sched.list(nodes=[rack("r1-n", "r1", "4")], pods=[*low, *urgent])
    await sched.run()
    clock.advance(1)
    await sched.run()
    deleted = [c.path for c in api.landed() if c.method == "DELETE" and "/pods/low-" in c.path]
    assert len(deleted) == 2, deleted


async def test_a_composite_whose_children_finished_at_once_still_says_scheduled(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    pods = tree(sched, children=2, size=2)
    sched.list(nodes=[node("n1", cpu="4")], pods=pods)
    await sched.run()
    assert len(api.binds()) == 4
    sched.observe_binds()
    # Short jobs: every member done before the next status tick.
    for info in [p for p in sched.cache.pods() if p.node_name]:
        sched.intake.on_pod_upsert(replace(info, phase="Succeeded", resource_version="9"))
    await publish(sched, clock)
    condition = composite_condition(api)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "Scheduled")
