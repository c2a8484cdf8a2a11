"""ResourceScore: LeastAllocated spreads, MostAllocated packs; both score after placing the pod."""

from __future__ import annotations

import random
from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.noderesources import Fit, ResourceScore
from koordgang.plugins.profile import default_framework
from koordgang.settings import ScoreStrategy, Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

GPU = "nvidia.com/gpu"
LEAST = ScoreStrategy.LEAST_ALLOCATED
MOST = ScoreStrategy.MOST_ALLOCATED


def node_obj(name: str = "n1", allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {
            "allocatable": allocatable or {"cpu": "4", "memory": "8Gi", "pods": "110", GPU: "8"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


_counter = iter(range(10**6))


def pod(requests: dict[str, str] | None = None, node_name: str = "") -> PodInfo:
    name = f"p{next(_counter)}"
    spec: dict[str, Any] = {
        "schedulerName": "koord-scheduler",
        "containers": [{"name": "c", "resources": {"requests": requests or {}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"},
        }
    )


def one_node(
    used: dict[str, str] | None = None, allocatable: dict[str, str] | None = None
) -> tuple[NodeState, Snapshot]:
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node_obj("n1", allocatable)))
    if used:
        cache.upsert_pod(pod(used, node_name="n1"))
    snapshot = Snapshot(cache)
    [state] = snapshot.nodes
    return state, snapshot


def score(
    strategy: ScoreStrategy,
    requests: dict[str, str] | None,
    used: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
) -> int:
    state, snapshot = one_node(used, allocatable)
    return ResourceScore(strategy).score(CycleState(), pod(requests), state, snapshot)


CPU1_MEM2 = {"cpu": "1", "memory": "2Gi"}


@pytest.mark.parametrize(
    ("requests", "used", "least", "most"),
    [
        # Node: 4 cpu, 8Gi, 8 GPUs. cpu 1/4 and memory 2/8 after placing: 75 free, 25 used.
        (CPU1_MEM2, None, 75, 25),
        # cpu 3/4 and memory 6/8 after placing.
        (CPU1_MEM2, {"cpu": "2", "memory": "4Gi"}, 25, 75),
        # cpu 3/4 (25 free, 75 used), memory 2/8 (75 free, 25 used): the average.
        (CPU1_MEM2, {"cpu": "2"}, 50, 50),
        # A full node: cpu is capped at allocatable (0 free, 100 used).
        (CPU1_MEM2, {"cpu": "4"}, (0 + 75) // 2, (100 + 25) // 2),
        # A pod that requests nothing counts as 100m cpu and 200Mi memory:
        # cpu 3900/4000 free -> 97, memory (8192-200)/8192 free -> 97; used 2 and 2.
        (None, None, 97, 2),
        # Only memory defaulted: cpu 75 free, memory 97 free.
        ({"cpu": "1"}, None, (75 + 97) // 2, (25 + 2) // 2),
        # Only cpu defaulted: cpu 97 free, memory 75 free.
        ({"memory": "2Gi"}, None, (97 + 75) // 2, (2 + 25) // 2),
        # An extended resource the pod asks for is scored too: GPUs 6/8 after placing.
        ({**CPU1_MEM2, GPU: "2"}, {GPU: "4"}, (75 + 75 + 25) // 3, (25 + 25 + 75) // 3),
        ({**CPU1_MEM2, GPU: "8"}, None, (75 + 75 + 0) // 3, (25 + 25 + 100) // 3),
        # Resources the pod does not ask for are not scored, whatever their usage.
        (CPU1_MEM2, {GPU: "8"}, 75, 25),
        # Ephemeral storage is not scored.
        ({**CPU1_MEM2, "ephemeral-storage": "10Gi"}, None, 75, 25),
    ],
)
def test_resource_scores_by_strategy(
    requests: dict[str, str] | None, used: dict[str, str] | None, least: int, most: int
) -> None:
    assert score(LEAST, requests, used) == least
    assert score(MOST, requests, used) == most


def test_a_requested_resource_the_node_lacks_is_left_out_of_the_average() -> None:
    cpu_only = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert score(LEAST, {**CPU1_MEM2, GPU: "1"}, allocatable=cpu_only) == 75
    assert score(MOST, {**CPU1_MEM2, GPU: "1"}, allocatable=cpu_only) == 25


def test_a_node_without_cpu_or_memory_scores_zero() -> None:
    assert score(LEAST, CPU1_MEM2, allocatable={"pods": "110"}) == 0


def test_tentative_placements_count_as_used() -> None:
    state, snapshot = one_node()
    what_if = snapshot.fork()
    placed = pod({"cpu": "2", "memory": "4Gi"})
    what_if.add(placed, state)
    scorer = ResourceScore(LEAST)
    assert scorer.score(CycleState(), pod(CPU1_MEM2), state, what_if) == 25
    # The snapshot under the what-if is untouched; taking the pod away again frees its room.
    assert scorer.score(CycleState(), pod(CPU1_MEM2), state, snapshot) == 75
    what_if.remove(placed)
    assert scorer.score(CycleState(), pod(CPU1_MEM2), state, what_if) == 75


def test_a_pod_removed_from_a_node_in_the_snapshot_frees_its_room_for_scoring() -> None:
    state, snapshot = one_node(used={"cpu": "2", "memory": "4Gi"})
    [running] = [p for p in snapshot.pods_on(state)]
    scorer = ResourceScore(LEAST)
    assert scorer.score(CycleState(), pod(CPU1_MEM2), state, snapshot) == 25

    snapshot.remove(running)

    assert scorer.score(CycleState(), pod(CPU1_MEM2), state, snapshot) == 75


def test_resource_scoring_depends_on_what_runs_on_the_node() -> None:
    assert ResourceScore.scope is Scope.NODE
    assert ResourceScore(LEAST).name == "NodeResourcesScore"


def test_a_node_that_is_gone_scores_zero() -> None:
    cache = SchedulerCache()
    cache.upsert_pod(pod(CPU1_MEM2, node_name="gone"))
    state = cache.node("gone")
    assert state is not None
    assert ResourceScore(MOST).score(CycleState(), pod(CPU1_MEM2), state, Snapshot(cache)) == 0


def test_weight_defaults_to_one() -> None:
    assert ResourceScore(LEAST).weight == 1
    assert ResourceScore(MOST, weight=3).weight == 3


def busy_and_idle_cluster() -> SchedulerCache:
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node_obj("busy")))
    cache.upsert_node(parse_node(node_obj("idle")))
    cache.upsert_node(parse_node(node_obj("half")))
    cache.upsert_pod(pod({"cpu": "3", "memory": "6Gi"}, node_name="busy"))
    cache.upsert_pod(pod({"cpu": "2", "memory": "4Gi"}, node_name="half"))
    return cache


@pytest.mark.parametrize(("strategy", "chosen"), [(LEAST, "idle"), (MOST, "busy")])
def test_least_allocated_prefers_the_emptier_node_and_most_allocated_the_fuller(
    strategy: ScoreStrategy, chosen: str
) -> None:
    cache = busy_and_idle_cluster()
    fw = default_framework(
        Settings(score_strategy=strategy),
        GangRegistry(600.0, resolve=Resolve(GANG_APIS)),
        rng=random.Random(3),
    )
    result = fw.pods.find(pod(CPU1_MEM2), Snapshot(cache))
    assert result.node == chosen


def test_most_allocated_skips_the_fullest_node_when_the_pod_does_not_fit_there() -> None:
    cache = busy_and_idle_cluster()
    fw = default_framework(
        Settings(score_strategy=MOST),
        GangRegistry(600.0, resolve=Resolve(GANG_APIS)),
        rng=random.Random(3),
    )
    result = fw.pods.find(pod({"cpu": "2"}), Snapshot(cache))
    assert result.node == "half"
    assert any(isinstance(f, Fit) for f in fw.pods.node_filters)


def test_most_allocated_packs_a_gang_onto_one_node_before_the_next() -> None:
    cache = SchedulerCache()
    for name in ("a", "b"):
        cache.upsert_node(parse_node(node_obj(name)))
    fw = default_framework(
        Settings(score_strategy=MOST),
        GangRegistry(600.0, resolve=Resolve(GANG_APIS)),
        rng=random.Random(3),
    )
    snapshot = Snapshot(cache)
    chosen = []
    for _ in range(6):
        p = pod({"cpu": "1", "memory": "1Gi"})
        result = fw.placer.place(p, snapshot)
        assert result.node is not None
        assert snapshot.node_of(p.uid) == result.node
        chosen.append(result.node)
    first = chosen[0]
    assert chosen[:4] == [first] * 4
    assert set(chosen[4:]) == {"b" if first == "a" else "a"}


def test_least_allocated_spreads_a_gang_across_nodes() -> None:
    cache = SchedulerCache()
    for name in ("a", "b", "c"):
        cache.upsert_node(parse_node(node_obj(name)))
    fw = default_framework(
        Settings(score_strategy=LEAST),
        GangRegistry(600.0, resolve=Resolve(GANG_APIS)),
        rng=random.Random(3),
    )
    snapshot = Snapshot(cache)
    chosen = []
    for _ in range(6):
        p = pod({"cpu": "1", "memory": "1Gi"})
        result = fw.placer.place(p, snapshot)
        assert result.node is not None
        assert snapshot.node_of(p.uid) == result.node
        chosen.append(result.node)
    assert sorted(chosen) == ["a", "a", "b", "b", "c", "c"]
