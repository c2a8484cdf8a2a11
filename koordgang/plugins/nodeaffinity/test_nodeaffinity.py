"""NodeAffinity filter: nodeSelector and required node affinity, by label (and node name)."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.status import Code
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.nodeaffinity import NodeAffinity
from koordgang.state.cache import SchedulerCache
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

REASON = "node(s) didn't match Pod's node affinity/selector"


def node_state(name: str = "node-a", **labels: str) -> tuple[NodeState, Snapshot]:
    cache = SchedulerCache()
    cache.upsert_node(
        parse_node(
            {
                "metadata": {"name": name, "labels": dict(labels)},
                "status": {
                    "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    )
    state = cache.node(name)
    assert state is not None
    return state, Snapshot(cache)


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    item: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        item["values"] = list(values)
    return item


def pod(
    selector: dict[str, str] | None = None, terms: list[dict[str, Any]] | None = None
) -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if selector is not None:
        spec["nodeSelector"] = selector
    if terms is not None:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }
    return parse_pod({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": spec})


ZONE_A = {"topology.kubernetes.io/zone": "a", "gpu-count": "4", "gpu-model": "V100"}


@pytest.mark.parametrize(
    ("p", "labels", "fits"),
    [
        (pod(), {}, True),
        (pod(), ZONE_A, True),
        (pod(selector={}), {}, True),
        # nodeSelector: every pair must be present with that value.
        (pod(selector={"topology.kubernetes.io/zone": "a"}), ZONE_A, True),
        (pod(selector={"topology.kubernetes.io/zone": "b"}), ZONE_A, False),
        (pod(selector={"topology.kubernetes.io/zone": "a", "gpu-model": "P100"}), ZONE_A, False),
        (pod(selector={"disk": "ssd"}), ZONE_A, False),
        (pod(selector={"disk": ""}), ZONE_A, False),
        # Required affinity, one term.
        (
            pod(terms=[{"matchExpressions": [expr("gpu-model", "In", "V100", "A100")]}]),
            ZONE_A,
            True,
        ),
        (pod(terms=[{"matchExpressions": [expr("gpu-model", "In", "P100")]}]), ZONE_A, False),
        (pod(terms=[{"matchExpressions": [expr("gpu-model", "NotIn", "P100")]}]), ZONE_A, True),
        (pod(terms=[{"matchExpressions": [expr("gpu-model", "NotIn", "V100")]}]), ZONE_A, False),
        (pod(terms=[{"matchExpressions": [expr("disk", "NotIn", "hdd")]}]), ZONE_A, True),
        (pod(terms=[{"matchExpressions": [expr("gpu-model", "Exists")]}]), ZONE_A, True),
        (pod(terms=[{"matchExpressions": [expr("disk", "Exists")]}]), ZONE_A, False),
        (pod(terms=[{"matchExpressions": [expr("disk", "DoesNotExist")]}]), ZONE_A, True),
        (pod(terms=[{"matchExpressions": [expr("gpu-count", "Gt", "3")]}]), ZONE_A, True),
        (pod(terms=[{"matchExpressions": [expr("gpu-count", "Gt", "4")]}]), ZONE_A, False),
        (pod(terms=[{"matchExpressions": [expr("gpu-count", "Lt", "5")]}]), ZONE_A, True),
        (pod(terms=[{"matchExpressions": [expr("gpu-model", "Gt", "1")]}]), ZONE_A, False),
        # All expressions of a term must hold.
        (
            pod(
                terms=[
                    {
                        "matchExpressions": [
                            expr("gpu-model", "In", "V100"),
                            expr("topology.kubernetes.io/zone", "In", "b"),
                        ]
                    }
                ]
            ),
            ZONE_A,
            False,
        ),
        # Any term may match.
        (
            pod(
                terms=[
                    {"matchExpressions": [expr("gpu-model", "In", "P100")]},
                    {"matchExpressions": [expr("topology.kubernetes.io/zone", "In", "a")]},
                ]
            ),
            ZONE_A,
            True,
        ),
        # matchFields selects by node name.
        (pod(terms=[{"matchFields": [expr("metadata.name", "In", "node-a")]}]), ZONE_A, True),
        (pod(terms=[{"matchFields": [expr("metadata.name", "In", "node-b")]}]), ZONE_A, False),
        (pod(terms=[{"matchFields": [expr("metadata.name", "NotIn", "node-b")]}]), ZONE_A, True),
        # An empty term, or no terms at all, matches no node.
        (pod(terms=[{}]), ZONE_A, False),
        (pod(terms=[]), ZONE_A, False),
        # nodeSelector and affinity must both hold.
        (
            pod(
                selector={"topology.kubernetes.io/zone": "a"},
                terms=[{"matchExpressions": [expr("gpu-model", "In", "P100")]}],
            ),
            ZONE_A,
            False,
        ),
        (
            pod(
                selector={"topology.kubernetes.io/zone": "b"},
                terms=[{"matchExpressions": [expr("gpu-model", "In", "V100")]}],
            ),
            ZONE_A,
            False,
        ),
        (
            pod(
                selector={"topology.kubernetes.io/zone": "a"},
                terms=[{"matchExpressions": [expr("gpu-model", "In", "V100")]}],
            ),
            ZONE_A,
            True,
        ),
    ],
)
def test_node_affinity_accepts_only_matching_nodes(
    p: PodInfo, labels: dict[str, str], fits: bool
) -> None:
    state, snapshot = node_state(**labels)
    status = NodeAffinity().filter(CycleState(), p, state, snapshot)
    if fits:
        assert status.is_success
    else:
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (REASON,)
        assert status.plugin == "NodeAffinity"


def test_a_node_that_is_gone_matches_nothing() -> None:
    cache = SchedulerCache()
    cache.upsert_pod(
        parse_pod({"metadata": {"name": "b", "uid": "b"}, "spec": {"nodeName": "gone"}})
    )
    state = cache.node("gone")
    assert state is not None and state.info is None
    status = NodeAffinity().filter(CycleState(), pod(), state, Snapshot(cache))
    assert status.reasons == (REASON,)


def test_node_affinity_is_a_static_filter() -> None:
    plugin = NodeAffinity()
    assert plugin.scope is Scope.STATIC
    assert plugin.name == "NodeAffinity"
