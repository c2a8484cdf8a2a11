"""A NodePool's room as read from its object: limits in the units the engine counts, what its
nodes have, and what it may add."""

from __future__ import annotations

from koordgang.plugins.nodepools.plugin import pool_room


def test_a_nodepool_may_add_its_limit_less_what_its_nodes_have() -> None:
    room = pool_room(
        {
            "metadata": {"name": "general"},
            "spec": {"limits": {"cpu": "10", "memory": "64Gi", "nvidia.com/gpu": "4"}},
            "status": {"resources": {"cpu": "3500m", "memory": "80Gi", "nodes": "2"}},
        }
    )
    assert room is not None
    assert room.headroom("cpu") == 6500
    assert room.headroom("memory") == 0  # over its limit already: nothing more, not less
    assert room.headroom("nvidia.com/gpu") == 4
    assert room.headroom("ephemeral-storage") is None  # no limit on it


def test_a_nodepool_without_limits_or_status_limits_nothing() -> None:
    room = pool_room({"metadata": {"name": "open"}, "spec": {}})
    assert room is not None
    assert room.headroom("cpu") is None


def test_a_nodepool_whose_quantities_cannot_be_read_is_left_out() -> None:
    assert pool_room({"metadata": {"name": "bad"}, "spec": {"limits": {"cpu": "lots"}}}) is None
