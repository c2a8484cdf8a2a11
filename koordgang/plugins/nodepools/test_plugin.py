"""A NodePool's room as read from its object: limits in the units the engine counts, what its
nodes have, and what it may add."""

from __future__ import annotations

from typing import Any

from koordgang.plugins.nodepools.plugin import claim_on_the_way, pool_room


def test_a_nodepool_may_add_its_limit_less_what_its_nodes_have() -> None:
    room = pool_room(
        {
            "metadata": {"name": "general"},
            "spec": {"limits": {"cpu": "10", "memory": "64Gi", "nvidia.com/gpu": "4"}},
            "status": {"resources": {"cpu": "3500m", "memory": "80Gi", "nodes": "2"}},
        }
    )
    assert room.headroom("cpu") == 6500
    assert room.headroom("memory") == 0  # over its limit already: nothing more, not less
    assert room.headroom("nvidia.com/gpu") == 4
    assert room.headroom("ephemeral-storage") is None  # no limit on it


def test_a_nodepool_without_limits_or_status_limits_nothing() -> None:
    room = pool_room({"metadata": {"name": "open"}, "spec": {}})
    assert room.headroom("cpu") is None


def test_a_limit_of_zero_is_a_limit_and_one_that_cannot_be_read_is_none() -> None:
    paused = pool_room({"metadata": {"name": "paused"}, "spec": {"limits": {"cpu": "0"}}})
    assert paused.headroom("cpu") == 0
    bad = pool_room({"metadata": {"name": "bad"}, "spec": {"limits": {"cpu": "lots"}}})
    assert bad.headroom("cpu") is None  # a wrong "cannot" would leave a job waiting


def test_a_nodeclaim_brings_its_room_until_its_node_registers() -> None:
    claim: dict[str, Any] = {
        "metadata": {"name": "c1"},
        "spec": {"resources": {"requests": {"cpu": "2"}}},
        "status": {"allocatable": {"cpu": "3900m", "memory": "15Gi"}},
    }
    assert claim_on_the_way(claim) == {"cpu": 3900, "memory": 15 * 2**30}
    asked_only = {"metadata": {"name": "c2"}, "spec": {"resources": {"requests": {"cpu": "2"}}}}
    assert claim_on_the_way(asked_only) == {"cpu": 2000}
    registered = {**claim, "status": {**claim["status"], "nodeName": "n1"}}
    assert claim_on_the_way(registered) == {}
    going = {**claim, "metadata": {"name": "c1", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert claim_on_the_way(going) == {}
