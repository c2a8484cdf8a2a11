"""The starvation scenario without a cluster: its selection, its plan, the pods due for
deletion, the window's arithmetic and what the report says."""

from __future__ import annotations

import pytest

from bench import report
from bench.results import ScenarioResult
from bench.scenarios import Finish, select
from bench.schedulers import SchedulerUnderTest
from bench.starvation import (
    StarvationPlan,
    due_for_deletion,
    gang_bound_at,
    reserve_after,
    small_pod,
    starvation_workload,
    stream_figures,
    throughput_ratio,
)


def test_the_group_name_selects_the_run_with_the_guard_and_the_one_without() -> None:
    runs = select("starvation")
    assert [s.name for s in runs] == ["starvation-guard", "starvation-no-guard"]
    assert [reserve_after(s.daemon_args) for s in runs] == [30.0, 0.0]
    assert all(s.finish is Finish.GANG_STARTED and s.starvation is not None for s in runs)
    assert [s.name for s in select("starvation-no-guard,starvation")] == [
        "starvation-no-guard",
        "starvation-guard",
    ]
    with pytest.raises(ValueError, match="starvation"):
        select("starve")


def test_only_koordgang_runs_it() -> None:
    for scenario in select("starvation"):
        assert scenario.koordgang_only
        assert SchedulerUnderTest("koordgang").skip_reason(scenario) is None
        assert SchedulerUnderTest("coscheduling", 5000).skip_reason(scenario)
        assert SchedulerUnderTest("kube-scheduler").skip_reason(scenario)


def test_the_plan_is_the_users_reproduction() -> None:
    plan = StarvationPlan()
    workload = starvation_workload(plan)
    assert len(workload.nodes) == 12
    assert {n.capacity["cpu"] for n in workload.nodes} == {"8"}
    assert workload.gangs == {"big-000": 10}
    assert {p.requests.cpu for p in workload.pods} == {"8"}
    assert small_pod(7, plan).name == "small-00007"
    assert small_pod(7, plan).requests.cpu == "1"
    assert small_pod(7, plan).gang is None
    # 30 one-core pods at once in steady state; 16 cores are left beside the running gang.
    assert plan.steady_small_pods == 30
    assert plan.room_left_for_stream() == pytest.approx(16 / 30)


def test_reserve_after_is_read_from_the_daemon_flags() -> None:
    assert reserve_after(["--log-level", "info"]) is None
    assert reserve_after(["--reserve-after", "30"]) == 30.0
    assert reserve_after(["--reserve-after=5", "--reserve-after", "0"]) == 0.0


def test_small_pods_are_deleted_a_lifetime_after_they_were_bound_oldest_first() -> None:
    bound_at = {"small-00002": 3.0, "small-00001": 1.0, "big-000-0000": 0.0, "small-00003": 9.0}
    assert due_for_deletion(bound_at, 5.0, 8.5, handled=()) == ["small-00001", "small-00002"]
    assert due_for_deletion(bound_at, 5.0, 8.5, handled={"small-00001"}) == ["small-00002"]
    assert due_for_deletion(bound_at, 5.0, 2.0, handled=()) == []


def test_the_gang_is_bound_when_its_last_member_is() -> None:
    members = ["big-000-0000", "big-000-0001"]
    assert gang_bound_at({"big-000-0000": 4.0}, members) is None
    assert gang_bound_at({"big-000-0000": 4.0, "big-000-0001": 6.5}, members) == 6.5
    assert gang_bound_at({}, []) is None


def test_window_figures_count_binds_inside_it_and_follow_pods_created_in_it() -> None:
    created = {"small-00000": 0.0, "small-00001": 9.0, "small-00002": 10.5, "small-00003": 19.0}
    bound = {"small-00000": 0.5, "small-00001": 10.0, "small-00002": 13.5, "small-00003": 21.0}
    figures = stream_figures(created, bound, start=10.0, end=20.0)
    assert figures.seconds == 10.0
    assert figures.bound == 2  # small-00001 and small-00002; small-00003 after the end
    assert figures.pods_per_s == pytest.approx(0.2)
    # Created in the window: small-00002 (3 s) and small-00003, unbound at 20: 1 s so far.
    assert figures.latency_mean_s == pytest.approx((3.0 + 1.0) / 2)
    assert figures.latency_p99_s == pytest.approx(3.0)
    assert figures.pending_at_end == 1
    assert figures.unbound_at_run_end == 1
    followed = stream_figures(created, bound, start=10.0, end=20.0, run_end=25.0)
    assert followed.bound == 2 and followed.pending_at_end == 1
    assert followed.latency_mean_s == pytest.approx((3.0 + 2.0) / 2)
    assert followed.unbound_at_run_end == 0
    notes = followed.as_notes("window")
    assert notes["window_small_pods_per_s"] == 0.2
    assert notes["window_small_latency_mean_s"] == 2.5
    empty = stream_figures({}, {}, 5.0, 5.0)
    assert empty.pods_per_s is None and empty.latency_mean_s is None


def _run(
    name: str, reserve: float, rate: float | None, wait: float | None, waiting_rate: float = 1.7
) -> ScenarioResult:
    """``rate``: small pods/s over the cap; ``waiting_rate``: while the gang waited."""
    result = ScenarioResult(name, "", Finish.GANG_STARTED.value, 12, 100, 1, 100)
    result.notes = {
        "reserve_after_s": reserve,
        "window_small_pods_per_s": waiting_rate if wait is not None else rate,
        "window_window_s": 180.0 if wait is None else wait,
        "window_small_bound": 90,
        "cap_small_pods_per_s": rate,
        "cap_window_s": 180.0,
    }
    if wait is not None:
        result.notes["gang_wait_s"] = wait
    result.cores, result.window_s, result.binds_seen = {"scheduler": 0.1}, 100.0, 200
    return result


def test_the_report_compares_the_throughput_with_the_guard_to_without() -> None:
    guarded = _run("starvation-guard", 30.0, 1.9, 47.0)
    unguarded = _run("starvation-no-guard", 0.0, 2.0, None)
    assert throughput_ratio(guarded.notes, unguarded.notes) == pytest.approx(0.95)
    assert throughput_ratio(guarded.notes, unguarded.notes, "window") == pytest.approx(0.85)
    lines = report.starvation_lines([guarded, unguarded])
    assert "the gang waited 47.0 s" in lines[0]
    assert "50.00 CPU ms per bound pod" in lines[0]
    assert "not started after 180 s" in lines[1]
    assert "while the gang waited, with the guard over without: 85%" in lines[2]
    assert lines[3].startswith("met") and "180 s after the gang arrived: 95%" in lines[3]
    slower = _run("starvation-guard", 30.0, 1.2, 47.0)
    assert report.starvation_lines([slower, unguarded])[3].startswith("MISSED")
    assert report.starvation_lines([]) == []
