"""A repeated scenario reports one of its measurements whole: the median, or a failed one."""

from __future__ import annotations

from bench.results import ScenarioResult, kept_repeat


def _try(pods_per_s: float | None, *problems: str) -> ScenarioResult:
    result = ScenarioResult(
        name="contention",
        summary="",
        finish="cluster full",
        nodes=134,
        pods=1600,
        gangs=200,
        expected=1072,
    )
    result.pods_per_s = pods_per_s
    result.problems = list(problems)
    return result


def test_the_median_measurement_is_kept() -> None:
    tries = [_try(1071.0), _try(690.0), _try(784.0)]
    assert kept_repeat(tries) is tries[2]


def test_of_an_even_count_the_upper_middle_is_kept() -> None:
    tries = [_try(600.0), _try(900.0)]
    assert kept_repeat(tries) is tries[1]


def test_a_measurement_with_a_problem_is_never_hidden_by_better_ones() -> None:
    stalled = _try(None, "stalled: no bind for 60 s at 500/1072 bound")
    tries = [_try(1000.0), stalled, _try(1100.0)]
    assert kept_repeat(tries) is stalled
