"""The preemption scenario's victims: counted, and running gangs left broken told apart from
gangs evicted whole."""

from __future__ import annotations

from bench.measure import victim_counts
from bench.medians import medians
from bench.report_features import feature_lines
from bench.results import ScenarioResult
from bench.scenarios import RUNNING_GANG_SIZE, SCENARIOS
from bench.workload import GangRef, PodPlan, Requests

ONE = Requests("1", "1Gi")


def _gang(name: str, size: int) -> list[PodPlan]:
    return [PodPlan(f"{name}-{i}", ONE, gang=GangRef(name, size)) for i in range(size)]


def test_lone_victims_break_no_gang() -> None:
    fillers = [PodPlan(f"lone-{i}", ONE) for i in range(4)] + _gang("g", 4)
    counts = victim_counts(fillers, {p.name for p in fillers} - {"lone-0", "lone-3"})
    assert (counts.evicted, counts.gang_members, counts.gangs_broken, counts.gangs_whole) == (
        2,
        0,
        0,
        0,
    )


def test_a_gang_that_lost_some_members_is_broken_and_one_that_lost_all_is_whole() -> None:
    fillers = _gang("a", 4) + _gang("b", 4) + [PodPlan("lone", ONE)]
    remaining = {"a-1", "a-2", "a-3", "lone"}
    counts = victim_counts(fillers, remaining)
    assert counts.evicted == 5
    assert counts.gang_members == 5
    assert counts.gangs_broken == 1
    assert counts.gangs_whole == 1


def test_the_scenario_offers_enough_lone_victims_for_every_member() -> None:
    scenario = next(s for s in SCENARIOS if s.name == "preemption")
    workload = scenario.build(0.1)
    lone = [p for p in workload.fillers if p.gang is None]
    running = [p for p in workload.fillers if p.gang is not None]
    assert len(lone) >= workload.notes["victims_minimum"] == len(workload.pods)
    # Each running gang's members sit on different nodes, and every node is full.
    by_gang: dict[str, set[str]] = {}
    for plan in running:
        assert plan.gang is not None
        by_gang.setdefault(plan.gang.name, set()).add(plan.node_name)
    assert all(len(nodes) == RUNNING_GANG_SIZE for nodes in by_gang.values())
    assert len(workload.fillers) == 4 * len(workload.nodes)


def _run(scheduler: str, pods_per_s: float, **notes: float) -> ScenarioResult:
    result = ScenarioResult(
        name="preemption",
        summary="",
        finish="all bound",
        nodes=1000,
        pods=1000,
        gangs=20,
        expected=1000,
        bound=1000,
        scheduler=scheduler,
    )
    result.pods_per_s = pods_per_s
    result.notes.update(notes)
    return result


def test_koordgang_is_judged_against_koord_scheduler_on_speed_victims_and_broken_gangs() -> None:
    ours = _run("koordgang", 300, victims_evicted=1000, running_gangs_broken=0)
    theirs = _run("koord-scheduler", 100, victims_evicted=1200, running_gangs_broken=40)
    lines = feature_lines([ours, theirs])
    targets = [line for line in lines if "vs koord-scheduler" in line]
    assert len(targets) == 3 and all(line.startswith("met") for line in targets)
    worse = _run("koordgang", 150, victims_evicted=1300, running_gangs_broken=0)
    missed = [line for line in feature_lines([worse, theirs]) if line.startswith("MISSED")]
    assert len(missed) == 2  # speed below 2x, more victims
    assert feature_lines([ours]) == []  # no peer ran it: nothing to compare


def test_medians_cover_the_victim_figures() -> None:
    runs = [[_run("koordgang", 300, victims_evicted=v)] for v in (1000, 1010, 1200)]
    (combined,) = medians(runs)
    assert combined.notes["victims_evicted"] == 1010
