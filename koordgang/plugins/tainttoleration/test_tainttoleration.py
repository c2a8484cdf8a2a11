"""TaintToleration filter: NoSchedule and NoExecute taints keep untolerating pods away."""

from __future__ import annotations

import random
from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.status import Code
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.profile import default_framework
from koordgang.plugins.tainttoleration import TaintToleration
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.snapshot import Snapshot


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, str]:
    result = {"key": key, "effect": effect}
    if value:
        result["value"] = value
    return result


def node_obj(name: str, taints: list[dict[str, str]], cpu: str = "4") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"taints": taints},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(tolerations: list[dict[str, Any]] | None = None, cpu: str = "1") -> PodInfo:
    return parse_pod(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {
                "tolerations": tolerations or [],
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            },
        }
    )


def verdict(taints: list[dict[str, str]], tolerations: list[dict[str, Any]]) -> str | None:
    """None when the pod may go there, else the single reason."""
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node_obj("n1", taints)))
    state = cache.node("n1")
    assert state is not None
    status = TaintToleration().filter(CycleState(), pod(tolerations), state, Snapshot(cache))
    if status.is_success:
        return None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.plugin == "TaintToleration"
    assert len(status.reasons) == 1
    return status.reasons[0]


GPU = taint("dedicated", "gpu")
GPU_REASON = "node(s) had untolerated taint {dedicated: gpu}"


@pytest.mark.parametrize(
    ("taints", "tolerations", "reason"),
    [
        ([], [], None),
        ([], [{"key": "dedicated", "operator": "Exists"}], None),
        ([GPU], [], GPU_REASON),
        ([taint("dedicated", "gpu", "NoExecute")], [], GPU_REASON),
        # PreferNoSchedule only lowers a score; it never keeps a pod off.
        ([taint("dedicated", "gpu", "PreferNoSchedule")], [], None),
        # A taint without a value prints an empty value, as kube-scheduler does.
        ([taint("maintenance")], [], "node(s) had untolerated taint {maintenance: }"),
        ([GPU], [{"key": "dedicated", "operator": "Exists"}], None),
        ([GPU], [{"key": "dedicated", "operator": "Equal", "value": "gpu"}], None),
        ([GPU], [{"key": "dedicated", "value": "gpu"}], None),
        ([GPU], [{"key": "dedicated", "value": "cpu"}], GPU_REASON),
        ([GPU], [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}], None),
        ([GPU], [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}], GPU_REASON),
        ([GPU], [{"key": "other", "operator": "Exists"}], GPU_REASON),
        # An empty key with Exists tolerates every taint.
        ([GPU, taint("maintenance", effect="NoExecute")], [{"operator": "Exists"}], None),
        # Every taint needs a toleration; the first untolerated one is reported.
        (
            [GPU, taint("maintenance")],
            [{"key": "dedicated", "operator": "Exists"}],
            "node(s) had untolerated taint {maintenance: }",
        ),
        (
            [taint("zone", "b", "PreferNoSchedule"), GPU, taint("maintenance")],
            [],
            GPU_REASON,
        ),
    ],
)
def test_taint_toleration_rejects_nodes_with_an_untolerated_taint(
    taints: list[dict[str, str]], tolerations: list[dict[str, Any]], reason: str | None
) -> None:
    assert verdict(taints, tolerations) == reason


def test_taint_toleration_is_a_static_filter() -> None:
    assert TaintToleration.scope is Scope.STATIC
    assert TaintToleration.name == "TaintToleration"


def test_the_default_profile_explains_a_taint_and_a_shortage_like_kube_scheduler() -> None:
    cache = SchedulerCache()
    cache.upsert_node(parse_node(node_obj("n1", [GPU])))
    cache.upsert_node(parse_node(node_obj("n2", [], cpu="1")))
    cache.upsert_node(parse_node(node_obj("n3", [], cpu="1")))
    fw = default_framework(
        Settings(), GangRegistry(600.0, resolve=Resolve(GANG_APIS)), rng=random.Random(1)
    )

    result = fw.pods.find(pod(cpu="2"), Snapshot(cache))

    assert result.node is None
    assert result.diagnosis is not None
    assert result.diagnosis.message() == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
        "2 Insufficient cpu."
    )
