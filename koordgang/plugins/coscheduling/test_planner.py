"""plan_group: all pending members of a GangGroup placed together over one snapshot."""

from __future__ import annotations

import random
from typing import cast

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.runner import Framework, ScheduleResult
from koordgang.model.gang import (
    GROUPS_KEY,
    MATCH_POLICY_KEY,
    MODE_KEY,
    NETWORK_TOPOLOGY_INDEX_KEY,
    TOTAL_NUMBER_KEY,
    topology_index,
)
from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo
from koordgang.plugins.coscheduling import GroupPlan, plan_group
from koordgang.plugins.coscheduling.planner import member_order
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import Gang, GangRegistry
from koordgang.state.snapshot import Placement, Snapshot
from koordgang.state.test_gangs import gang_of, member, registry

NONSTRICT = {MODE_KEY: "NonStrict"}
INSUFFICIENT_CPU_3 = "0/3 nodes are available: 3 Insufficient cpu."


def node(name: str, *, cpu: str = "1", taints: list[dict[str, str]] | None = None) -> NodeInfo:
    return parse_node(
        {
            "metadata": {"name": name},
            "spec": {"taints": taints or []},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def cluster(count: int, *, cpu: str = "1", extra: tuple[NodeInfo, ...] = ()) -> SchedulerCache:
    cache = SchedulerCache()
    for i in range(count):
        cache.upsert_node(node(f"n{i + 1}", cpu=cpu))
    for info in extra:
        cache.upsert_node(info)
    return cache


class Recorder:
    """Stands in for the framework: passes every call on and remembers which pods it tried."""

    def __init__(self, gangs: GangRegistry) -> None:
        self.inner = default_framework(Settings(), gangs, rng=random.Random(7))
        self.tried: list[str] = []

    def schedule_pod(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> ScheduleResult:
        self.tried.append(pod.name)
        return self.inner.schedule_pod(state, pod, snapshot)


class Attempt:
    """One plan over a fresh snapshot of ``cache`` for the gangs named by ``keys``."""

    def __init__(
        self,
        gangs: GangRegistry,
        cache: SchedulerCache,
        keys: tuple[str, ...] = ("ns/a",),
        *,
        by_index: bool = False,
    ) -> None:
        self.framework = Recorder(gangs)
        self.snapshot = Snapshot(cache)
        pending: list[tuple[Gang, list[PodInfo]]] = [
            (gang_of(gangs, key), gang_of(gangs, key).pending_members()) for key in keys
        ]
        if by_index:
            self.plan = plan_group(
                cast(Framework, self.framework),
                self.snapshot,
                pending,
                index_of=lambda p: topology_index(p.annotations)[0],
            )
        else:
            self.plan = plan_group(cast(Framework, self.framework), self.snapshot, pending)

    @property
    def tried(self) -> list[str]:
        return self.framework.tried

    def placed(self, index: int = 0) -> list[str]:
        return [pod.name for pod, _ in self.plan.gangs[index].placed]

    def failed(self, index: int = 0) -> list[str]:
        return [pod.name for pod in self.plan.gangs[index].failed]


def gang(
    count: int,
    min_available: int,
    *,
    name: str = "a",
    annotations: dict[str, str] | None = None,
    cpu: str = "1",
) -> list[PodInfo]:
    return [
        member(
            f"{name}-{i}", name, min_available=str(min_available), annotations=annotations, cpu=cpu
        )
        for i in range(count)
    ]


# -- one gang ------------------------------------------------------------------------------------


def test_a_gang_of_four_on_room_for_four_is_satisfied_with_four_placements() -> None:
    attempt = Attempt(registry(*gang(4, 4)), cluster(4))
    plan = attempt.plan

    assert plan.satisfied is True
    assert plan.strict is True
    assert attempt.placed() == ["a-0", "a-1", "a-2", "a-3"]
    assert sorted(node for _, node in plan.placements()) == ["n1", "n2", "n3", "n4"]
    assert attempt.snapshot.placements == [Placement(p, n) for p, n in plan.placements()]
    gang_plan = plan.gangs[0]
    assert (gang_plan.counted, gang_plan.short, gang_plan.failed) == (4, 0, [])
    assert gang_plan.first_failure == ""


@pytest.mark.parametrize(
    ("annotations", "strict"), [({}, True), ({MODE_KEY: "Strict"}, True), (NONSTRICT, False)]
)
def test_a_gang_of_four_on_room_for_three_is_short_and_says_why(
    annotations: dict[str, str], strict: bool
) -> None:
    attempt = Attempt(registry(*gang(4, 4, annotations=annotations)), cluster(3))
    plan = attempt.plan
    gang_plan = plan.gangs[0]

    assert plan.satisfied is False
    assert plan.strict is strict
    assert attempt.placed() == ["a-0", "a-1", "a-2"]
    assert attempt.failed() == ["a-3"]
    assert gang_plan.short == 1
    assert gang_plan.progress(4) == "3/4 members placed, min 4"
    assert gang_plan.first_failure == INSUFFICIENT_CPU_3
    assert len(attempt.snapshot.placements) == 3


@pytest.mark.parametrize(
    ("annotations", "tried", "placed", "failed"),
    [
        pytest.param({}, ["a-0"], [], ["a-0", "a-1", "a-2", "a-3"], id="Strict stops at once"),
        pytest.param(
            NONSTRICT,
            ["a-0", "a-1", "a-2", "a-3"],
            ["a-1", "a-2", "a-3"],
            ["a-0"],
            id="NonStrict tries every member",
        ),
    ],
)
def test_strict_fails_fast_once_the_minimum_is_out_of_reach(
    annotations: dict[str, str], tried: list[str], placed: list[str], failed: list[str]
) -> None:
    big = member("a-0", min_available="4", annotations=annotations, cpu="2")
    small = [member(f"a-{i}", min_available="4", annotations=annotations) for i in (1, 2, 3)]
    attempt = Attempt(registry(big, *small), cluster(3))

    assert attempt.tried == tried
    assert attempt.placed() == placed
    assert attempt.failed() == failed
    assert attempt.plan.satisfied is False
    assert attempt.plan.gangs[0].first_failure == "0/3 nodes are available: 3 Insufficient cpu."
    assert len(attempt.snapshot.placements) == len(placed)


def test_strict_keeps_trying_while_the_minimum_is_still_reachable() -> None:
    attempt = Attempt(registry(*gang(5, 3)), cluster(2))

    # a-2 fails with 2 placed and 2 left: min 3 is still reachable. a-3 has a-2's shape, so
    # it fails unseen, and then 2 + 1 < 3: a-4 is not tried.
    assert attempt.tried == ["a-0", "a-1", "a-2"]
    assert attempt.placed() == ["a-0", "a-1"]
    assert attempt.failed() == ["a-2", "a-3", "a-4"]
    assert attempt.plan.gangs[0].progress(5) == "2/5 members placed, min 3"


def test_a_total_number_above_min_is_satisfied_once_min_members_fit() -> None:
    pods = gang(4, 2, annotations={TOTAL_NUMBER_KEY: "4"})
    gangs = registry(*pods)
    assert gang_of(gangs).spec.total_number == 4
    attempt = Attempt(gangs, cluster(2))

    assert attempt.plan.satisfied is True
    assert attempt.placed() == ["a-0", "a-1"]
    assert attempt.failed() == ["a-2", "a-3"]
    assert attempt.tried == ["a-0", "a-1", "a-2"]


def test_the_failure_reads_like_kube_scheduler_with_every_reason_counted() -> None:
    tainted = node("gpu-1", cpu="8", taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}])
    attempt = Attempt(registry(*gang(3, 3)), cluster(2, extra=(tainted,)))

    assert attempt.plan.gangs[0].first_failure == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {gpu: x}, 2 Insufficient cpu."
    )


# -- member order and the failure memo -----------------------------------------------------------


def ranked(name: str, index: str | None) -> PodInfo:
    annotations = {NETWORK_TOPOLOGY_INDEX_KEY: index} if index is not None else {}
    return member(name, min_available="6", annotations=annotations)


RANKED = [
    ranked("w-10", "10"),
    ranked("w-2", "2"),
    ranked("w-b", None),
    ranked("w-a", None),
    ranked("w-1", "1"),
    ranked("w-bad", "first"),
]


@pytest.mark.parametrize(
    ("by_index", "order"),
    [
        (True, ["w-1", "w-2", "w-10", "w-a", "w-b", "w-bad"]),
        (False, ["w-1", "w-10", "w-2", "w-a", "w-b", "w-bad"]),
    ],
)
def test_members_are_placed_by_network_topology_index_then_name(
    by_index: bool, order: list[str]
) -> None:
    attempt = Attempt(registry(*RANKED), cluster(6), by_index=by_index)

    assert attempt.tried == order
    assert attempt.placed() == order
    assert attempt.plan.satisfied is True


def test_member_order_puts_ranked_pods_first() -> None:
    def index_of(pod: PodInfo) -> int | None:
        return topology_index(pod.annotations)[0]

    keys = {p.name: member_order(p, index_of) for p in RANKED}

    assert keys["w-1"] == (0, 1, "w-1")
    assert keys["w-a"] == (1, 0, "w-a")
    assert keys["w-bad"] == (1, 0, "w-bad")


def test_pods_of_a_shape_that_failed_are_not_tried_again() -> None:
    attempt = Attempt(registry(*gang(6, 6, annotations=NONSTRICT)), cluster(2))

    assert attempt.tried == ["a-0", "a-1", "a-2"]
    assert attempt.placed() == ["a-0", "a-1"]
    assert attempt.failed() == ["a-2", "a-3", "a-4", "a-5"]
    assert attempt.plan.gangs[0].first_failure == "0/2 nodes are available: 2 Insufficient cpu."


def test_a_pod_of_another_shape_is_still_tried_after_a_failure() -> None:
    big = gang(4, 5, annotations=NONSTRICT)
    small = member("z-small", min_available="5", annotations=NONSTRICT, cpu="500m")
    attempt = Attempt(registry(*big, small), cluster(2, cpu="1500m"))

    assert attempt.tried == ["a-0", "a-1", "a-2", "z-small"]
    assert attempt.placed() == ["a-0", "a-1", "z-small"]
    assert attempt.failed() == ["a-2", "a-3"]


# -- what already counts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("room", "satisfied", "counted", "progress"),
    [(2, True, 4, "4/4 members placed, min 4"), (1, False, 3, "3/4 members placed, min 4")],
)
def test_existing_reservations_count_before_the_attempt(
    room: int, satisfied: bool, counted: int, progress: str
) -> None:
    gangs = registry(*gang(4, 4, annotations=NONSTRICT))
    gang_of(gangs).reserve("uid-ns-a-0", "n9", 1.0)
    gang_of(gangs).reserve("uid-ns-a-1", "n9", 1.0)
    attempt = Attempt(gangs, cluster(room))
    gang_plan = attempt.plan.gangs[0]

    assert gang_plan.counted_before == 2
    assert attempt.tried == ["a-2", "a-3"]
    assert attempt.plan.satisfied is satisfied
    assert gang_plan.counted == counted
    assert gang_plan.progress(4) == progress


@pytest.mark.parametrize(
    ("policy", "counted_before", "satisfied"),
    [("waiting-and-running", 2, True), ("only-waiting", 1, False)],
)
def test_bound_members_count_before_the_attempt_by_match_policy(
    policy: str, counted_before: int, satisfied: bool
) -> None:
    annotations = {MATCH_POLICY_KEY: policy}
    pods = [
        member("a-0", min_available="3", annotations=annotations, node="n9"),
        *[member(f"a-{i}", min_available="3", annotations=annotations) for i in (1, 2, 3)],
    ]
    gangs = registry(*pods)
    gang_of(gangs).reserve("uid-ns-a-1", "n9", 1.0)
    attempt = Attempt(gangs, cluster(1))

    assert attempt.plan.gangs[0].counted_before == counted_before
    assert attempt.plan.satisfied is satisfied


# -- a GangGroup -------------------------------------------------------------------------------


def group(mode_a: dict[str, str], mode_b: dict[str, str]) -> GangRegistry:
    groups = {GROUPS_KEY: '["ns/a", "ns/b"]'}
    return registry(
        *gang(2, 2, name="a", annotations={**groups, **mode_a}),
        *gang(2, 2, name="b", annotations={**groups, **mode_b}),
    )


@pytest.mark.parametrize(
    ("room", "satisfied", "placed_a", "placed_b"),
    [
        (4, True, ["a-0", "a-1"], ["b-0", "b-1"]),
        (3, False, ["a-0", "a-1"], ["b-0"]),
        (1, False, ["a-0"], []),
    ],
)
def test_a_group_of_two_gangs_is_satisfied_only_if_both_reach_min(
    room: int, satisfied: bool, placed_a: list[str], placed_b: list[str]
) -> None:
    attempt = Attempt(group({}, {}), cluster(room), ("ns/a", "ns/b"))
    plan = attempt.plan

    assert plan.satisfied is satisfied
    assert attempt.placed(0) == placed_a
    assert attempt.placed(1) == placed_b
    assert [p.short for p in plan.gangs] == [2 - len(placed_a), 2 - len(placed_b)]
    assert [p for p, _ in plan.placements()] == [
        p for p, _ in plan.gangs[0].placed + plan.gangs[1].placed
    ]


def test_a_strict_group_stops_at_the_first_gang_that_cannot_reach_min() -> None:
    attempt = Attempt(group({}, {}), cluster(1), ("ns/a", "ns/b"))

    assert attempt.tried == ["a-0", "a-1"]
    assert attempt.failed(0) == ["a-1"]
    assert attempt.failed(1) == []
    assert attempt.plan.gangs[1].placed == []


def test_a_nonstrict_group_tries_every_gang() -> None:
    attempt = Attempt(group(NONSTRICT, NONSTRICT), cluster(1), ("ns/a", "ns/b"))

    assert attempt.plan.strict is False
    assert attempt.tried == ["a-0", "a-1", "b-0"]
    assert attempt.failed(0) == ["a-1"]
    assert attempt.failed(1) == ["b-0", "b-1"]


@pytest.mark.parametrize(
    ("mode_a", "mode_b", "strict"),
    [({}, {}, True), (NONSTRICT, {}, True), ({}, NONSTRICT, True), (NONSTRICT, NONSTRICT, False)],
)
def test_a_group_is_strict_if_any_of_its_gangs_is(
    mode_a: dict[str, str], mode_b: dict[str, str], strict: bool
) -> None:
    attempt = Attempt(group(mode_a, mode_b), cluster(4), ("ns/a", "ns/b"))

    assert attempt.plan.strict is strict
    assert isinstance(attempt.plan, GroupPlan)
