"""NodeAffinity score: preferred node affinity, summed per node and normalized to 0..100."""

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
from koordgang.plugins.nodeaffinity import NodeAffinity
from koordgang.plugins.noderesources import Fit, ResourceScore
from koordgang.settings import ScoreStrategy
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot


def node_obj(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def prefer(weight: int, *expressions: dict[str, Any], **fields: str) -> dict[str, Any]:
    preference: dict[str, Any] = {}
    if expressions:
        preference["matchExpressions"] = list(expressions)
    if fields:
        preference["matchFields"] = [
            {"key": key.replace("_", "."), "operator": "In", "values": [value]}
            for key, value in fields.items()
        ]
    return {"weight": weight, "preference": preference}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    item: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        item["values"] = list(values)
    return item


_names = iter(range(10**6))


def pod(
    *preferred: dict[str, Any], requests: dict[str, str] | None = None, node_name: str = ""
) -> PodInfo:
    name = f"p{next(_names)}"
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": requests or {}}}],
    }
    if preferred:
        spec["affinity"] = {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": list(preferred)}
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


def raw_score(candidate: PodInfo, name: str, labels: dict[str, str]) -> int:
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node_obj(name, labels)))
    snapshot = Snapshot(cache)
    [state] = snapshot.nodes
    return NodeAffinity().score(CycleState(), candidate, state, snapshot)


ZONE_A = {"zone": "a", "gpu": "a100"}
TERMS = (
    prefer(10, expr("zone", "In", "a")),
    prefer(5, expr("gpu", "Exists")),
    prefer(1, expr("disk", "In", "ssd")),
)


@pytest.mark.parametrize(
    ("candidate", "labels", "expected"),
    [
        # The weights of the matching terms add up.
        (pod(*TERMS), ZONE_A, 15),
        (pod(*TERMS), {"zone": "a", "disk": "ssd"}, 11),
        (pod(*TERMS), {"zone": "b"}, 0),
        (pod(*TERMS), {}, 0),
        (pod(*TERMS), {**ZONE_A, "disk": "ssd"}, 16),
        # Every expression of a term must hold for its weight to count.
        (pod(prefer(7, expr("zone", "In", "a"), expr("disk", "In", "ssd"))), ZONE_A, 0),
        (pod(prefer(7, expr("zone", "In", "a"), expr("gpu", "In", "a100"))), ZONE_A, 7),
        # NotIn and DoesNotExist hold on a node without the label.
        (pod(prefer(3, expr("disk", "NotIn", "hdd"))), ZONE_A, 3),
        (pod(prefer(3, expr("disk", "DoesNotExist"))), ZONE_A, 3),
        # matchFields select by node name.
        (pod(prefer(4, metadata_name="node-a")), ZONE_A, 4),
        (pod(prefer(4, metadata_name="node-b")), ZONE_A, 0),
        # An empty preference matches no node.
        (pod(prefer(9)), ZONE_A, 0),
        (pod(), ZONE_A, 0),
    ],
)
def test_a_node_scores_the_weights_of_the_preferred_terms_it_matches(
    candidate: PodInfo, labels: dict[str, str], expected: int
) -> None:
    assert raw_score(candidate, "node-a", labels) == expected


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ({"a": 15, "b": 0, "c": 11}, {"a": 100, "b": 0, "c": 73}),
        ({"a": 1, "b": 3}, {"a": 33, "b": 100}),
        ({"a": 100, "b": 100}, {"a": 100, "b": 100}),
        # No node matches any term: all stay 0.
        ({"a": 0, "b": 0}, {"a": 0, "b": 0}),
        ({}, {}),
    ],
)
def test_normalize_gives_the_best_node_100_and_the_others_their_share(
    raw: dict[str, int], normalized: dict[str, int]
) -> None:
    scores = dict(raw)
    NodeAffinity().normalize(CycleState(), pod(*TERMS), scores)
    assert scores == normalized


@pytest.mark.parametrize(
    ("candidate", "code"),
    [(pod(), Code.SKIP), (pod(prefer(9)), Code.SUCCESS), (pod(*TERMS), Code.SUCCESS)],
    ids=["no preferences", "an empty preference", "preferences"],
)
def test_pre_score_leaves_out_pods_without_preferences(candidate: PodInfo, code: Code) -> None:
    status = NodeAffinity().pre_score(CycleState(), candidate, Snapshot(SchedulerCache()))
    assert status.code is code


def test_node_affinity_scores_with_kubes_default_weight_and_normalization() -> None:
    plugin = NodeAffinity()
    assert plugin.weight == 2
    assert isinstance(plugin, PreScorePlugin)
    assert isinstance(plugin, NormalizeScorePlugin)


def runner(*scores: Any) -> PodRunner:
    return PodRunner(
        pre_filters=[],
        filters=[NodeAffinity(), Fit()],
        pre_scores=[NodeAffinity()],
        scores=list(scores),
        rng=random.Random(7),
    )


LEAST = ScoreStrategy.LEAST_ALLOCATED
SSD = prefer(1, expr("disk", "In", "ssd"))


def busy_ssd_and_idle_hdd() -> SchedulerCache:
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node_obj("busy-ssd", {"disk": "ssd"})))
    cache.upsert_node(parse_node(node_obj("idle-hdd", {"disk": "hdd"})))
    cache.upsert_pod(pod(requests={"cpu": "3", "memory": "6Gi"}, node_name="busy-ssd"))
    return cache


def test_the_runner_weighs_normalized_preferences_twice() -> None:
    cache = busy_ssd_and_idle_hdd()
    candidate = pod(SSD, prefer(3, expr("disk", "Exists")))
    verdict = runner(NodeAffinity()).static_verdict(candidate, Snapshot(cache))
    # Raw 4 and 3, normalized 100 and 75, weighed 2.
    assert verdict.scores == {"busy-ssd": 200, "idle-hdd": 150}


@pytest.mark.parametrize(
    ("scores", "preferred", "chosen"),
    [
        # LeastAllocated alone: the busy node is full after placing (0), the idle one 75.
        ((ResourceScore(LEAST),), (SSD,), "idle-hdd"),
        # A preference of any weight counts 100 x 2 on the preferred node: it wins over 75.
        ((NodeAffinity(), ResourceScore(LEAST)), (SSD,), "busy-ssd"),
        # Without preferences, NodeAffinity is left out and resources decide.
        ((NodeAffinity(), ResourceScore(LEAST)), (), "idle-hdd"),
    ],
    ids=["resources only", "preferred affinity", "no preference"],
)
def test_preferred_node_affinity_beats_least_allocated(
    scores: tuple[Any, ...], preferred: tuple[dict[str, Any], ...], chosen: str
) -> None:
    candidate = pod(*preferred, requests={"cpu": "1", "memory": "2Gi"})
    assert runner(*scores).find(candidate, Snapshot(busy_ssd_and_idle_hdd())).node == chosen


def test_a_preferred_node_that_does_not_fit_is_passed_over() -> None:
    candidate = pod(SSD, requests={"cpu": "2"})
    result = runner(NodeAffinity(), ResourceScore(LEAST)).find(
        candidate, Snapshot(busy_ssd_and_idle_hdd())
    )
    assert result.node == "idle-hdd"
