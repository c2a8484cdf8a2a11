"""What waiting gang members are told after an attempt, and when their gang timed out."""

from __future__ import annotations

import pytest

from koordgang.framework.group import GroupPart, GroupPlan, PartPlan, PodResult
from koordgang.framework.status import Status
from koordgang.model.koordinator import GROUPS_KEY, MODE_KEY, WAITING_TIME_KEY
from koordgang.plugins.coscheduling import messages as say
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import Gang
from koordgang.state.snapshot import Snapshot
from koordgang.testing.builders import cluster, gang, gang_of, member, registry
from koordgang.testing.cycles import CycleHarness

NONSTRICT = {MODE_KEY: "NonStrict"}
GROUP_AB = {GROUPS_KEY: '["ns/a", "ns/b"]'}
NO_CPU_3 = "0/3 nodes are available: 3 Insufficient cpu."


def attempt(scheduler: CycleHarness, trigger: str = "a-0") -> GroupPlan:
    """The placement of ``trigger``'s group in one cycle, as PostFilter and Permit see it."""
    plan = scheduler.cycle(trigger).plan
    assert plan is not None
    return plan


def unsatisfied(scheduler: CycleHarness, plan: GroupPlan, index: int = 0, holding: int = 0) -> str:
    """What the members of the ``index``-th gang of ``plan`` are told."""
    own = plan.parts[index]
    blamed = say.culprit(plan)
    return say.unsatisfied(
        plan,
        own,
        gang_of(scheduler.gangs, own.part.key),
        gang_of(scheduler.gangs, blamed.part.key),
        holding,
    )


def test_a_short_gang_says_how_far_it_got_and_why_the_next_member_found_no_node() -> None:
    scheduler = CycleHarness(gang("a", 4, 4), cluster(3, cpu="1"))

    assert unsatisfied(scheduler, attempt(scheduler)) == (
        f"gang ns/a: 3/4 members placed, min 4; {NO_CPU_3}"
    )


def test_created_members_exclude_finished_and_terminating_ones() -> None:
    pods = [
        *gang("a", 4, 4),
        member("a-done", min_available="4", node="n9", phase="Succeeded"),
        member("a-gone", min_available="4", deleting=True),
    ]
    scheduler = CycleHarness(pods, cluster(3, cpu="1"))

    assert say.created_count(gang_of(scheduler.gangs)) == 4
    assert unsatisfied(scheduler, attempt(scheduler)) == (
        f"gang ns/a: 3/4 members placed, min 4; {NO_CPU_3}"
    )


def test_a_satisfied_partner_says_which_gang_it_waits_for() -> None:
    pods = [
        *gang("a", 2, 2, extra=GROUP_AB),
        *gang("b", 2, 2, extra=GROUP_AB),
    ]
    scheduler = CycleHarness(pods, cluster(3, cpu="1"))
    plan = attempt(scheduler)

    assert unsatisfied(scheduler, plan, 0) == (
        f"gang ns/a waits for ns/b in its group: ns/b has 1/2 members placed, min 2; {NO_CPU_3}"
    )
    assert unsatisfied(scheduler, plan, 1) == f"gang ns/b: 1/2 members placed, min 2; {NO_CPU_3}"


def test_a_gang_a_strict_attempt_never_reached_says_which_gang_it_waits_for() -> None:
    # The Strict attempt stops at ns/a, so ns/b's members were never tried: telling them
    # "gang ns/b: 0/2 members placed, min 2" with no reason blames ns/b for nothing.
    pods = [
        *gang("a", 2, 2, extra=GROUP_AB),
        *gang("b", 2, 2, extra=GROUP_AB),
    ]
    scheduler = CycleHarness(pods, cluster(1, cpu="1"))
    plan = attempt(scheduler)
    assert [p.name for p in plan.parts[1].skipped] == ["b-0", "b-1"]

    assert unsatisfied(scheduler, plan, 1) == (
        "gang ns/b waits for ns/a in its group: ns/a has 1/2 members placed, min 2; "
        "0/1 nodes are available: 1 Insufficient cpu."
    )


@pytest.mark.parametrize(
    ("waiting_time", "shown"),
    [("10s", "10s"), ("90s", "1m30s"), ("2h", "2h0m0s"), (None, "10m0s")],
)
def test_a_nonstrict_gang_says_how_many_reservations_it_holds_and_for_how_long(
    waiting_time: str | None, shown: str
) -> None:
    annotations = dict(NONSTRICT)
    if waiting_time is not None:
        annotations[WAITING_TIME_KEY] = waiting_time
    scheduler = CycleHarness(gang("a", 4, 4, extra=annotations), cluster(3, cpu="1"))

    assert unsatisfied(scheduler, attempt(scheduler), holding=3) == (
        f"gang ns/a: 3/4 members placed, min 4 (holding 3 reservation(s) for at most {shown}); "
        f"{NO_CPU_3}"
    )


def test_a_gang_holding_while_it_waits_for_a_partner_says_so_right_after_its_name() -> None:
    pods = [
        *gang("a", 2, 2, extra={**GROUP_AB, **NONSTRICT}),
        *gang("b", 2, 2, extra={**GROUP_AB, **NONSTRICT}),
    ]
    scheduler = CycleHarness(pods, cluster(3, cpu="1"))

    assert unsatisfied(scheduler, attempt(scheduler), 0, holding=2) == (
        "gang ns/a (holding 2 reservation(s) for at most 10m0s) waits for ns/b in its group: "
        f"ns/b has 1/2 members placed, min 2; {NO_CPU_3}"
    )


@pytest.mark.parametrize(
    ("annotations", "holding"),
    [
        pytest.param({WAITING_TIME_KEY: "10s"}, 3, id="Strict never mentions holding"),
        pytest.param({**NONSTRICT, WAITING_TIME_KEY: "10s"}, 0, id="NonStrict holding none"),
    ],
)
def test_no_holding_suffix_without_nonstrict_reservations(
    annotations: dict[str, str], holding: int
) -> None:
    scheduler = CycleHarness(gang("a", 4, 4, extra=annotations), cluster(3, cpu="1"))

    assert unsatisfied(scheduler, attempt(scheduler), holding=holding) == (
        f"gang ns/a: 3/4 members placed, min 4; {NO_CPU_3}"
    )


def plan_of(*parts: PartPlan) -> GroupPlan:
    return GroupPlan(Snapshot(SchedulerCache()), list(parts))


def part(key: str, minimum: int, counted: int, *, failed: bool = False) -> PartPlan:
    plan = PartPlan(GroupPart(key, [], minimum=minimum, counted=counted))
    if failed:
        pod = member(f"{key[-1]}-0", key[-1], min_available=str(minimum))
        plan.failed.append(PodResult(pod, None, Status.unschedulable("X", "no room")))
    return plan


def test_a_short_gang_without_a_failure_gives_only_its_progress() -> None:
    gangs = registry(*gang("a", 4, 4))
    own = part("ns/a", 4, 1)

    assert say.unsatisfied(plan_of(own), own, gang_of(gangs), gang_of(gangs), 0) == (
        "gang ns/a: 1/4 members placed, min 4"
    )


def test_the_culprit_is_the_first_short_gang_that_failed_to_place_a_member() -> None:
    a = part("ns/a", 1, 1)
    b = part("ns/b", 1, 0)
    c = part("ns/c", 1, 0, failed=True)

    assert say.culprit(plan_of(a, b, c)) is c
    assert say.culprit(plan_of(a, b)) is b
    assert say.culprit(plan_of(a)) is a


def test_progress_counts_what_counted_before_and_what_was_placed() -> None:
    assert say.progress(part("ns/a", 4, 3), 5) == "3/5 members placed, min 4"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),
        (59.9, "59s"),
        (60, "1m0s"),
        (3599, "59m59s"),
        (3600, "1h0m0s"),
        (90061, "25h1m1s"),
    ],
)
def test_durations_read_like_go(seconds: float, shown: str) -> None:
    assert say.duration(seconds) == shown


@pytest.mark.parametrize(
    ("waiting_time", "shown"), [("10s", "10s"), ("1h30m", "1h30m0s"), (None, "10m0s")]
)
def test_timed_out_says_after_how_long_and_what_to_do(waiting_time: str | None, shown: str) -> None:
    annotations = {WAITING_TIME_KEY: waiting_time} if waiting_time is not None else {}
    gangs = registry(*gang("a", 2, 4, extra=annotations))

    assert say.timed_out(gang_of(gangs)) == (
        f"gang ns/a timed out after {shown} without reaching min 4: its reservations were "
        "released and its pods will not be scheduled again (delete and recreate them to retry)"
    )


def test_a_replacement_of_a_timed_out_gang_is_told_to_wait_for_the_old_members_to_go() -> None:
    assert say.timed_out_replacement(gang_of(registry(*gang("a", 2, 4)))) == (
        "gang ns/a timed out; this pod will be scheduled once the gang's timed-out members "
        "are deleted"
    )


def test_settings_that_fell_back_to_a_default_are_named_but_fatal_ones_are_not() -> None:
    fine: Gang = gang_of(registry(*gang("a", 2, 2)))
    typo = gang_of(registry(*gang("a", 2, 2, extra={MODE_KEY: "Sometimes"})))
    broken = gang_of(registry(member("a-0", min_available="x")))

    assert say.with_notes(fine, "waiting") == "waiting"
    assert say.with_notes(typo, "waiting") == (
        'waiting (ignored settings: gang.scheduling.koordinator.sh/mode="Sometimes" is not '
        "Strict or NonStrict; using Strict)"
    )
    assert say.with_notes(broken, "waiting") == "waiting"
