"""A run's results on disk, read back by --resume, and the side-by-side verdicts."""

from __future__ import annotations

from pathlib import Path

from bench import report
from bench.ledger import RESULTS_JSON, Progress
from bench.results import CeilingResult, ScenarioResult


def _ceiling(label: str, rate: float) -> CeilingResult:
    return CeilingResult(label, 100, 10, 8, rate, rate, 1.0, 0)


def _result(name: str, scheduler: str, rate: float | None, **extra: object) -> ScenarioResult:
    result = ScenarioResult(name, "", "all bound", 10, 100, 5, 100, scheduler=scheduler)
    result.pods_per_s = rate
    result.bound = 100
    for key, value in extra.items():
        setattr(result, key, value)
    return result


def test_resume_keeps_what_ran_and_tries_again_what_failed_to_run(tmp_path: Path) -> None:
    progress = Progress(tmp_path / RESULTS_JSON, {"stamp": "t"})
    progress.add_ceiling(_ceiling("before-koordgang", 1000.0))
    progress.add(_result("plain", "koordgang", 800.0, notes={"ceiling_before": "before-koordgang"}))
    progress.add(_result("gang-1k", "koordgang", None, problems=["run failed: boom"]))
    progress.add(_result("big-gang", "coscheduling", 5.0, problems=["stalled: no bind"]))

    again = Progress.load(tmp_path)
    assert again.meta == {"stamp": "t"}
    assert again.has("plain", "koordgang") and again.has("big-gang", "coscheduling")
    assert not again.has("gang-1k", "koordgang")
    assert again.has_ceiling("before-koordgang")
    assert again.results[0].pct_of_ceiling == 80.0


def test_share_of_ceiling_is_of_the_ceilings_around_the_scheduler(tmp_path: Path) -> None:
    progress = Progress(tmp_path / RESULTS_JSON)
    for label, rate in (("before-koordgang", 1000.0), ("before-peer", 500.0), ("end", 400.0)):
        progress.add_ceiling(_ceiling(label, rate))
    peer = _result("plain", "peer", 250.0, notes={"ceiling_before": "before-peer"})
    progress.add(peer)
    # Of the best of the ceiling before it (500) and the next one (400), not of the run's best.
    assert peer.pct_of_ceiling == 50.0


def test_side_by_side_shows_not_run_and_the_peer_targets() -> None:
    results = [
        # Plain pods: koordgang needs only to match the best peer (500 >= 400, not 2x).
        _result("plain", "koordgang", 500.0, gangs=0),
        _result("plain", "kube-scheduler qps 5000", 400.0, gangs=0),
        _result("gang-1k", "koordgang", 700.0),
        _result("gang-1k", "coscheduling qps 5000", 400.0),
        _result("gang-1k", "kube-scheduler qps 5000", None, skipped="no gang API"),
    ]
    table = "\n".join(report.side_by_side(results))
    assert "not run" in table and "n/a" in table
    targets = report.peer_target_lines(results)
    assert targets[0].startswith("met") and "plain" in targets[0]
    # 700 is less than twice 400: the gang target is missed.
    assert targets[1].startswith("MISSED") and "gang-1k" in targets[1] and "1.8x" in targets[1]


def test_medians_take_the_middle_run_and_keep_every_problem() -> None:
    from bench.medians import medians

    runs = [[_result("plain", "koordgang", rate, gangs=0)] for rate in (900.0, 1100.0, 1000.0)]
    runs[1][0].problems = ["1 over-committed node"]
    (merged,) = medians(runs)
    assert merged.pods_per_s == 1000.0
    assert merged.problems == ["1 over-committed node"]
    assert merged.notes["runs"] == 3


def test_scaling_compares_cpu_per_pod_with_the_1000_node_counterpart() -> None:
    from bench.scaling import growth_lines, startup_lines

    small = _result("plain", "koordgang", 1000.0, gangs=0, cores={"scheduler": 0.5}, window_s=10)
    small.binds_seen = 5000  # 1 ms per pod
    large = _result("plain-5k", "koordgang", 900.0, gangs=0, cores={"scheduler": 0.6}, window_s=50)
    large.binds_seen = 20000  # 1.5 ms per pod: not less than 1.5x
    lines = growth_lines([small], [large])
    assert "plain -> plain-5k" in lines[2] and "1.50x" in lines[2] and "MISSED" in lines[2]
    boot = _result("startup-5k", "koordgang", None, first_bind_after_start_s=12.0)
    boot.daemon_peak_rss_mb = 450.0
    boot.notes = {"fillers": 100000}
    (line,) = startup_lines([boot])
    assert "100000 pods" in line and "met" in line


def test_a_table_with_no_rows_is_its_header() -> None:
    # A run of start-up scenarios only has no CPU-per-pod rows.
    assert report.table(["scenario", "ms"], []) == ["scenario  ms", "--------  --"]
