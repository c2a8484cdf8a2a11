"""The start plan's bench on a small cluster: every job gets an outcome, and the pods and
nodes asked for are there."""

from __future__ import annotations

from bench.start_plan_time import measure


def test_a_small_cluster_plans_every_job() -> None:
    result = measure(nodes=20, pods=400, jobs=10)
    assert (result.nodes, result.pods, result.jobs) == (20, 400, 10)
    assert sum(result.outcomes.values()) == 10
    assert result.outcomes.get("unplanned", 0) == 0
    assert sum(result.again_outcomes.values()) == 10
