"""The start plan's load bench on a small cluster: every way schedules its batches, and the
plans of the daemon's way are made off the cycle, their cost seen."""

from __future__ import annotations

from bench.start_plan_load import WAYS, measure


async def test_every_way_schedules_its_batches_and_plans_are_made() -> None:
    load = await measure(nodes=30, jobs=6, batch=20, rounds=1)
    assert set(load.ways) == set(WAYS)
    assert all(len(rates) == 1 and rates[0] > 0 for rates in load.ways.values())
    # One plan a round where StartTimes is in the profile, none where it is out.
    assert load.plans == {"off": 0, "thread": 1, "in cycle": 1}
    [(reading, planning)] = load.costs
    assert reading > 0 and planning > 0
