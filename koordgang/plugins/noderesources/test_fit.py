"""NodeResourcesFit: room for the pod's requests, counting bound, assumed and placed pods."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.status import Code
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.noderesources import Fit
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot

GPU = "nvidia.com/gpu"


def node_obj(allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1"},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "3", **(allocatable or {})},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    requests: dict[str, str] | None = None,
    *,
    name: str = "p",
    node_name: str = "",
    phase: str = "Pending",
) -> PodInfo:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": requests or {}}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": spec,
            "status": {"phase": phase},
        }
    )


def reasons(
    candidate: PodInfo,
    allocatable: dict[str, str] | None = None,
    *,
    bound: tuple[PodInfo, ...] = (),
    assumed: tuple[PodInfo, ...] = (),
    placed: tuple[PodInfo, ...] = (),
) -> tuple[str, ...]:
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node_obj(allocatable)))
    for p in bound:
        cache.upsert_pod(p)
    for p in assumed:
        cache.assume(p, "n1")
    snapshot = Snapshot(cache)
    [state] = snapshot.nodes
    for p in placed:
        snapshot.add(p, state)
    status = Fit().filter(CycleState(), candidate, state, snapshot)
    if status.is_success:
        return ()
    # Only a change in what runs there can help, so preemption may resolve it.
    assert status.code is Code.UNSCHEDULABLE
    assert status.plugin == "NodeResourcesFit"
    return status.reasons


@pytest.mark.parametrize(
    ("candidate", "allocatable", "expected"),
    [
        (pod({"cpu": "4", "memory": "8Gi"}), None, ()),
        (pod(), None, ()),
        (pod({"cpu": "4001m"}), None, ("Insufficient cpu",)),
        (pod({"memory": "9Gi"}), None, ("Insufficient memory",)),
        (pod({"cpu": "5", "memory": "9Gi"}), None, ("Insufficient cpu", "Insufficient memory")),
        (pod({GPU: "1"}), None, ("Insufficient nvidia.com/gpu",)),
        (pod({GPU: "8"}), {GPU: "8"}, ()),
        (pod({GPU: "9"}), {GPU: "8"}, ("Insufficient nvidia.com/gpu",)),
        (pod({"ephemeral-storage": "1Gi"}), None, ("Insufficient ephemeral-storage",)),
        (pod({"ephemeral-storage": "1Gi"}), {"ephemeral-storage": "1Gi"}, ()),
        (pod({"cpu": "1"}), {"pods": "0"}, ("Too many pods",)),
        (pod({"cpu": "5"}), {"pods": "0"}, ("Insufficient cpu", "Too many pods")),
    ],
)
def test_fit_names_every_resource_the_node_lacks(
    candidate: PodInfo, allocatable: dict[str, str] | None, expected: tuple[str, ...]
) -> None:
    assert reasons(candidate, allocatable) == expected


OTHER_BOUND = pod({"cpu": "3"}, name="other", node_name="n1", phase="Running")
OTHER = pod({"cpu": "3"}, name="other")


@pytest.mark.parametrize(
    ("bound", "assumed", "placed"),
    [((OTHER_BOUND,), (), ()), ((), (OTHER,), ()), ((), (), (OTHER,))],
    ids=["bound", "assumed", "placed"],
)
def test_fit_counts_bound_assumed_and_tentatively_placed_pods(
    bound: tuple[PodInfo, ...], assumed: tuple[PodInfo, ...], placed: tuple[PodInfo, ...]
) -> None:
    fits = reasons(pod({"cpu": "1"}), bound=bound, assumed=assumed, placed=placed)
    too_big = reasons(pod({"cpu": "1001m"}), bound=bound, assumed=assumed, placed=placed)
    assert fits == ()
    assert too_big == ("Insufficient cpu",)


def test_fit_counts_pod_slots_of_every_kind() -> None:
    a = pod(name="a", node_name="n1", phase="Running")
    b, c = pod(name="b"), pod(name="c")
    assert reasons(pod(), bound=(a,), assumed=(b,)) == ()
    assert reasons(pod(), bound=(a,), assumed=(b,), placed=(c,)) == ("Too many pods",)


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_terminal_pods_leave_their_room_to_others(phase: str) -> None:
    finished = pod({"cpu": "4"}, name="done", node_name="n1", phase=phase)
    assert reasons(pod({"cpu": "4"}), bound=(finished,)) == ()


def test_fit_depends_on_what_runs_on_the_node() -> None:
    assert Fit.scope is Scope.NODE
    assert Fit.name == "NodeResourcesFit"
