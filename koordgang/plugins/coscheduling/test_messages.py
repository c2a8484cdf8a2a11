"""What waiting gang members are told after an attempt, and when their gang timed out."""

from __future__ import annotations

import pytest

from koordgang.model.gang import GROUPS_KEY, MODE_KEY, WAITING_TIME_KEY
from koordgang.plugins.coscheduling import messages as say
from koordgang.plugins.coscheduling.planner import GangPlan, GroupPlan
from koordgang.plugins.coscheduling.test_planner import Attempt, cluster, gang
from koordgang.state.gangs import GangRegistry
from koordgang.state.test_gangs import gang_of, member, registry

NONSTRICT = {MODE_KEY: "NonStrict"}
GROUP_AB = {GROUPS_KEY: '["ns/a", "ns/b"]'}
NO_CPU_3 = "0/3 nodes are available: 3 Insufficient cpu."


def hold(attempt: Attempt, gangs: GangRegistry) -> None:
    """Keeps the plan's placements as reservations, as a NonStrict attempt does."""
    for gang_plan in attempt.plan.gangs:
        for pod, node in gang_plan.placed:
            gang_of(gangs, gang_plan.gang.key).reserve(pod.uid, node, 1.0)


def test_a_short_gang_says_how_far_it_got_and_why_the_next_member_found_no_node() -> None:
    attempt = Attempt(registry(*gang(4, 4)), cluster(3))

    assert say.unsatisfied(attempt.plan, attempt.plan.gangs[0]) == (
        f"gang ns/a: 3/4 members placed, min 4; {NO_CPU_3}"
    )


def test_created_members_exclude_finished_and_terminating_ones() -> None:
    pods = [
        *gang(4, 4),
        member("a-done", min_available="4", node="n9", phase="Succeeded"),
        member("a-gone", min_available="4", deleting=True),
    ]
    attempt = Attempt(registry(*pods), cluster(3))

    assert say.created_count(attempt.plan.gangs[0].gang) == 4
    assert say.unsatisfied(attempt.plan, attempt.plan.gangs[0]) == (
        f"gang ns/a: 3/4 members placed, min 4; {NO_CPU_3}"
    )


def test_a_satisfied_partner_says_which_gang_it_waits_for() -> None:
    gangs = registry(
        *gang(2, 2, name="a", annotations=GROUP_AB), *gang(2, 2, name="b", annotations=GROUP_AB)
    )
    attempt = Attempt(gangs, cluster(3), ("ns/a", "ns/b"))
    plan_a, plan_b = attempt.plan.gangs

    assert say.unsatisfied(attempt.plan, plan_a) == (
        f"gang ns/a waits for ns/b in its group: ns/b has 1/2 members placed, min 2; {NO_CPU_3}"
    )
    assert say.unsatisfied(attempt.plan, plan_b) == (
        f"gang ns/b: 1/2 members placed, min 2; {NO_CPU_3}"
    )


def test_a_gang_a_strict_attempt_never_reached_says_which_gang_it_waits_for() -> None:
    # The Strict plan stops at ns/a, so ns/b's members were never tried: telling them
    # "gang ns/b: 0/2 members placed, min 2" with no reason blames ns/b for nothing.
    gangs = registry(
        *gang(2, 2, name="a", annotations=GROUP_AB), *gang(2, 2, name="b", annotations=GROUP_AB)
    )
    attempt = Attempt(gangs, cluster(1), ("ns/a", "ns/b"))
    plan_b = attempt.plan.gangs[1]
    assert attempt.tried == ["a-0", "a-1"]

    assert say.unsatisfied(attempt.plan, plan_b) == (
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
    gangs = registry(*gang(4, 4, annotations=annotations))
    attempt = Attempt(gangs, cluster(3))
    hold(attempt, gangs)

    assert say.unsatisfied(attempt.plan, attempt.plan.gangs[0]) == (
        f"gang ns/a: 3/4 members placed, min 4 (holding 3 reservation(s) for at most {shown}); "
        f"{NO_CPU_3}"
    )


@pytest.mark.parametrize(
    ("annotations", "hold_placements"),
    [
        pytest.param({WAITING_TIME_KEY: "10s"}, True, id="Strict never mentions holding"),
        pytest.param({**NONSTRICT, WAITING_TIME_KEY: "10s"}, False, id="NonStrict holding none"),
    ],
)
def test_no_holding_suffix_without_nonstrict_reservations(
    annotations: dict[str, str], hold_placements: bool
) -> None:
    gangs = registry(*gang(4, 4, annotations=annotations))
    attempt = Attempt(gangs, cluster(3))
    if hold_placements:
        hold(attempt, gangs)

    assert say.unsatisfied(attempt.plan, attempt.plan.gangs[0]) == (
        f"gang ns/a: 3/4 members placed, min 4; {NO_CPU_3}"
    )


def test_a_short_gang_without_a_failure_gives_only_its_progress() -> None:
    gangs = registry(*gang(4, 4))
    gang_plan = GangPlan(gang_of(gangs), 4, 1)

    assert say.unsatisfied(GroupPlan([gang_plan], True), gang_plan) == (
        "gang ns/a: 1/4 members placed, min 4"
    )


def test_the_culprit_is_the_first_short_gang_that_failed_to_place_a_member() -> None:
    gangs = registry(*gang(1, 1, name="a"), *gang(1, 1, name="b"), *gang(1, 1, name="c"))
    a = GangPlan(gang_of(gangs, "ns/a"), 1, 1)
    b = GangPlan(gang_of(gangs, "ns/b"), 1, 0)
    c = GangPlan(gang_of(gangs, "ns/c"), 1, 0, failed=[member("c-0", "c", min_available="1")])

    assert say.culprit(GroupPlan([a, b, c], False)).gang.key == "ns/c"
    assert say.culprit(GroupPlan([a, b], False)).gang.key == "ns/b"
    assert say.culprit(GroupPlan([a], False)).gang.key == "ns/a"


@pytest.mark.parametrize(
    ("waiting_time", "shown"), [("10s", "10s"), ("1h30m", "1h30m0s"), (None, "10m0s")]
)
def test_timed_out_says_after_how_long_and_what_to_do(waiting_time: str | None, shown: str) -> None:
    annotations = {WAITING_TIME_KEY: waiting_time} if waiting_time is not None else {}
    gangs = registry(*gang(2, 4, annotations=annotations))

    assert say.timed_out(gang_of(gangs)) == (
        f"gang ns/a timed out after {shown} without reaching min 4: its reservations were "
        "released and its pods will not be scheduled again (delete and recreate them to retry)"
    )
