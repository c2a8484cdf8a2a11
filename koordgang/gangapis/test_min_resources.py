"""PodGroup minResources: the free room of the cluster, and what is short of the minimum."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.gangapis.min_resources import free_in_cluster, shortfall
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.model.resources import CPU, MEMORY, PODS, Resources, parse_resource_list
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot

GPU = "nvidia.com/gpu"
GI = 2**30


def node_obj(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "10",
    gpus: str | None = None,
    ready: bool = True,
    cordoned: bool = False,
) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpus is not None:
        allocatable[GPU] = gpus
    return {
        "metadata": {"name": name},
        "spec": {"unschedulable": cordoned},
        "status": {
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(name: str, requests: dict[str, str], node: str = "") -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node:
        spec["nodeName"] = node
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": spec,
            "status": {"phase": "Running" if node else "Pending"},
        }
    )


def snapshot_of(*nodes: dict[str, Any], pods: tuple[PodInfo, ...] = ()) -> Snapshot:
    cache = SchedulerCache()
    for obj in nodes:
        cache.upsert_node(parse_node(obj))
    for bound in pods:
        cache.upsert_pod(bound)
    return Snapshot(cache)


def resources(raw: dict[str, str]) -> Resources:
    return parse_resource_list(raw)


# -- free_in_cluster ---------------------------------------------------------------------------


def test_free_room_is_allocatable_minus_requested_summed_over_nodes() -> None:
    snapshot = snapshot_of(
        node_obj("n1"),
        node_obj("n2", cpu="2", memory="4Gi"),
        pods=(pod("busy", {"cpu": "1500m", "memory": "1Gi"}, node="n1"),),
    )

    assert free_in_cluster(snapshot, [CPU, MEMORY, PODS]) == {
        CPU: 2500 + 2000,
        MEMORY: 7 * GI + 4 * GI,
        PODS: 9 + 10,
    }


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(node_obj("n2", cordoned=True), id="cordoned"),
        pytest.param(node_obj("n2", ready=False), id="not ready"),
    ],
)
def test_nodes_that_take_no_pods_add_no_room(other: dict[str, Any]) -> None:
    snapshot = snapshot_of(node_obj("n1"), other)

    assert free_in_cluster(snapshot, [CPU, MEMORY]) == {CPU: 4000, MEMORY: 8 * GI}


def test_an_overcommitted_node_adds_nothing_for_that_resource_only() -> None:
    # n1 runs pods that ask for more cpu than it has (bound elsewhere's decision, or shrunk):
    # its negative room must not eat into n2's.
    snapshot = snapshot_of(
        node_obj("n1"),
        node_obj("n2"),
        pods=(pod("greedy", {"cpu": "6", "memory": "1Gi"}, node="n1"),),
    )

    assert free_in_cluster(snapshot, [CPU, MEMORY]) == {CPU: 4000, MEMORY: 15 * GI}


def test_pods_placed_in_the_snapshot_take_room_too() -> None:
    snapshot = snapshot_of(node_obj("n1"), node_obj("n2"))
    [n1, _] = snapshot.nodes

    snapshot.add(pod("placed", {"cpu": "3"}), n1)

    assert free_in_cluster(snapshot, [CPU, PODS]) == {CPU: 1000 + 4000, PODS: 9 + 10}


def test_a_resource_no_node_has_is_zero_and_only_named_resources_are_counted() -> None:
    snapshot = snapshot_of(node_obj("n1", gpus="8"), node_obj("n2"))

    assert free_in_cluster(snapshot, [GPU, "example.com/fpga"]) == {GPU: 8, "example.com/fpga": 0}
    assert free_in_cluster(snapshot, []) == {}


# -- shortfall ---------------------------------------------------------------------------------


def test_nothing_is_short_when_the_free_room_covers_the_minimum() -> None:
    minimum = resources({"cpu": "4", "memory": "8Gi"})

    assert shortfall(minimum, [], {CPU: 4000, MEMORY: 8 * GI}, {}) == []


@pytest.mark.parametrize(
    ("minimum", "free", "message"),
    [
        ({"cpu": "5500m"}, {CPU: 4000}, "cpu short by 1500m (needs 5500m, 4 free)"),
        ({"cpu": "8"}, {CPU: 4000}, "cpu short by 4 (needs 8, 4 free)"),
        ({"memory": "16Gi"}, {MEMORY: 4 * GI}, "memory short by 12Gi (needs 16Gi, 4Gi free)"),
        ({GPU: "16"}, {GPU: 12}, "nvidia.com/gpu short by 4 (needs 16, 12 free)"),
        ({GPU: "2"}, {}, "nvidia.com/gpu short by 2 (needs 2, 0 free)"),
    ],
)
def test_each_short_resource_says_by_how_much_in_the_units_people_write(
    minimum: dict[str, str], free: dict[str, int], message: str
) -> None:
    assert shortfall(resources(minimum), [], free, {}) == [message]


def test_every_short_resource_is_named_in_name_order() -> None:
    minimum = resources({"memory": "16Gi", "cpu": "8", GPU: "1"})
    free = {CPU: 1000, MEMORY: 16 * GI, GPU: 0}

    assert shortfall(minimum, [], free, {}) == [
        "cpu short by 7 (needs 8, 1 free)",
        "nvidia.com/gpu short by 1 (needs 1, 0 free)",
    ]


def test_members_that_already_hold_room_take_their_requests_off_the_need() -> None:
    minimum = resources({GPU: "16", "cpu": "1"})
    holding = [pod("a-0", {GPU: "4", "cpu": "100m"}), pod("a-1", {GPU: "4"})]

    assert shortfall(minimum, holding, {GPU: 4, CPU: 900}, {}) == [
        "nvidia.com/gpu short by 4 (needs 8, 4 free)"
    ]
    assert shortfall(minimum, holding, {GPU: 8, CPU: 900}, {}) == []


def test_room_preemption_could_free_counts_and_is_named() -> None:
    minimum = resources({GPU: "16"})

    assert shortfall(minimum, [], {GPU: 12}, {GPU: 4}) == []
    assert shortfall(minimum, [], {GPU: 10}, {GPU: 4}) == [
        "nvidia.com/gpu short by 2 (needs 16, 10 free, 4 from preemption)"
    ]
