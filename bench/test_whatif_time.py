"""The what-if timing runs, and each case gives the answer it is named for."""

from __future__ import annotations

from bench.whatif_time import CASES, measure


async def test_every_case_answers_as_named_on_a_small_cluster() -> None:
    results = await measure(nodes=100, runs=1)
    assert [name for name, _, _ in results] == [case[0] for case in CASES]
    assert all(median > 0 for _, median, _ in results)
