"""The nodes file format: parsing, range expansion and the Node objects it produces."""

from __future__ import annotations

import pytest
import yaml

from controlplane.layout import DEFAULT_NODES_FILE
from controlplane.nodes import (
    NodeSpec,
    NodeSpecError,
    Taint,
    expand_name_range,
    load_node_specs,
    parse_node_specs,
)


def parse(text: str) -> list[NodeSpec]:
    return parse_node_specs(yaml.safe_load(text))


@pytest.mark.parametrize(
    ("pattern", "names"),
    [
        ("cpu-1", ["cpu-1"]),
        ("gpu-[1-3]", ["gpu-1", "gpu-2", "gpu-3"]),
        ("n[08-10].rack", ["n08.rack", "n09.rack", "n10.rack"]),
    ],
)
def test_a_bracketed_range_expands_to_one_name_per_number(pattern: str, names: list[str]) -> None:
    assert expand_name_range(pattern) == names


def test_the_sample_file_has_two_cpu_and_two_gpu_nodes_one_tainted() -> None:
    specs = load_node_specs(DEFAULT_NODES_FILE)
    assert [s.name for s in specs] == ["cpu-1", "cpu-2", "gpu-1", "gpu-2"]
    assert [s.capacity.get("nvidia.com/gpu") for s in specs] == [None, None, "8", "8"]
    assert [len(s.taints) for s in specs] == [0, 0, 0, 1]


def test_a_node_object_carries_what_kwok_and_schedulers_look_for() -> None:
    (spec,) = parse("""
        nodes:
          - name: gpu-1
            capacity: {cpu: 64, memory: 512Gi, nvidia.com/gpu: "8"}
            labels: {zone: a}
            taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
    """)
    node = spec.to_api()
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert node["metadata"]["labels"] == {
        "type": "kwok",
        "kubernetes.io/hostname": "gpu-1",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "zone": "a",
    }
    assert node["spec"]["taints"] == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    capacity = {
        "cpu": "64",
        "memory": "512Gi",
        "nvidia.com/gpu": "8",
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }
    assert node["status"] == {"capacity": capacity, "allocatable": capacity}


def test_given_pods_and_ephemeral_storage_override_the_defaults() -> None:
    (spec,) = parse("nodes: [{name: a, capacity: {pods: '8', ephemeral-storage: 1Ti}}]")
    assert spec.full_capacity() == {"pods": "8", "ephemeral-storage": "1Ti"}


def test_a_taint_without_value_has_no_value_key() -> None:
    assert Taint(key="k", effect="NoExecute").to_api() == {"key": "k", "effect": "NoExecute"}


def test_an_empty_file_means_no_nodes() -> None:
    assert parse("") == []
    assert parse("nodes: []") == []


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("- name: a", "single key 'nodes'"),
        ("nodes: [{name: Upper}]", "not a valid node name"),
        ("nodes: [{name: a, lables: {}}]", "unknown keys ['lables']"),
        ("nodes: [{name: a, capacity: {nvidia.com/gpu: yes}}]", "not a string or a number"),
        ("nodes: [{name: a}, {name: 'a'}]", "defined twice"),
        ("nodes: [{name: 'n-[1-2]'}, {name: n-2}]", "defined twice"),
        ("nodes: [{name: 'n-[3-1]'}]", "start is after its end"),
        ("nodes: [{name: 'n-[1-2]-[1-2]'}]", "at most one"),
        ("nodes: [{name: a, taints: [{key: k, effect: Never}]}]", "'effect' must be one of"),
    ],
)
def test_malformed_files_are_refused_with_a_message_naming_the_problem(
    text: str, complaint: str
) -> None:
    with pytest.raises(NodeSpecError, match="nodes") as raised:
        parse(text)
    assert complaint in str(raised.value)
