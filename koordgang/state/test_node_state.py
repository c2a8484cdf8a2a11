"""NodeState: one node's spec plus the summed requests of the pods counted on it."""

from __future__ import annotations

import pytest

from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.ports import HostPort
from koordgang.model.resources import Resources, parse_resource_list
from koordgang.state.node_state import NodeState, next_version


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
    version = state.version
    state.remove("u2", res(cpu="500m"))
    assert state.requested == {"cpu": 500}
    assert state.pod_count == 1
    assert state.version == version


def test_adding_a_pod_already_there_keeps_the_version() -> None:
    state = NodeState("n1", node())
    state.add("u1", res(cpu="500m"))
    version = state.version
    state.add("u1", res(cpu="500m"))
    assert state.version == version


def test_removing_the_last_pod_leaves_no_zero_entries() -> None:
    state = NodeState("n1", node())
    state.add("u1", res(cpu="500m", memory="1Gi"))
    state.add("u2", res(cpu="1"))
    state.remove("u1", res(cpu="500m", memory="1Gi"))
    assert state.requested == {"cpu": 1000}
    state.remove("u2", res(cpu="1"))
    assert state.requested == {}
    assert state.pod_count == 0


def test_every_change_gives_a_version_never_used_before_by_any_node() -> None:
    first, second = NodeState("n1", node()), NodeState("n2", node())
    seen = [first.version, second.version]
    first.add("u1", res(cpu="1"))
    seen.append(first.version)
    second.add("u1", res(cpu="1"))
    seen.append(second.version)
    first.remove("u1", res(cpu="1"))
    seen.append(first.version)
    second.touch()
    seen.append(second.version)
    # Back to the usage it had at first, yet at a new version: a version names one state.
    assert first.requested == {}
    assert len(set(seen)) == len(seen)
    assert seen == sorted(seen)


def test_versions_of_nodes_and_next_version_share_one_counter() -> None:
    state = NodeState("n1", node())
    drawn = next_version()
    state.touch()
    assert state.version > drawn
    assert NodeState("n2").version > state.version


WEB = HostPort("TCP", "0.0.0.0", 80)
DNS = HostPort("UDP", "10.0.0.1", 53)


def test_host_ports_are_counted_per_pod_and_dropped_with_the_last_one() -> None:
    state = NodeState("n1", node(pods="10"))
    state.add("u1", res(), (WEB, DNS))
    state.add("u2", res(), (WEB,))
    assert state.ports == {WEB: 2, DNS: 1}

    state.remove("u1", res(), (WEB, DNS))
    assert state.ports == {WEB: 1}
    assert DNS not in state.ports

    state.remove("u2", res(), (WEB,))
    assert state.ports == {}
    assert list(state.ports) == []


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


@pytest.mark.parametrize(
    ("pods", "over"),
    [
        ([res(cpu="1"), res(cpu="1")], ()),
        ([res(cpu="1"), res(cpu="1001m")], ("cpu",)),
        ([res(memory="5Gi")], ("memory",)),
        ([res(), res(), res()], ("pods",)),
    ],
)
def test_free_goes_negative_for_what_exceeds_allocatable(
    pods: list[Resources], over: tuple[str, ...]
) -> None:
    state = NodeState("n1", node())
    for index, requests in enumerate(pods):
        state.add(f"u{index}", requests)
    assert tuple(name for name in ("cpu", "memory", "pods") if state.free(name) < 0) == over
