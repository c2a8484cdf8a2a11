"""NodeState: one node's spec plus the summed requests of the pods counted on it."""

from __future__ import annotations

import pytest

from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.resources import Resources, parse_resource_list
from koordgang.state.node_state import NodeState


def node(cpu: str = "2", memory: str = "4Gi", pods: str = "2") -> NodeInfo:
    return parse_node(
        {
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
        }
    )


def res(**amounts: str) -> Resources:
    return parse_resource_list(dict(amounts))


def test_adding_the_same_pod_twice_counts_it_once() -> None:
    state = NodeState("n1", node())
    state.add("u1", res(cpu="500m"))
    state.add("u1", res(cpu="500m"))
    assert state.requested == {"cpu": 500}
    assert state.pod_count == 1
    assert state.pods == {"u1"}


def test_removing_a_pod_that_is_not_there_changes_nothing() -> None:
    state = NodeState("n1", node())
    state.add("u1", res(cpu="500m"))
    generation = state.generation
    state.remove("u2", res(cpu="500m"))
    assert state.requested == {"cpu": 500}
    assert state.generation == generation


def test_removing_the_last_pod_leaves_no_zero_entries() -> None:
    state = NodeState("n1", node())
    state.add("u1", res(cpu="500m", memory="1Gi"))
    state.add("u2", res(cpu="1"))
    state.remove("u1", res(cpu="500m", memory="1Gi"))
    assert state.requested == {"cpu": 1000}
    state.remove("u2", res(cpu="1"))
    assert state.requested == {}
    assert state.pod_count == 0


def test_every_change_bumps_the_generation() -> None:
    state = NodeState("n1", node())
    seen = [state.generation]
    state.add("u1", res(cpu="1"))
    seen.append(state.generation)
    state.remove("u1", res(cpu="1"))
    seen.append(state.generation)
    assert seen == sorted(set(seen))


@pytest.mark.parametrize(
    ("name", "free"),
    [("cpu", 1250), ("memory", 3 * 1024**3), ("pods", 1), ("nvidia.com/gpu", 0)],
)
def test_free_is_allocatable_minus_requested(name: str, free: int) -> None:
    state = NodeState("n1", node())
    state.add("u1", res(cpu="750m", memory="1Gi"))
    assert state.free(name) == free


def test_a_placeholder_has_no_allocatable() -> None:
    state = NodeState("gone")
    state.add("u1", res(cpu="1"))
    assert state.allocatable("cpu") == 0
    assert state.free("cpu") == -1000
    assert state.is_overcommitted() == ()


@pytest.mark.parametrize(
    ("pods", "over"),
    [
        ([res(cpu="1"), res(cpu="1")], ()),
        ([res(cpu="1"), res(cpu="1001m")], ("cpu",)),
        ([res(memory="5Gi")], ("memory",)),
        ([res(), res(), res()], ("pods",)),
    ],
)
def test_is_overcommitted_names_what_exceeds_allocatable(
    pods: list[Resources], over: tuple[str, ...]
) -> None:
    state = NodeState("n1", node())
    for index, requests in enumerate(pods):
        state.add(f"u{index}", requests)
    assert state.is_overcommitted() == over
