import copy
import dataclasses
from typing import Any

import pytest

from koordgang.model.node import NodeInfo, NodeParseError, parse_node
from koordgang.model.resources import Resources
from koordgang.model.taints import Taint

GPU = "nvidia.com/gpu"

FULL_NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "gpu-node-7",
        "resourceVersion": "9001",
        "creationTimestamp": "2024-01-02T03:04:05Z",
        "labels": {
            "kubernetes.io/hostname": "gpu-node-7",
            "network.topology.nvidia.com/block": "b1",
        },
        "annotations": {"kwok.x-k8s.io/node": "fake"},
    },
    "spec": {
        "taints": [
            {"key": GPU, "value": "present", "effect": "NoSchedule"},
            {"key": "maintenance", "effect": "PreferNoSchedule"},
        ]
    },
    "status": {
        "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: "8"},
        "allocatable": {"cpu": "63500m", "memory": "500Gi", "pods": "110", GPU: "8"},
        "conditions": [
            {"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": "True", "reason": "KubeletReady"},
        ],
    },
}


def node_with(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "n"}, "status": status}


def test_a_full_node_parses_every_field_the_scheduler_uses() -> None:
    info = parse_node(FULL_NODE)
    assert info.name == "gpu-node-7"
    assert info.labels == {
        "kubernetes.io/hostname": "gpu-node-7",
        "network.topology.nvidia.com/block": "b1",
    }
    assert info.allocatable == Resources(
        {"cpu": 63500, "memory": 500 * 1073741824, "pods": 110, GPU: 8}
    )
    assert info.taints == (
        Taint(GPU, "present", "NoSchedule"),
        Taint("maintenance", "", "PreferNoSchedule"),
    )
    assert info.scheduling_taints == (Taint(GPU, "present", "NoSchedule"),)
    assert info.unschedulable is False
    assert info.ready is True
    assert info.resource_version == "9001"
    assert info.creation_timestamp == 1704164645.0


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        ([{"type": "Ready", "status": "True"}], True),
        ([{"type": "Ready", "status": "False"}], False),
        ([{"type": "Ready", "status": "Unknown"}], False),
        ([{"type": "Ready", "status": "true"}], False),
        ([{"type": "MemoryPressure", "status": "False"}], False),
        ([], False),
        (None, False),
    ],
)
def test_a_node_is_ready_only_with_condition_ready_true(
    conditions: list[dict[str, str]] | None, ready: bool
) -> None:
    assert parse_node(node_with(conditions=conditions)).ready is ready


def test_a_node_without_status_is_not_ready_and_has_nothing_allocatable() -> None:
    info = parse_node({"metadata": {"name": "bare"}})
    assert info.ready is False
    assert info.allocatable == Resources.EMPTY


def test_capacity_stands_in_for_missing_allocatable() -> None:
    info = parse_node(node_with(capacity={"cpu": "4", "pods": "10"}))
    assert info.allocatable == Resources({"cpu": 4000, "pods": 10})


def test_allocatable_wins_over_capacity() -> None:
    info = parse_node(node_with(capacity={"cpu": "4"}, allocatable={"cpu": "3500m"}))
    assert info.allocatable == Resources({"cpu": 3500})


@pytest.mark.parametrize(("raw", "unschedulable"), [(True, True), (False, False), (None, False)])
def test_spec_unschedulable_is_read_as_a_flag(raw: bool | None, unschedulable: bool) -> None:
    obj = {"metadata": {"name": "n"}, "spec": {"unschedulable": raw}}
    assert parse_node(obj).unschedulable is unschedulable


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            node_with(allocatable={"cpu": "many"}),
            'status.allocatable[cpu]: invalid quantity "many"',
        ),
        (
            node_with(capacity={"memory": "16 GiB"}),
            'status.capacity[memory]: invalid quantity "16 GiB"',
        ),
        (
            node_with(allocatable={GPU: "-8"}),
            'status.allocatable[nvidia.com/gpu]: invalid quantity "-8": must not be negative',
        ),
        (
            {"metadata": {"name": "n"}, "spec": {"taints": [{"key": 1}]}},
            "spec.taints[0].key: must be a string, got 1",
        ),
        (
            {"metadata": {"name": "n"}, "spec": {"unschedulable": "yes"}},
            'spec.unschedulable: expected true or false, got "yes"',
        ),
        (
            {"metadata": {"name": "n", "creationTimestamp": "now"}},
            'metadata.creationTimestamp: invalid timestamp "now"',
        ),
        (node_with(conditions=["Ready"]), 'status.conditions[0]: expected an object, got "Ready"'),
        ({"metadata": {}}, "metadata.name: missing"),
        ([], "a node must be a JSON object"),
    ],
)
def test_malformed_nodes_raise_node_parse_error_naming_field_and_value(
    obj: Any, message: str
) -> None:
    with pytest.raises(NodeParseError) as caught:
        parse_node(obj)
    assert str(caught.value).startswith(message)


def test_node_parse_error_is_a_value_error() -> None:
    assert issubclass(NodeParseError, ValueError)


def test_replace_recomputes_the_scheduling_taints() -> None:
    info = parse_node(FULL_NODE)
    cordoned = dataclasses.replace(info, taints=(Taint("x", "", "NoExecute"),))
    assert cordoned.scheduling_taints == (Taint("x", "", "NoExecute"),)


def test_node_info_can_be_built_directly_with_defaults() -> None:
    info = NodeInfo(name="n", taints=(Taint("a", "", "PreferNoSchedule"),))
    assert info.scheduling_taints == ()
    assert info.allocatable == Resources.EMPTY
    assert info.ready is False


def test_parsing_does_not_keep_references_to_the_source_labels() -> None:
    obj = copy.deepcopy(FULL_NODE)
    info = parse_node(obj)
    obj["metadata"]["labels"]["network.topology.nvidia.com/block"] = "b2"
    assert info.labels["network.topology.nvidia.com/block"] == "b1"
