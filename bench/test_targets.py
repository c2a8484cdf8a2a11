"""The targets are one definition: their verdicts, and the report lines made from them."""

from __future__ import annotations

from bench import report, targets
from bench.results import KOORDGANG, CeilingResult, ScenarioResult


def test_a_target_says_met_or_missed_on_the_right_side_of_its_limit() -> None:
    share = targets.SHARE_OF_CEILING
    assert (share.verdict(90.0), share.verdict(89.9)) == ("met   ", "MISSED")
    seconds = targets.STARTUP_SECONDS
    assert (seconds.verdict(14.9), seconds.verdict(15.0)) == ("met   ", "MISSED")
    assert seconds.verdict(None) == "-     "
    assert (share.wording, seconds.wording) == (">= 90%", "< 15 s")


def result(name: str, pods_per_s: float, pct: float) -> ScenarioResult:
    r = ScenarioResult(name, "", "all bound", 100, 1000, 10, 1000, pods_per_s=pods_per_s)
    r.scheduler = KOORDGANG
    r.pct_of_ceiling = pct
    return r


def test_every_scenario_is_held_to_the_share_of_the_ceiling_and_the_published_figure_says_so() -> (
    None
):
    ceiling = CeilingResult("start", 1000, 100, 64, 1000.0, 1000.0, 1.0, 0)
    lines = report.target_lines(
        [ceiling],
        [result("gang-1k", 950.0, 95.0), result("contention", 850.0, 85.0)],
    )
    assert "met    gang-1k >= 90% of the ceiling: 95%" in "\n".join(lines)
    assert "MISSED contention >= 90% of the ceiling: 85%" in "\n".join(lines)
    [published] = [line for line in lines if "koord-scheduler" in line]
    assert "17.2 pods/s" in published and "not measured in this run" in published


def test_a_scheduler_above_the_ceiling_says_the_ceiling_is_not_one() -> None:
    ceiling = CeilingResult("start", 1000, 100, 64, 1000.0, 1000.0, 1.0, 0)
    peer = result("gang-1k", 1120.0, 112.0)
    peer.scheduler = "kube-scheduler"
    lines = "\n".join(report.target_lines([ceiling], [result("gang-1k", 990.0, 99.0), peer]))
    assert "MISSED no scheduler above the ceiling (< 105%): the fastest, kube-scheduler" in lines
    assert "the ceiling is not one" in lines
    below = "\n".join(report.target_lines([ceiling], [result("gang-1k", 990.0, 99.0)]))
    assert "met    no scheduler above the ceiling (< 105%): the fastest, koordgang in gang-1k" in (
        below
    )


def test_the_ceiling_lines_show_its_sweep() -> None:
    ceiling = CeilingResult("start", 2000, 100, 64, 1300.0, 1400.0, 1.5, 0, sweep={32: 1100.0})
    ceiling.sweep = {32: 1100.0, 64: 1300.0, 128: 1290.0}
    again = CeilingResult(**{**ceiling.__dict__, "sweep": {"32": 1100.0}})  # as JSON reads it
    assert again.sweep == {32: 1100.0}
    [_, sweep] = report.ceiling_lines([ceiling])
    assert "32: 1100, 64: 1300, 128: 1290; best at 64" in sweep and "not saturated" not in sweep
    ceiling.saturated = False
    assert "not saturated: more in flight may bind faster" in report.ceiling_lines([ceiling])[1]
