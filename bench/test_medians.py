"""Medians: a repeated scenario reports one of its measurements whole (the median, or a failed
one), and the API server's CPU per bound pod across runs is each run's own figure, then the
median."""

from __future__ import annotations

from bench.medians import APISERVER_MS, apiserver_cost_lines, medians
from bench.results import ScenarioResult, kept_repeat


def _contention(scheduler: str = "koordgang") -> ScenarioResult:
    return ScenarioResult(
        name="contention",
        summary="",
        finish="cluster full",
        nodes=134,
        pods=1600,
        gangs=200,
        expected=1072,
        scheduler=scheduler,
    )


def _try(pods_per_s: float | None, *problems: str) -> ScenarioResult:
    result = _contention()
    result.pods_per_s = pods_per_s
    result.problems = list(problems)
    return result


def _run(scheduler: str, apiserver_cores: float, window_s: float, binds: int) -> ScenarioResult:
    result = _contention(scheduler)
    result.cores = {"kube-apiserver": apiserver_cores, "scheduler": 0.5}
    result.window_s = window_s
    result.binds_seen = binds
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


def test_each_run_is_costed_on_its_own_window_then_the_median_taken() -> None:
    runs = [
        [_run("koordgang", 1.0, 1.0, 1000), _run("peer", 1.0, 2.0, 1000)],
        [_run("koordgang", 1.0, 2.0, 1000), _run("peer", 0.5, 2.0, 1000)],
        [_run("koordgang", 1.0, 1.5, 1000), _run("peer", 1.0, 3.0, 1000)],
    ]
    combined = {r.scheduler: r for r in medians(runs)}
    assert combined["koordgang"].notes[APISERVER_MS] == 1.5
    assert combined["koordgang"].notes[f"{APISERVER_MS}_runs"] == [1.0, 2.0, 1.5]
    assert combined["peer"].notes[APISERVER_MS] == 2.0

    assert apiserver_cost_lines(list(combined.values())) == [
        "contention: koordgang 1.50 (1.00, 2.00, 1.50); peer 2.00 (2.00, 1.00, 3.00)"
    ]
