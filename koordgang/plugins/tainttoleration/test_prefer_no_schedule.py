"""TaintToleration score: untolerated PreferNoSchedule taints make a node less attractive."""

from __future__ import annotations

import random
from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import NormalizeScorePlugin, PreScorePlugin
from koordgang.framework.runner import PodRunner
from koordgang.framework.status import Code
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.noderesources import Fit, ResourceScore
from koordgang.plugins.tainttoleration import TaintToleration
from koordgang.settings import ScoreStrategy
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot


def taint(key: str, value: str = "", effect: str = "PreferNoSchedule") -> dict[str, str]:
    result = {"key": key, "effect": effect}
    if value:
        result["value"] = value
    return result


def node_obj(name: str, taints: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"taints": taints},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


_names = iter(range(10**6))


def pod(
    tolerations: list[dict[str, Any]] | None = None,
    *,
    requests: dict[str, str] | None = None,
    node_name: str = "",
) -> PodInfo:
    name = f"p{next(_names)}"
    spec: dict[str, Any] = {
        "tolerations": tolerations or [],
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


def raw_score(taints: list[dict[str, str]], tolerations: list[dict[str, Any]]) -> int:
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node_obj("n1", taints)))
    snapshot = Snapshot(cache)
    [state] = snapshot.nodes
    return TaintToleration().score(CycleState(), pod(tolerations), state, snapshot)


SPOT = taint("spot", "true")
OLD = taint("old-kernel")


@pytest.mark.parametrize(
    ("taints", "tolerations", "count"),
    [
        ([], [], 0),
        ([SPOT], [], 1),
        ([SPOT, OLD], [], 2),
        # Only PreferNoSchedule taints are counted (the others are the filter's business).
        ([SPOT, taint("gpu", effect="NoSchedule"), taint("x", effect="NoExecute")], [], 1),
        ([SPOT, OLD], [{"key": "spot", "operator": "Exists"}], 1),
        ([SPOT, OLD], [{"key": "spot", "value": "true"}], 1),
        ([SPOT], [{"key": "spot", "value": "false"}], 1),
        # A toleration counts if its effect is PreferNoSchedule or empty ...
        ([SPOT], [{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}], 0),
        # ... not if it names another effect.
        ([SPOT], [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}], 1),
        ([SPOT, OLD], [{"operator": "Exists"}], 0),
        (
            [SPOT, OLD],
            [{"key": "spot", "operator": "Exists"}, {"key": "old-kernel", "operator": "Exists"}],
            0,
        ),
    ],
)
def test_a_node_scores_the_number_of_soft_taints_the_pod_does_not_tolerate(
    taints: list[dict[str, str]], tolerations: list[dict[str, Any]], count: int
) -> None:
    assert raw_score(taints, tolerations) == count


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ({"a": 0, "b": 1, "c": 2}, {"a": 100, "b": 50, "c": 0}),
        ({"a": 1, "b": 3}, {"a": 67, "b": 0}),
        ({"a": 2, "b": 2}, {"a": 0, "b": 0}),
        # No node has an untolerated soft taint: all are equally good.
        ({"a": 0, "b": 0}, {"a": 100, "b": 100}),
        ({}, {}),
    ],
)
def test_normalize_turns_fewer_taints_into_a_higher_score(
    raw: dict[str, int], normalized: dict[str, int]
) -> None:
    scores = dict(raw)
    TaintToleration().normalize(CycleState(), pod(), scores)
    assert scores == normalized


@pytest.mark.parametrize(
    ("tolerations", "code"),
    [
        ([], Code.SUCCESS),
        ([{"key": "spot", "operator": "Exists"}], Code.SUCCESS),
        ([{"operator": "Exists", "effect": "NoSchedule"}], Code.SUCCESS),
        # These tolerate every soft taint of every node: all nodes would score alike.
        ([{"operator": "Exists"}], Code.SKIP),
        ([{"operator": "Exists", "effect": "PreferNoSchedule"}], Code.SKIP),
        ([{"key": "spot", "operator": "Exists"}, {"operator": "Exists"}], Code.SKIP),
    ],
)
def test_pre_score_leaves_out_pods_that_tolerate_every_soft_taint(
    tolerations: list[dict[str, Any]], code: Code
) -> None:
    status = TaintToleration().pre_score(CycleState(), pod(tolerations), Snapshot(SchedulerCache()))
    assert status.code is code


def test_taint_toleration_scores_with_kubes_default_weight_and_normalization() -> None:
    plugin = TaintToleration()
    assert plugin.weight == 3
    assert isinstance(plugin, PreScorePlugin)
    assert isinstance(plugin, NormalizeScorePlugin)


def idle_spot_and_busy_plain() -> SchedulerCache:
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node_obj("idle-spot", [SPOT])))
    cache.upsert_node(parse_node(node_obj("busy-plain", [])))
    cache.upsert_pod(pod(requests={"cpu": "2", "memory": "4Gi"}, node_name="busy-plain"))
    return cache


def runner(*scores: Any) -> PodRunner:
    return PodRunner(
        filters=[TaintToleration(), Fit()],
        pre_scores=[TaintToleration()],
        scores=list(scores),
        rng=random.Random(7),
    )


LEAST = ScoreStrategy.LEAST_ALLOCATED
SMALL = {"cpu": "1", "memory": "2Gi"}
TOLERATE_SPOT = [{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}]


@pytest.mark.parametrize(
    ("scores", "requests", "tolerations", "chosen"),
    [
        # LeastAllocated alone prefers the idle node (75 against 25).
        ((ResourceScore(LEAST),), SMALL, [], "idle-spot"),
        # The soft taint costs it 100 x 3: the busy node wins while the pod fits there.
        ((TaintToleration(), ResourceScore(LEAST)), SMALL, [], "busy-plain"),
        # A soft taint never keeps a pod off: with no room elsewhere, it goes there.
        ((TaintToleration(), ResourceScore(LEAST)), {"cpu": "3"}, [], "idle-spot"),
        # A pod that tolerates the taint sees no difference.
        ((TaintToleration(), ResourceScore(LEAST)), SMALL, TOLERATE_SPOT, "idle-spot"),
        ((TaintToleration(), ResourceScore(LEAST)), SMALL, [{"operator": "Exists"}], "idle-spot"),
    ],
    ids=["resources only", "tainted", "no room elsewhere", "tolerated", "tolerates all"],
)
def test_a_prefer_no_schedule_taint_steers_pods_to_another_node_that_fits(
    scores: tuple[Any, ...],
    requests: dict[str, str],
    tolerations: list[dict[str, Any]],
    chosen: str,
) -> None:
    candidate = pod(tolerations, requests=requests)
    assert runner(*scores).find(candidate, Snapshot(idle_spot_and_busy_plain())).node == chosen
