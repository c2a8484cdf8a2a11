"""Snapshot: reads of a view with placements on top of the cache, kept out of it until committed.

Forks, removals and staleness are in ``test_snapshot_what_if.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.model.ports import HostPort
from koordgang.model.resources import Resources
from koordgang.state.cache import SchedulerCache
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Placement, Snapshot, StaleSnapshotError

GPU = "nvidia.com/gpu"


def node(
    name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "3", gpu: str = "0"
) -> NodeInfo:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpu != "0":
        allocatable[GPU] = gpu
    return parse_node(
        {
            "metadata": {"name": name},
            "status": {
                "allocatable": allocatable,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def pod(
    name: str,
    node_name: str = "",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    gpu: str | None = None,
) -> PodInfo:
    requests = {
        key: value
        for key, value in (("cpu", cpu), ("memory", memory), (GPU, gpu))
        if value is not None
    }
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"},
        }
    )


def res(cpu: str | None = None, memory: str | None = None, gpu: str | None = None) -> Resources:
    return pod("probe", cpu=cpu, memory=memory, gpu=gpu).requests


def setup() -> tuple[SchedulerCache, Snapshot, NodeState, NodeState]:
    cache = SchedulerCache()
    cache.upsert_node(node("a"))
    cache.upsert_node(node("b", gpu="4"))
    cache.upsert_pod(pod("running", "a", cpu="1", memory="1Gi"))
    snapshot = Snapshot(cache)
    a, b = snapshot.nodes
    return cache, snapshot, a, b


def test_a_snapshot_lists_the_existing_nodes_of_the_cache() -> None:
    cache, snapshot, a, b = setup()
    assert [n.name for n in snapshot.nodes] == ["a", "b"]
    assert (a, b) == (cache.node("a"), cache.node("b"))
    assert snapshot.placements == []
    assert snapshot.removals == []
    assert list(snapshot.touched()) == []
    assert snapshot.depth == 0


@pytest.mark.parametrize(
    ("placed", "name", "free_on_a"),
    [
        ((), "cpu", 3000),
        ((), "memory", 7 * 1024**3),
        ((), "pods", 2),
        ((pod("x", cpu="500m"),), "cpu", 2500),
        ((pod("x", cpu="500m"), pod("y", cpu="1")), "cpu", 1500),
        ((pod("x", cpu="500m"), pod("y", cpu="1")), "pods", 0),
        ((pod("x", memory="1Gi"),), "memory", 6 * 1024**3),
        ((pod("x", memory="1Gi"),), "cpu", 3000),
        # A pod that requests nothing still takes a pod slot.
        ((pod("x"),), "pods", 1),
    ],
)
def test_free_subtracts_bound_pods_and_tentative_placements(
    placed: tuple[PodInfo, ...], name: str, free_on_a: int
) -> None:
    _, snapshot, a, _ = setup()
    for p in placed:
        snapshot.add(p, a)
    assert snapshot.free(a, name) == free_on_a


def test_placements_on_one_node_do_not_change_another() -> None:
    _, snapshot, a, b = setup()
    snapshot.add(pod("x", cpu="2", gpu="1"), a)
    assert snapshot.free(b, "cpu") == 4000
    assert snapshot.free(b, GPU) == 4
    assert snapshot.used(b, "cpu") == 0
    assert snapshot.insufficient(b, res(cpu="4", gpu="4")) == ()


@pytest.mark.parametrize(
    ("placed", "requests", "short"),
    [
        ((), res(cpu="3"), ()),
        ((), res(cpu="3001m"), ("cpu",)),
        ((), res(cpu="1", memory="7Gi"), ()),
        ((), res(cpu="4", memory="8Gi"), ("cpu", "memory")),
        ((), res(gpu="1"), (GPU,)),
        ((), Resources.EMPTY, ()),
        ((pod("x", cpu="2"),), res(cpu="1"), ()),
        ((pod("x", cpu="2"),), res(cpu="1001m"), ("cpu",)),
        ((pod("x", memory="7Gi"),), res(memory="1"), ("memory",)),
        # pods allocatable is 3: one bound, one placed, one more fits; with two placed, none.
        ((pod("x"),), Resources.EMPTY, ()),
        ((pod("x"), pod("y")), Resources.EMPTY, ("pods",)),
        ((pod("x"), pod("y")), res(cpu="4"), ("cpu", "pods")),
    ],
)
def test_insufficient_names_what_is_short_including_tentative_placements(
    placed: tuple[PodInfo, ...], requests: Resources, short: tuple[str, ...]
) -> None:
    _, snapshot, a, _ = setup()
    for p in placed:
        snapshot.add(p, a)
    assert snapshot.insufficient(a, requests) == short


def test_used_adds_tentative_placements_to_the_bound_requests() -> None:
    _, snapshot, a, b = setup()
    snapshot.add(pod("x", cpu="250m", memory="512Mi"), a)
    snapshot.add(pod("y", cpu="250m", gpu="2"), b)
    assert snapshot.used(a, "cpu") == 1250
    assert snapshot.used(a, "memory") == 1536 * 1024**2
    assert snapshot.used(b, "cpu") == 250
    assert snapshot.used(b, GPU) == 2
    assert snapshot.used(b, "memory") == 0


def test_placing_leaves_the_cache_untouched() -> None:
    cache, snapshot, a, _ = setup()
    version, position = a.version, cache.change_position
    snapshot.add(pod("x", cpu="1"), a)
    assert a.requested == {"cpu": 1000, "memory": 1024**3}
    assert a.pod_count == 1
    assert (a.version, cache.change_position) == (version, position)
    assert cache.node_of("uid-x") is None
    assert cache.pod("uid-x") is None
    assert snapshot.node_of("uid-x") == "a"
    assert snapshot.placements == [Placement(pod("x", cpu="1"), "a")]


def test_a_dropped_snapshot_leaves_no_trace_and_a_new_one_sees_the_cache() -> None:
    cache, snapshot, a, b = setup()
    snapshot.add(pod("x", cpu="1"), a)
    snapshot.add(pod("y", cpu="1"), b)
    del snapshot

    fresh = Snapshot(cache)

    assert fresh.placements == []
    assert fresh.used(a, "cpu") == 1000
    assert fresh.free(a, "pods") == 2
    assert fresh.free(b, "cpu") == 4000
    assert a.requested == {"cpu": 1000, "memory": 1024**3}
    assert b.requested == {}
    assert not cache.is_assumed("uid-x")
    assert not cache.is_assumed("uid-y")


def test_commit_turns_placements_into_assumed_pods_in_order() -> None:
    cache, snapshot, a, b = setup()
    x, y, z = pod("x", cpu="1"), pod("y", cpu="500m"), pod("z", gpu="1")
    snapshot.add(x, a)
    snapshot.add(y, b)
    snapshot.add(z, b)

    committed = snapshot.commit()

    assert committed == [Placement(x, "a"), Placement(y, "b"), Placement(z, "b")]
    assert [cache.is_assumed(p.uid) for p in (x, y, z)] == [True, True, True]
    assert [cache.node_of(p.uid) for p in (x, y, z)] == ["a", "b", "b"]
    assert a.requested == {"cpu": 2000, "memory": 1024**3}
    assert b.requested == {"cpu": 500, GPU: 1}
    assert (a.pod_count, b.pod_count) == (2, 2)
    # Counted once, in the cache: a new snapshot sees exactly the cache.
    fresh = Snapshot(cache)
    assert fresh.used(a, "cpu") == 2000
    assert fresh.free(b, "pods") == 1


@pytest.mark.parametrize(
    "use",
    [
        lambda s, a: s.add(pod("late"), a),
        lambda s, a: s.remove(pod("running", "a")),
        lambda s, a: s.fork(),
        lambda s, a: s.commit(),
        lambda s, a: s.check(),
    ],
    ids=["add", "remove", "fork", "commit", "check"],
)
def test_a_committed_snapshot_is_finished(use: Any) -> None:
    _, snapshot, a, _ = setup()
    snapshot.add(pod("x", cpu="1"), a)
    snapshot.commit()

    with pytest.raises(StaleSnapshotError, match="committed"):
        use(snapshot, a)


def test_commit_of_nothing_changes_nothing() -> None:
    cache, snapshot, a, _ = setup()
    position = cache.change_position
    assert snapshot.commit() == []
    assert a.requested == {"cpu": 1000, "memory": 1024**3}
    assert cache.change_position == position


def test_a_placeholder_node_is_not_offered_to_a_cycle() -> None:
    cache = SchedulerCache()
    cache.upsert_node(node("a"))
    cache.upsert_pod(pod("p", "gone", cpu="1"))
    assert cache.node("gone") is not None
    snapshot = Snapshot(cache)
    assert [n.name for n in snapshot.nodes] == ["a"]
    assert snapshot.node("gone") is None
    assert snapshot.node("a") is cache.node("a")
    assert snapshot.node("never-seen") is None


def test_pod_count_and_pods_on_include_placements() -> None:
    _, snapshot, a, b = setup()
    x = pod("x", cpu="1")
    snapshot.add(x, a)
    assert (snapshot.pod_count(a), snapshot.pod_count(b)) == (2, 0)
    assert sorted(p.name for p in snapshot.pods_on(a)) == ["running", "x"]
    assert list(snapshot.pods_on(b)) == []


def web(name: str, port: int, node_name: str = "") -> PodInfo:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "ports": [{"containerPort": port, "hostPort": port}]}]
    }
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"},
        }
    )


def test_ports_in_use_add_placements_to_the_nodes_ports_and_drop_freed_ones() -> None:
    cache = SchedulerCache()
    cache.upsert_node(node("a", pods="10"))
    cache.upsert_pod(web("bound", 80, "a"))
    snapshot = Snapshot(cache)
    [a] = snapshot.nodes
    http, alt = HostPort("TCP", "0.0.0.0", 80), HostPort("TCP", "0.0.0.0", 8080)
    assert snapshot.ports_in_use(a) == {http: 1}

    snapshot.add(web("placed", 8080), a)
    assert snapshot.ports_in_use(a) == {http: 1, alt: 1}

    snapshot.remove(web("bound", 80, "a"))
    assert snapshot.ports_in_use(a) == {alt: 1}
    assert a.ports == {http: 1}  # the cache is untouched
