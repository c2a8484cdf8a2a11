"""NodeUnschedulable filter: cordoned and NotReady nodes take no new pods."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.status import Code
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.nodeunschedulable import NodeUnschedulable
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot

CORDONED = "node(s) were unschedulable"
NOT_READY = "node(s) were not ready"

#: What the API server's DefaultTolerationSeconds admission plugin adds to every pod.
DEFAULT_TOLERATIONS: list[dict[str, Any]] = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]
TOLERATE_CORDON = {
    "key": "node.kubernetes.io/unschedulable",
    "operator": "Exists",
    "effect": "NoSchedule",
}
TOLERATE_NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoSchedule",
}
TOLERATE_ALL = {"operator": "Exists"}


def node_obj(*, cordoned: bool = False, ready: str | None = "True") -> dict[str, Any]:
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready})
    return {
        "metadata": {"name": "n1"},
        "spec": {"unschedulable": cordoned},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": conditions,
        },
    }


def pod(tolerations: list[dict[str, Any]]) -> PodInfo:
    return parse_pod(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"tolerations": tolerations, "containers": [{"name": "c"}]},
        }
    )


def verdict(node: dict[str, Any], tolerations: list[dict[str, Any]]) -> str | None:
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node))
    state = cache.node("n1")
    assert state is not None
    status = NodeUnschedulable().filter(CycleState(), pod(tolerations), state, Snapshot(cache))
    if status.is_success:
        return None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.plugin == "NodeUnschedulable"
    assert len(status.reasons) == 1
    return status.reasons[0]


@pytest.mark.parametrize(
    ("node", "tolerations", "reason"),
    [
        (node_obj(), [], None),
        (node_obj(), DEFAULT_TOLERATIONS, None),
        (node_obj(cordoned=True), [], CORDONED),
        (node_obj(cordoned=True), DEFAULT_TOLERATIONS, CORDONED),
        (node_obj(cordoned=True), [TOLERATE_CORDON], None),
        (node_obj(cordoned=True), [TOLERATE_ALL], None),
        (node_obj(ready="False"), [], NOT_READY),
        (node_obj(ready="Unknown"), [], NOT_READY),
        # A node that reports no Ready condition is not trusted.
        (node_obj(ready=None), [], NOT_READY),
        (node_obj(ready="False"), [TOLERATE_ALL], None),
        # Cordoned is reported first when both hold.
        (node_obj(cordoned=True, ready="False"), [], CORDONED),
        (node_obj(cordoned=True, ready="False"), [TOLERATE_CORDON], NOT_READY),
    ],
)
def test_node_unschedulable_keeps_pods_off_cordoned_and_not_ready_nodes(
    node: dict[str, Any], tolerations: list[dict[str, Any]], reason: str | None
) -> None:
    assert verdict(node, tolerations) == reason


def test_a_pod_tolerating_the_not_ready_no_schedule_taint_may_use_a_not_ready_node() -> None:
    assert verdict(node_obj(ready="False"), [TOLERATE_NOT_READY]) is None


def test_the_default_not_ready_no_execute_toleration_does_not_open_a_not_ready_node() -> None:
    # Every pod gets these tolerations from the API server (DefaultTolerationSeconds); they only
    # delay eviction from a node that becomes NotReady. kube-scheduler still keeps new pods off
    # a NotReady node (its node.kubernetes.io/not-ready:NoSchedule taint), and so must we.
    assert verdict(node_obj(ready="False"), DEFAULT_TOLERATIONS) == NOT_READY


def test_a_node_that_is_gone_is_not_ready() -> None:
    cache = SchedulerCache()
    cache.upsert_pod(parse_pod({"metadata": {"name": "b", "uid": "b"}, "spec": {"nodeName": "x"}}))
    state = cache.node("x")
    assert state is not None and state.info is None
    status = NodeUnschedulable().filter(CycleState(), pod([]), state, Snapshot(cache))
    assert status.reasons == (NOT_READY,)


def test_node_unschedulable_depends_only_on_the_pod_and_the_node_spec() -> None:
    assert NodeUnschedulable.scope is Scope.STATIC
    assert NodeUnschedulable.name == "NodeUnschedulable"
