"""NodePorts: a host port already taken on a node keeps pods that want it off that node."""

from __future__ import annotations

import random
from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.runner import PodRunner
from koordgang.framework.status import Code
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.nodeports import NodePorts
from koordgang.state.cache import SchedulerCache
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

REASON = "node(s) didn't have free ports for the requested pod ports"


def port(number: int, protocol: str | None = None, host_ip: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"containerPort": number, "hostPort": number}
    if protocol is not None:
        result["protocol"] = protocol
    if host_ip is not None:
        result["hostIP"] = host_ip
    return result


def pod(
    *ports: dict[str, Any], name: str = "p", node_name: str = "", phase: str = "Pending"
) -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c", "ports": list(ports)}]}
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": spec,
            "status": {"phase": phase},
        }
    )


def node_dict() -> dict[str, Any]:
    return {
        "metadata": {"name": "n1"},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def cluster(*bound: PodInfo) -> SchedulerCache:
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node_dict()))
    for p in bound:
        cache.upsert_pod(p)
    return cache


def one_node_of(cache: SchedulerCache) -> tuple[NodeState, Snapshot]:
    snapshot = Snapshot(cache)
    [state] = snapshot.nodes
    return state, snapshot


def one_node(*bound: PodInfo) -> tuple[NodeState, Snapshot]:
    return one_node_of(cluster(*bound))


def fits(candidate: PodInfo, state: NodeState, snapshot: Snapshot) -> bool:
    status = NodePorts().filter(CycleState(), candidate, state, snapshot)
    if status.is_success:
        return True
    # Preempting the pod that holds the port would free it: resolvable.
    assert status.code is Code.UNSCHEDULABLE
    assert status.reasons == (REASON,)
    assert status.plugin == "NodePorts"
    return False


def running(*ports: dict[str, Any]) -> PodInfo:
    return pod(*ports, name="other", node_name="n1", phase="Running")


@pytest.mark.parametrize(
    ("wanted", "used", "free"),
    [
        ([port(8080)], [port(8080)], False),
        ([port(8080)], [port(8081)], True),
        # The protocol is part of the port: TCP and UDP 8080 are two ports.
        ([port(8080, "UDP")], [port(8080, "TCP")], True),
        ([port(8080, "SCTP")], [port(8080)], True),
        ([port(8080, "UDP")], [port(8080, "UDP")], False),
        # A missing protocol is TCP.
        ([port(8080, "TCP")], [port(8080)], False),
        # 0.0.0.0 (also what a missing hostIP means) takes the port on every address.
        ([port(8080, host_ip="10.0.0.1")], [port(8080)], False),
        ([port(8080)], [port(8080, host_ip="10.0.0.1")], False),
        ([port(8080, host_ip="0.0.0.0")], [port(8080, host_ip="10.0.0.1")], False),
        ([port(8080, host_ip="10.0.0.1")], [port(8080, host_ip="10.0.0.1")], False),
        # Two specific addresses do not collide.
        ([port(8080, host_ip="10.0.0.1")], [port(8080, host_ip="10.0.0.2")], True),
        # ... unless the protocol differs anyway, even on 0.0.0.0.
        ([port(8080, "UDP", "10.0.0.1")], [port(8080, "TCP")], True),
        # One taken port among several is enough to refuse the node.
        ([port(80), port(443), port(8080)], [port(9090), port(443)], False),
        ([port(80), port(443)], [port(8080), port(9090)], True),
        # A pod with no ports, or a node with none in use, always fits.
        ([], [port(8080)], True),
        ([port(8080)], [], True),
    ],
)
def test_a_host_port_in_use_on_the_node_refuses_it(
    wanted: list[dict[str, Any]], used: list[dict[str, Any]], free: bool
) -> None:
    state, snapshot = one_node(running(*used))
    assert fits(pod(*wanted), state, snapshot) is free


def test_a_pod_placed_in_the_snapshot_takes_its_port() -> None:
    state, snapshot = one_node()
    candidate = pod(port(8080))
    assert fits(candidate, state, snapshot)
    snapshot.add(pod(port(8080), name="placed"), state)
    assert not fits(candidate, state, snapshot)
    # The cache is untouched: another view of it still sees the port free.
    assert fits(candidate, state, Snapshot(snapshot.cache))


def test_an_assumed_pod_takes_its_port_until_it_is_forgotten() -> None:
    cache = cluster()
    cache.assume(pod(port(8080), name="assumed"), "n1")
    state, snapshot = one_node_of(cache)
    assert not fits(pod(port(8080)), state, snapshot)
    cache.forget("assumed")
    state, snapshot = one_node_of(cache)
    assert fits(pod(port(8080)), state, snapshot)


def test_a_pod_removed_in_the_snapshot_frees_its_port() -> None:
    holder = running(port(8080))
    state, snapshot = one_node(holder)
    assert not fits(pod(port(8080)), state, snapshot)
    snapshot.remove(holder)
    assert fits(pod(port(8080)), state, snapshot)


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_holds_no_port(phase: str) -> None:
    state, snapshot = one_node(pod(port(8080), name="done", node_name="n1", phase=phase))
    assert fits(pod(port(8080)), state, snapshot)


@pytest.mark.parametrize(
    ("ports", "code"),
    [((), Code.SKIP), ((port(8080),), Code.SUCCESS)],
    ids=["no host port", "a host port"],
)
def test_pre_filter_leaves_the_filter_out_for_pods_without_host_ports(
    ports: tuple[dict[str, Any], ...], code: Code
) -> None:
    _, snapshot = one_node()
    assert NodePorts().pre_filter(CycleState(), pod(*ports), snapshot).code is code


def test_a_container_port_without_a_host_port_takes_nothing_on_the_node() -> None:
    state, snapshot = one_node(running({"containerPort": 8080}))
    assert fits(pod(port(8080)), state, snapshot)
    assert NodePorts().pre_filter(CycleState(), pod({"containerPort": 80}), snapshot).code is (
        Code.SKIP
    )


def test_node_ports_depends_on_what_runs_on_the_node() -> None:
    assert NodePorts.scope is Scope.NODE
    assert NodePorts.name == "NodePorts"


def two_nodes() -> SchedulerCache:
    cache = cluster()
    cache.upsert_node(parse_node({**node_dict(), "metadata": {"name": "n2"}}))
    return cache


def test_pods_that_want_one_port_are_spread_one_per_node_then_refused() -> None:
    plugin = NodePorts()
    runner = PodRunner(pre_filters=[plugin], filters=[plugin], rng=random.Random(1))
    snapshot = Snapshot(two_nodes())
    first = runner.place(pod(port(8080), name="a"), snapshot)
    second = runner.place(pod(port(8080), name="b"), snapshot)
    assert {first.node, second.node} == {"n1", "n2"}
    # Another port, or another protocol, still fits; the same port fits nowhere.
    assert runner.find(pod(port(8081), name="c"), snapshot).node is not None
    assert runner.find(pod(port(8080, "UDP"), name="d"), snapshot).node is not None
    third = runner.find(pod(port(8080), name="e"), snapshot)
    assert third.node is None
    assert third.message == f"0/2 nodes are available: 2 {REASON}."
