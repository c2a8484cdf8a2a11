"""The trace simulation on a tiny trace: what a user could check of its figures, computed here
from the trace's own pods (their requests, binds and ends), not from the daemon's cache."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import cast

import pytest

from bench import trace_sim
from bench.trace_sim import Outcome, Variant, run_variant
from bench.trace_workload import GRACE_SECONDS, Shape, TraceJob, make_trace
from koordgang.framework.cycle_state import CycleState
from koordgang.framework.group import SchedulingGroup
from koordgang.plugins.starvationguard import StarvationGuard

#: Six nodes of 4 cpu, half an hour: two gangs of whole nodes among small jobs.
TINY = Shape(
    nodes=6,
    node_cpu=4,
    hours=0.5,
    big_every_min=12.0,
    big_members=(3, 5),
    big_median_min=6.0,
    small_per_hour=120.0,
    small_median_min=3.0,
)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    trace_sim.quiet_logs()
    jobs = make_trace(TINY, seed=3)
    assert any(j.big for j in jobs) and any(not j.big for j in jobs)
    return {v.name: run_variant(TINY, jobs, v, seed=3, tick=5.0) for v in trace_sim.VARIANTS}


def test_the_trace_is_the_same_for_a_seed_and_limits_lie_above_durations() -> None:
    jobs = make_trace(TINY, seed=3)
    assert jobs == make_trace(TINY, seed=3)
    assert jobs != make_trace(TINY, seed=4)
    assert all(j.limit > j.duration == j.runs_for for j in jobs)
    assert all(0 <= j.arrival < TINY.seconds for j in jobs)
    assert [j.arrival for j in jobs] == sorted(j.arrival for j in jobs)


def test_a_job_past_its_limit_holds_its_room_until_the_limit_and_the_grace() -> None:
    job = TraceJob("j", False, 0, 1, 1, duration=1_000, limit=600)
    assert job.runs_for == 600 + GRACE_SECONDS


def test_every_job_is_started_whole_or_still_waiting(outcomes: dict[str, Outcome]) -> None:
    for outcome in outcomes.values():
        bound: dict[str, int] = defaultdict(int)
        for record in outcome.pods.values():
            # Replacements of evicted pods come one by one, as a Job makes them.
            bound[record.job] += record.bound is not None and not record.replaces
        started = waiting = 0
        for job in outcome.jobs:
            # A gang binds whole or not at all: no job is left half bound.
            assert bound[job.name] in (0, job.members), (outcome.variant, job.name)
            if bound[job.name]:
                started += 1
                assert outcome.started[job.name] >= job.arrival
            else:
                waiting += 1
                assert job.name not in outcome.started
        assert started + waiting == len(outcome.jobs)
        assert started == len(outcome.started)
        big_waits, big_waiting = trace_sim.waits(outcome, big=True)
        small_waits, small_waiting = trace_sim.waits(outcome, big=False)
        assert len(big_waits) + len(small_waits) == len(outcome.jobs)
        assert big_waiting + small_waiting == waiting


def test_no_node_is_over_committed_at_any_moment(outcomes: dict[str, Outcome]) -> None:
    for outcome in outcomes.values():
        # (moment, +cpu or -cpu) by node; at one moment the pods that end leave first.
        changes: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for record in outcome.pods.values():
            if record.bound is None:
                continue
            assert record.node, record
            changes[record.node].append((record.bound, record.cpu))
            if record.ended is not None:
                assert record.ended > record.bound
                changes[record.node].append((record.ended, -record.cpu))
        assert changes, "nothing was bound"
        for node, steps in changes.items():
            used = 0
            for _, cpu in sorted(steps):
                used += cpu
                assert used <= TINY.node_cpu, (outcome.variant, node, used)


def test_utilization_counts_the_cpu_seconds_bound(outcomes: dict[str, Outcome]) -> None:
    for outcome in outcomes.values():
        value = trace_sim.utilization(outcome)
        assert 0.0 < value <= 1.0
        # The same, by hand: every bound pod's cpu for the time it ran inside the trace.
        end = TINY.seconds
        used = sum(
            r.cpu * (min(end, r.ended if r.ended is not None else end) - r.bound)
            for r in outcome.pods.values()
            if r.bound is not None
        )
        assert value == pytest.approx(used / (TINY.nodes * TINY.node_cpu * end))


def test_pods_end_when_their_duration_is_over(outcomes: dict[str, Outcome]) -> None:
    jobs = {j.name: j for j in make_trace(TINY, seed=3)}
    for outcome in outcomes.values():
        for record in outcome.pods.values():
            if record.bound is not None and record.ended is not None:
                if record.evicted:
                    # Room lent taken back: before its end, and its Job made it again.
                    assert record.ended - record.bound < jobs[record.job].runs_for
                    assert any(r.replaces for r in outcome.pods.values())
                else:
                    assert record.ended - record.bound == jobs[record.job].runs_for


def test_only_what_backfill_let_in_is_evicted(outcomes: dict[str, Outcome]) -> None:
    for outcome in outcomes.values():
        evicted = [name for name, r in outcome.pods.items() if r.evicted]
        if "backfill" not in outcome.variant:
            assert evicted == [], outcome.variant
        replacements = {r.replaces for r in outcome.pods.values() if r.replaces}
        assert replacements == set(evicted), outcome.variant
    # On this trace the big gang's room is ready while pods let in still run.
    assert any(r.evicted for r in outcomes["guard + backfill"].pods.values())


def test_the_guard_changes_what_happens_and_the_table_shows_each_variant(
    outcomes: dict[str, Outcome],
) -> None:
    plain, guarded = outcomes["no guard"], outcomes["guard"]
    assert plain.started != guarded.started
    lines = trace_sim.report_lines(TINY, plain.jobs, list(outcomes.values()), 3)
    count = len(trace_sim.VARIANTS)
    names = [v.name.split()[0] for v in trace_sim.VARIANTS]
    assert [line.split()[0] for line in lines[4 : 4 + count]] == names
    # Then each big gang's wait, a line a variant: as many as there are big gangs.
    assert [line.split()[0] for line in lines[-count:]] == names
    bigs = sum(1 for j in plain.jobs if j.big)
    for outcome in outcomes.values():
        shown = trace_sim.big_waits(outcome)
        assert len(shown) == bigs
        assert sum(w.endswith("+") for w in shown) == trace_sim.waits(outcome, True)[1]


def test_a_variant_names_only_settings_that_exist() -> None:
    with pytest.raises(ValueError, match="no such setting: reserve_later"):
        trace_sim.variant_settings(Variant("typo", {"reserve_later": 0}))
    assert trace_sim.variant_settings(Variant("off", {"reserve_after": 0.0})).reserve_after == 0
    with pytest.raises(ValueError, match="no such variant: nope"):
        trace_sim.parse_variants("guard,nope")


def test_backfill_into_held_room_is_switched_off_on_the_guard_alone() -> None:
    def guard(backfill: bool) -> StarvationGuard:
        run = trace_sim.TraceRun(TINY, [], Variant("v", backfill=backfill), seed=1)
        [plugin] = [p for p in run.framework.plugins if isinstance(p, StarvationGuard)]
        return plugin

    on, off = guard(True), guard(False)
    assert "backfill_room" not in vars(on)  # as the guard comes
    # Off: the guard's own method is replaced by one that lends nothing, whatever it holds.
    assert "backfill_room" in vars(off)
    assert off.backfill_room(CycleState(), cast(SchedulingGroup, None)) == ()


def test_a_promise_is_broken_by_a_later_start_or_a_wait_past_it(
    outcomes: dict[str, Outcome],
) -> None:
    """Kept: started by it; broken: started after it, or still waiting past it at the end;
    not yet known: still waiting, the promise after the end."""
    base = outcomes["guard"]
    end = TINY.seconds
    made = Outcome(
        "x",
        TINY,
        base.jobs,
        {},
        {"kept": 100.0, "late": 150.0},
        set(),
        {},
        0.0,
        {"kept": 100.0, "late": 100.0, "waits": end - 1, "unknown": end + 1},
    )
    assert trace_sim.broken_promises(made) == 2
    # The guard's reservations on the tiny trace are promised (their pods have limits).
    assert base.promised and not outcomes["no guard"].promised


def test_no_promise_is_broken_while_limits_hold(outcomes: dict[str, Outcome]) -> None:
    """Every pod of the trace ends before its limit: a start the guard promised holds."""
    promised = 0
    for outcome in outcomes.values():
        promised += len(outcome.promised)
        assert trace_sim.broken_promises(outcome) == 0, (outcome.variant, outcome.promised)
    assert promised


@pytest.mark.parametrize("seed", [8, 12])
def test_a_reservation_planned_again_keeps_the_layout_it_was_promised_by(seed: int) -> None:
    """Planned again over its held nodes as a whole, a job could move a member to another of
    them, where room for two comes after the start it was promised by the room for one (these
    traces broke one promise each that way)."""
    trace_sim.quiet_logs()
    shape = replace(TINY, hours=1.0)
    [variant] = [v for v in trace_sim.VARIANTS if v.name == "guard + backfill"]
    outcome = run_variant(shape, make_trace(shape, seed), variant, seed=seed, tick=5.0)
    assert outcome.promised
    assert trace_sim.broken_promises(outcome) == 0, outcome.promised
