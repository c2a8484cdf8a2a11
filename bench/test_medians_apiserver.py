"""The API server's CPU per bound pod across runs: each run's own figure, then the median."""

from __future__ import annotations

from bench.medians import APISERVER_MS, apiserver_lines, medians
from bench.results import ScenarioResult


def _run(scheduler: str, apiserver_cores: float, window_s: float, binds: int) -> ScenarioResult:
    result = ScenarioResult(
        name="contention",
        summary="",
        finish="cluster full",
        nodes=134,
        pods=1600,
        gangs=200,
        expected=1072,
        scheduler=scheduler,
    )
    result.cores = {"kube-apiserver": apiserver_cores, "scheduler": 0.5}
    result.window_s = window_s
    result.binds_seen = binds
    return result


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

    assert apiserver_lines(list(combined.values())) == [
        "contention: koordgang 1.50 (1.00, 2.00, 1.50); peer 2.00 (2.00, 1.00, 3.00)"
    ]
