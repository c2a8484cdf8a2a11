"""run_cycle: one group decided over one snapshot, and what the engine is told to do.

Real cache, snapshots and PodRunner; small fake group plugins whose answers are fixed, since what
is under test is how the cycle acts on them.
"""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.framework.cycle import CycleOutcome, run_cycle
from koordgang.framework.framework import Framework, prebuilt
from koordgang.framework.group import GroupPart, SchedulingGroup
from koordgang.framework.results import Decision, PermitResult, PostFilterResult
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.group_key import GroupKey
from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Placement, Snapshot, StaleSnapshotError
from koordgang.testing.builders import cache_of, node, pod
from koordgang.testing.plugins import (
    CountingFit,
    FixedPermit,
    FixedPostFilter,
    FreeCpuScore,
    GroupGate,
    Journal,
    NameSort,
    RecordingReserve,
)

NOW = 500.0


def framework(*plugins: Any) -> tuple[Framework, CountingFit]:
    fit = CountingFit()
    return Framework(prebuilt([NameSort(), fit, FreeCpuScore(), *plugins])), fit


def two_nodes() -> SchedulerCache:
    return cache_of(node("n1", cpu="2"), node("n2", cpu="2"))


def gang(*members: PodInfo, minimum: int | None = None, strict: bool = False) -> SchedulingGroup:
    part = GroupPart(
        "ns/a", list(members), minimum=len(members) if minimum is None else minimum, strict=strict
    )
    return SchedulingGroup(GroupKey(("ns/g",)), [part], members[0])


A0, A1, A2 = pod("a-0"), pod("a-1"), pod("a-2")
HUGE = pod("huge", cpu="3")


def assumed(cache: SchedulerCache, *pods: PodInfo) -> list[str | None]:
    return [cache.node_of(p.uid) if cache.is_assumed(p.uid) else None for p in pods]


def run(fw: Framework, group: SchedulingGroup, cache: SchedulerCache) -> CycleOutcome:
    return run_cycle(fw, group, Snapshot(cache), NOW)


# -- a pod alone -------------------------------------------------------------------------------


def test_a_single_pod_is_placed_bound_and_assumed_in_the_cache() -> None:
    cache = cache_of(node("n1", cpu="1"), node("n2", cpu="2"))
    fw, _ = framework()
    p = pod("p")
    snapshot = Snapshot(cache)

    outcome = run_cycle(fw, SchedulingGroup.single(p), snapshot, NOW)

    assert outcome.status == SUCCESS
    assert outcome.bind == [Placement(p, "n2")]  # the most free cpu left
    assert (outcome.hold, outcome.unplaced, outcome.release_held) == ([], {}, False)
    assert outcome.plan is not None
    assert cache.is_assumed(p.uid)
    assert cache.node_of(p.uid) == "n2"
    with pytest.raises(StaleSnapshotError):
        snapshot.check()  # committed: the next cycle takes a new snapshot


def test_a_single_pod_that_fits_nowhere_is_told_why_in_kube_schedulers_words() -> None:
    cache = two_nodes()
    journal = Journal()
    fw, _ = framework(RecordingReserve("Reserve", journal), FixedPermit("Permit", _allow()))
    before = cache.change_position

    outcome = run(fw, SchedulingGroup.single(HUGE), cache)

    message = "0/2 nodes are available: 2 Insufficient cpu."
    assert outcome.status.code is Code.UNSCHEDULABLE
    assert outcome.status.message() == message
    assert outcome.unplaced == {HUGE.uid: message}
    assert (outcome.bind, outcome.hold) == ([], [])
    assert not cache.is_assumed(HUGE.uid)
    assert cache.change_position == before
    assert journal == []  # nothing to reserve or permit


def _allow(*also: str) -> PermitResult:
    return PermitResult(Decision.ALLOW, also_allow=also)


# -- group PreFilter ---------------------------------------------------------------------------


def test_a_group_pre_filter_rejection_leaves_every_member_unplaced_with_its_message() -> None:
    cache = two_nodes()
    journal = Journal()
    refusal = Status.unschedulable("Gang", "gang ns/a: 3/4 members, min 4")
    fw, fit = framework(GroupGate("Gang", refusal, journal), RecordingReserve("R", journal))

    outcome = run(fw, gang(A0, A1, A2), cache)

    assert outcome.status == refusal
    assert outcome.unplaced == dict.fromkeys((A0.uid, A1.uid, A2.uid), refusal.message())
    assert outcome.plan is None
    assert fit.calls == 0  # no member was even tried
    assert journal == ["Gang.pre_filter_group"]
    assert assumed(cache, A0, A1, A2) == [None, None, None]


# -- a whole group -----------------------------------------------------------------------------


def test_a_group_that_fits_and_is_allowed_binds_every_member_assumed_in_order() -> None:
    cache = two_nodes()
    journal = Journal()
    reserve = RecordingReserve("R", journal)
    fw, _ = framework(reserve, FixedPermit("Permit", _allow(), journal))

    outcome = run(fw, gang(A0, A1, A2), cache)

    assert outcome.status == SUCCESS
    assert [p.pod.name for p in outcome.bind] == ["a-0", "a-1", "a-2"]
    assert reserve.placements == [outcome.bind]
    assert journal == ["R.reserve", "Permit.permit"]
    assert [cache.node_of(p.pod.uid) for p in outcome.bind] == [p.node_name for p in outcome.bind]
    assert all(cache.is_assumed(p.pod.uid) for p in outcome.bind)
    assert outcome.unplaced == {}


def test_wait_holds_the_placements_until_the_deadline_assumed_in_the_cache() -> None:
    cache = two_nodes()
    fw, _ = framework(
        FixedPermit(
            "Gang",
            PermitResult(
                Decision.WAIT,
                deadline=NOW + 60,
                messages={A0.uid: "waiting for a-2", "uid-someone-else": "not held"},
            ),
        )
    )

    outcome = run(fw, gang(A0, A1, minimum=3), cache)

    assert outcome.status.code is Code.WAIT
    assert [p.pod.name for p in outcome.hold] == ["a-0", "a-1"]
    assert outcome.deadline == NOW + 60
    assert outcome.bind == []
    assert assumed(cache, A0, A1) == [p.node_name for p in outcome.hold]
    # Only pods that are (or stay) held are told why they wait.
    assert outcome.explain == {A0.uid: "waiting for a-2"}


def test_wait_also_explains_pods_held_in_earlier_cycles() -> None:
    cache = two_nodes()
    earlier = pod("a-9")
    fw, _ = framework(
        FixedPermit(
            "Gang",
            PermitResult(Decision.WAIT, deadline=NOW, messages={earlier.uid: "still waiting"}),
        )
    )
    fw.waiting.add(earlier, "n1", group=GroupKey(("ns/g",)), part="ns/a", since=0.0, deadline=NOW)

    outcome = run(fw, gang(A0, minimum=3), cache)

    assert outcome.explain == {earlier.uid: "still waiting"}


def test_a_partly_placed_group_that_waits_holds_what_fit_and_tells_the_rest_why() -> None:
    cache = cache_of(node("n1", cpu="2"))
    fw, _ = framework(FixedPermit("Gang", PermitResult(Decision.WAIT, deadline=NOW + 5)))
    big, small = pod("a-big", cpu="3"), pod("a-small")

    outcome = run(fw, gang(small, big, minimum=2), cache)

    assert outcome.status.code is Code.WAIT
    assert outcome.hold == [Placement(small, "n1")]
    assert outcome.unplaced == {big.uid: "0/1 nodes are available: 1 Insufficient cpu."}
    assert assumed(cache, small, big) == ["n1", None]


@pytest.mark.parametrize("how", ["permit rejects", "post filter drops"])
def test_a_rejected_or_dropped_group_keeps_nothing_and_releases_what_it_held(how: str) -> None:
    cache = cache_of(node("n1", cpu="2"))
    journal = Journal()
    told = {A0.uid: "gang ns/a gave up"}
    members: list[PodInfo]
    if how == "permit rejects":
        fixed: Any = FixedPermit(
            "Gang", PermitResult(Decision.REJECT, messages=told, plugin="Gang"), journal
        )
        members = [A0, A1]
    else:
        fixed = FixedPostFilter(
            "Gang",
            PostFilterResult(Status.unschedulable("Gang"), drop_placements=True, messages=told),
            journal,
        )
        members = [A0, A1, pod("a-big", cpu="3")]
    fw, _ = framework(RecordingReserve("R", journal), fixed)
    position = cache.change_position

    outcome = run(fw, gang(*members, strict=True), cache)

    assert outcome.release_held is True
    assert (outcome.bind, outcome.hold) == ([], [])
    assert set(outcome.unplaced) == {m.uid for m in members}
    assert outcome.unplaced[A0.uid] == "gang ns/a gave up"
    assert outcome.status.code is Code.UNSCHEDULABLE
    assert assumed(cache, *members) == [None] * len(members)
    assert cache.change_position == position
    if how == "permit rejects":
        assert journal == ["R.reserve", "Gang.permit", "R.unreserve(ns/g, 2, rejected)"]
        assert outcome.unplaced[A1.uid] == ""  # placed, nothing to say but the release
    else:
        assert journal == ["Gang.post_filter"]  # neither reserved nor permitted
        assert outcome.unplaced[A1.uid] == ""  # it fit: the plugin's messages speak for it
        big = members[2].uid
        assert outcome.unplaced[big] == "0/1 nodes are available: 1 Insufficient cpu."


def test_a_post_filter_that_makes_room_leaves_the_members_waiting_for_it() -> None:
    cache = cache_of(node("n1", cpu="2"))
    journal = Journal()
    fw, _ = framework(
        FixedPostFilter(
            "Preempt",
            PostFilterResult(SUCCESS, nominated={HUGE.uid: "n1"}, messages={HUGE.uid: "victims"}),
            journal,
        ),
        RecordingReserve("R", journal),
    )

    outcome = run(fw, gang(A0, HUGE), cache)

    assert outcome.status == Status(Code.UNSCHEDULABLE, ("waiting for preemption",))
    assert outcome.nominated == {HUGE.uid: "n1"}
    assert outcome.unplaced[HUGE.uid] == "victims"
    assert set(outcome.unplaced) == {A0.uid, HUGE.uid}
    assert assumed(cache, A0, HUGE) == [None, None]
    assert journal == ["Preempt.post_filter"]


def test_a_failed_reserve_keeps_nothing_and_tells_every_member() -> None:
    cache = two_nodes()
    refusal = Status.unschedulable("Quota", "quota ns exceeded")
    fw, _ = framework(RecordingReserve("Quota", Journal(), refusal))

    outcome = run(fw, gang(A0, A1), cache)

    assert outcome.status == refusal
    assert outcome.unplaced == dict.fromkeys((A0.uid, A1.uid), "quota ns exceeded")
    assert assumed(cache, A0, A1) == [None, None]


def test_allow_also_lets_pods_held_in_earlier_cycles_bind() -> None:
    cache = two_nodes()
    fw, _ = framework(FixedPermit("Gang", _allow("uid-held-1", "uid-held-2")))

    outcome = run(fw, gang(A0), cache)

    assert outcome.status == SUCCESS
    assert outcome.allow_waiting == ("uid-held-1", "uid-held-2")
    assert [p.pod.name for p in outcome.bind] == ["a-0"]
    assert cache.is_assumed(A0.uid)


def test_allow_with_nothing_new_placed_still_lets_the_held_pods_bind() -> None:
    cache = cache_of(node("n1", cpu="2"))
    fw, _ = framework(FixedPermit("Gang", _allow("uid-held")))

    outcome = run(fw, gang(HUGE, minimum=1), cache)

    assert outcome.status == SUCCESS
    assert outcome.bind == []
    assert outcome.allow_waiting == ("uid-held",)
    assert outcome.unplaced == {HUGE.uid: "0/1 nodes are available: 1 Insufficient cpu."}
