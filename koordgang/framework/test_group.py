"""SchedulingGroup, PartPlan, GroupPlan and PodResult: the shape of a group and of its plan."""

from __future__ import annotations

import pytest

from koordgang.framework.diagnosis import Diagnosis
from koordgang.framework.group import GroupPart, GroupPlan, PartPlan, PodResult, SchedulingGroup
from koordgang.framework.status import Code, Status
from koordgang.model.group_key import ALONE, GroupKey
from koordgang.state.snapshot import Placement, Snapshot
from koordgang.testing.builders import cache_of, pod

P, Q, R = pod("p"), pod("q"), pod("r")


def test_a_pod_alone_is_a_group_of_one_without_a_key() -> None:
    group = SchedulingGroup.single(P)

    assert group.key == ALONE
    assert group.trigger is P
    assert [(part.key, part.pending, part.minimum, part.strict) for part in group.parts] == [
        ("ns/p", [P], 1, False)
    ]
    assert list(group.members()) == [P]
    assert group.size == 1


def test_members_are_listed_part_by_part_in_order() -> None:
    group = SchedulingGroup(
        GroupKey(("ns/g",)), [GroupPart("ns/a", [Q, P]), GroupPart("ns/b", [R])], P
    )
    assert [p.name for p in group.members()] == ["q", "p", "r"]
    assert group.size == 3


@pytest.mark.parametrize(
    ("minimum", "counted", "placed", "short"),
    [(3, 0, 0, 3), (3, 1, 1, 1), (3, 2, 1, 0), (2, 0, 3, 0), (0, 0, 0, 0)],
)
def test_a_part_is_short_of_its_minimum_by_what_neither_counted_nor_placed_covers(
    minimum: int, counted: int, placed: int, short: int
) -> None:
    plan = PartPlan(
        GroupPart("ns/a", [], minimum=minimum, counted=counted),
        placed=[Placement(pod(f"m{i}"), "n1") for i in range(placed)],
    )
    assert plan.counted == counted + placed
    assert plan.short == short


def test_a_group_plan_is_satisfied_complete_and_lists_what_was_left() -> None:
    a = PartPlan(GroupPart("ns/a", [P, Q], minimum=1), placed=[Placement(P, "n1")])
    a.failed.append(PodResult(Q, None, Status.unschedulable("Fit", "Insufficient cpu")))
    b = PartPlan(GroupPart("ns/b", [R], minimum=0), skipped=[R])
    plan = GroupPlan(Snapshot(cache_of()), [a, b])

    assert plan.satisfied is True  # every part reached its minimum...
    assert plan.complete is False  # ...but not every member was placed
    assert plan.placements() == [Placement(P, "n1")]
    assert [p.name for p in plan.unplaced()] == ["q", "r"]
    assert plan.part("ns/b") is b
    assert plan.part("ns/c") is None
    assert a.first_failure == "Insufficient cpu"
    assert b.first_failure == ""


def test_an_empty_plan_is_complete_and_satisfied() -> None:
    plan = GroupPlan(Snapshot(cache_of()), [PartPlan(GroupPart("ns/a", [], minimum=0))])
    assert (plan.satisfied, plan.complete, plan.placements()) == (True, True, [])


@pytest.mark.parametrize(
    ("status", "diagnosis", "message"),
    [
        (Status(), None, ""),
        (Status.unschedulable("Gang", "gang says no"), None, "gang says no"),
        (Status(Code.UNSCHEDULABLE), Diagnosis(total_nodes=2), "0/2 nodes are available."),
        (
            Status.unschedulable("", "own words"),
            Diagnosis(total_nodes=2),
            "own words",
        ),
    ],
    ids=["placed", "reasons", "diagnosis", "reasons before diagnosis"],
)
def test_a_pod_result_speaks_with_its_reasons_else_its_diagnosis(
    status: Status, diagnosis: Diagnosis | None, message: str
) -> None:
    assert PodResult(P, None, status, diagnosis).message == message
