"""Coscheduling through a real Framework: what a gang's cycles bind, hold, give up and say.

The engine fake (``koordgang.testing.cycles.CycleHarness``) runs the default profile with real
objects (cache, gang registry, held room): pod events go through the engine's intake to the
plugin, a cycle groups the named pod with its pending partners and runs ``run_cycle``, and the
outcome is applied the way the engine applies it (held pods into the registry of waiting pods,
released ones forgotten). What a plugin asks of the engine is kept in ``asked``.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from koordgang.framework.cycle import CycleOutcome
from koordgang.framework.results import UnreserveReason
from koordgang.framework.status import Code
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.gangapis.koordinator import KoordinatorApi
from koordgang.gangapis.status import podgroup_status
from koordgang.model.group_key import ALONE, GroupKey
from koordgang.model.koordinator import (
    GROUPS_KEY,
    MATCH_POLICY_KEY,
    MODE_KEY,
    NETWORK_TOPOLOGY_INDEX_KEY,
    POD_GROUP_LABEL,
    TIMEOUT_KEY,
    TOTAL_NUMBER_KEY,
    WAITING_TIME_KEY,
    parse_podgroup,
)
from koordgang.model.objects import ObjectRef
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.coscheduling import Coscheduling, member_order
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.gangs import GangRegistry, GangState
from koordgang.testing.builders import (
    DEFAULT_WAIT,
    GPU,
    T0,
    cluster,
    gang,
    gang_of,
    member,
    node,
    podgroup_json,
    stamp,
)
from koordgang.testing.builders.gangs import PODGROUP_API
from koordgang.testing.clock import START
from koordgang.testing.cycles import CycleHarness

NONSTRICT = {MODE_KEY: "NonStrict"}
GROUP_AB = {GROUPS_KEY: '["ns/a", "ns/b"]'}
NO_CPU_1 = "0/1 nodes are available: 1 Insufficient cpu."
NO_CPU_2 = "0/2 nodes are available: 2 Insufficient cpu."
NO_CPU_3 = "0/3 nodes are available: 3 Insufficient cpu."


# -- builders ----------------------------------------------------------------------------------


def gpu_worker(name: str, gpus: int, *, gang_name: str = "a") -> PodInfo:
    """A member of PodGroup gang ``ns/<gang_name>`` asking for ``gpus`` GPUs."""
    return parse_pod(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": f"uid-ns-{name}",
                "creationTimestamp": stamp(0),
                "labels": {POD_GROUP_LABEL: gang_name},
                "annotations": {MODE_KEY: "NonStrict"},
            },
            "spec": {
                "schedulerName": "koord-scheduler",
                "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": "100m", GPU: str(gpus)}}}
                ],
            },
            "status": {"phase": "Pending"},
        }
    )


def bound(outcome: CycleOutcome) -> list[str]:
    return [p.pod.name for p in outcome.bind]


def held(outcome: CycleOutcome) -> list[str]:
    return [p.pod.name for p in outcome.hold]


def told(scheduler: CycleHarness, messages: Mapping[str, str]) -> dict[str, str]:
    return {scheduler.name_of(uid): text for uid, text in messages.items()}


# -- the profile -------------------------------------------------------------------------------


def test_the_default_profile_puts_coscheduling_at_every_gang_extension_point() -> None:
    scheduler = CycleHarness()
    framework = scheduler.framework
    plugin = scheduler.plugin(Coscheduling)

    assert framework.grouping is plugin
    for point in (
        framework.pre_enqueue,
        framework.group_pre_filters,
        framework.post_filters,
        framework.reserves,
        framework.permits,
        framework.pod_handlers,
        framework.object_handlers,
    ):
        assert plugin in point
    # Its group objects' status is the engine's status controller's (engine/gang_status.py).
    assert not hasattr(plugin, "status_updates")


def test_a_framework_not_served_yet_says_so_instead_of_failing_obscurely() -> None:
    framework = default_framework(
        Settings(), GangRegistry(DEFAULT_WAIT, resolve=Resolve(GANG_APIS))
    )
    [plugin] = [p for p in framework.plugins if isinstance(p, Coscheduling)]
    with pytest.raises(RuntimeError, match="not served yet"):
        plugin.handle.now()


def test_queue_order_keeps_the_members_of_a_gang_together() -> None:
    pods = [
        member("plain", None, created=5),
        member("a-1", created=30),
        member("b-0", "b", created=20),
        member("a-0", created=1),
    ]
    scheduler = CycleHarness(pods)

    order = sorted(pods, key=scheduler.framework.sort_key)

    assert [p.name for p in order] == ["a-0", "a-1", "plain", "b-0"]


def test_a_pod_outside_any_gang_goes_alone_and_binds_without_the_gang_plugin() -> None:
    scheduler = CycleHarness([member("plain", None)], cluster(1, cpu="1"))

    assert scheduler.framework.group_members(scheduler.pod("plain")) is None
    outcome = scheduler.cycle("plain")

    assert outcome.group.key == ALONE
    assert outcome.status.is_success
    assert bound(outcome) == ["plain"]


# -- one gang ----------------------------------------------------------------------------------


def test_a_gang_of_four_on_room_for_four_binds_all_four_together() -> None:
    scheduler = CycleHarness(gang("a", 4, 4), cluster(4, cpu="1"))

    outcome = scheduler.cycle("a-0")

    assert outcome.status.is_success
    assert bound(outcome) == ["a-0", "a-1", "a-2", "a-3"]
    assert sorted(p.node_name for p in outcome.bind) == ["n1", "n2", "n3", "n4"]
    assert (outcome.hold, outcome.allow_waiting, outcome.unplaced) == ([], (), {})
    assert scheduler.assumed() == ["a-0", "a-1", "a-2", "a-3"]
    assert gang_of(scheduler.gangs).state is GangState.SATISFIED


def test_the_group_of_a_gang_is_its_pending_members_with_their_minimum() -> None:
    counting = {MATCH_POLICY_KEY: "waiting-and-running"}
    scheduler = CycleHarness(
        [
            *gang("a", 3, 2, extra=counting),
            member("a-bound", min_available="2", annotations=counting, node="n9"),
        ]
    )

    group = scheduler.group("a-2")

    assert group.key == GroupKey(("ns/a",))
    assert group.trigger.name == "a-2"
    [part] = group.parts
    assert (part.key, part.minimum, part.counted, part.strict) == ("ns/a", 2, 1, True)
    assert [p.name for p in part.pending] == ["a-0", "a-1", "a-2"]


@pytest.mark.parametrize("annotations", [{}, {MODE_KEY: "Strict"}], ids=["default", "Strict"])
def test_a_strict_gang_of_four_on_room_for_three_binds_none_and_keeps_nothing(
    annotations: dict[str, str],
) -> None:
    scheduler = CycleHarness(gang("a", 4, 4, extra=annotations), cluster(3, cpu="1"))

    outcome = scheduler.cycle("a-0")

    message = f"gang ns/a: 3/4 members placed, min 4; {NO_CPU_3}"
    assert outcome.status.code is Code.UNSCHEDULABLE
    assert (outcome.bind, outcome.hold) == ([], [])
    assert told(scheduler, outcome.unplaced) == dict.fromkeys(["a-0", "a-1", "a-2", "a-3"], message)
    assert outcome.release_held is True
    assert scheduler.assumed() == []
    assert scheduler.held() == []
    assert gang_of(scheduler.gangs).last_message == message


def test_a_strict_gang_that_found_no_room_binds_all_once_there_is_room() -> None:
    scheduler = CycleHarness(gang("a", 4, 4), cluster(3, cpu="1"))
    scheduler.cycle("a-0")

    scheduler.add_node(node("n4", cpu="1"))
    outcome = scheduler.cycle("a-3")

    assert bound(outcome) == ["a-0", "a-1", "a-2", "a-3"]


@pytest.mark.parametrize(
    ("annotations", "placed", "left"),
    [
        pytest.param({}, [], ["a-0", "a-1", "a-2", "a-3"], id="Strict gives up at once"),
        pytest.param(NONSTRICT, ["a-1", "a-2", "a-3"], ["a-0"], id="NonStrict tries every member"),
    ],
)
def test_strict_gives_up_as_soon_as_the_minimum_is_out_of_reach(
    annotations: dict[str, str], placed: list[str], left: list[str]
) -> None:
    big = member("a-0", min_available="4", annotations=annotations, cpu="2")
    small = [member(f"a-{i}", min_available="4", annotations=annotations) for i in (1, 2, 3)]
    scheduler = CycleHarness([big, *small], cluster(3, cpu="1"))

    outcome = scheduler.cycle("a-0")

    assert outcome.plan is not None
    [part] = outcome.plan.parts
    assert [p.pod.name for p in part.placed] == placed
    assert sorted(scheduler.names(outcome.unplaced)) == left
    assert part.first_failure == NO_CPU_3
    assert held(outcome) == placed
    assert outcome.bind == []


def test_strict_keeps_trying_while_the_minimum_is_still_reachable() -> None:
    scheduler = CycleHarness(gang("a", 5, 3), cluster(2, cpu="1"))

    outcome = scheduler.cycle("a-0")

    # a-2 fails with 2 placed and 2 left: min 3 is still reachable, so the attempt goes on;
    # a-3 and a-4 have a-2's shape and fail without being tried.
    assert outcome.plan is not None
    [part] = outcome.plan.parts
    assert [p.pod.name for p in part.placed] == ["a-0", "a-1"]
    assert [r.pod.name for r in part.failed] == ["a-2", "a-3", "a-4"]
    assert part.skipped == []
    assert set(outcome.unplaced.values()) == {f"gang ns/a: 2/5 members placed, min 3; {NO_CPU_2}"}
    assert scheduler.assumed() == []


def test_the_failure_reads_like_kube_scheduler_with_every_reason_counted() -> None:
    tainted = node("gpu-1", cpu="8", taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}])
    scheduler = CycleHarness(gang("a", 3, 3), [*cluster(2, cpu="1"), tainted])

    outcome = scheduler.cycle("a-0")

    assert set(outcome.unplaced.values()) == {
        "gang ns/a: 2/3 members placed, min 3; 0/3 nodes are available: "
        "1 node(s) had untolerated taint {gpu: x}, 2 Insufficient cpu."
    }


def test_a_member_of_another_shape_is_still_tried_after_a_failure() -> None:
    big = gang("a", 4, 5, extra=NONSTRICT)
    small = member("z-small", min_available="5", annotations=NONSTRICT, cpu="500m")
    scheduler = CycleHarness([*big, small], cluster(2, cpu="1500m"))

    outcome = scheduler.cycle("a-0")

    assert held(outcome) == ["a-0", "a-1", "z-small"]
    assert sorted(scheduler.names(outcome.unplaced)) == ["a-2", "a-3"]


# -- NonStrict ---------------------------------------------------------------------------------


def test_a_nonstrict_gang_holds_what_fits_until_its_waiting_time_runs_out() -> None:
    pods = gang("a", 4, 4, extra={**NONSTRICT, WAITING_TIME_KEY: "30s"})
    scheduler = CycleHarness(pods, cluster(3, cpu="1"))

    outcome = scheduler.cycle("a-0")

    message = (
        "gang ns/a: 3/4 members placed, min 4 (holding 3 reservation(s) for at most 30s); "
        f"{NO_CPU_3}"
    )
    assert outcome.status.code is Code.WAIT
    assert outcome.bind == []
    assert held(outcome) == ["a-0", "a-1", "a-2"]
    assert outcome.deadline == START + 30
    assert told(scheduler, outcome.unplaced) == {"a-3": message}
    assert told(scheduler, outcome.explain) == dict.fromkeys(["a-0", "a-1", "a-2"], message)
    assert scheduler.assumed() == ["a-0", "a-1", "a-2"]
    assert gang_of(scheduler.gangs).state is GangState.WAITING


def test_a_later_cycle_with_room_binds_the_new_member_together_with_the_held_ones() -> None:
    scheduler = CycleHarness(gang("a", 4, 4, extra=NONSTRICT), cluster(3, cpu="1"))
    first = scheduler.cycle("a-0")
    scheduler.add_node(node("n4", cpu="1"))
    scheduler.clock.advance(5)

    outcome = scheduler.cycle("a-3")

    assert [p.name for p in outcome.group.members()] == ["a-3"]
    assert outcome.status.is_success
    assert [(p.pod.name, p.node_name) for p in outcome.bind] == [("a-3", "n4")]
    assert sorted(outcome.allow_waiting) == sorted(p.pod.uid for p in first.hold)
    assert scheduler.held() == []
    assert scheduler.assumed() == ["a-0", "a-1", "a-2", "a-3"]
    assert gang_of(scheduler.gangs).state is GangState.SATISFIED


def test_a_nonstrict_gang_still_short_keeps_the_deadline_of_its_first_hold() -> None:
    pods = gang("a", 4, 4, extra={**NONSTRICT, WAITING_TIME_KEY: "30s"})
    scheduler = CycleHarness(pods, cluster(2, cpu="1"))
    first = scheduler.cycle("a-0")
    scheduler.add_node(node("n3", cpu="1"))
    scheduler.clock.advance(10)

    second = scheduler.cycle("a-2")

    assert held(first) == ["a-0", "a-1"]
    assert held(second) == ["a-2"]
    assert first.deadline == second.deadline == START + 30
    assert scheduler.waiting.deadline(GroupKey(("ns/a",))) == START + 30
    assert set(second.explain.values()) == {
        "gang ns/a: 3/4 members placed, min 4 (holding 3 reservation(s) for at most 30s); "
        "0/3 nodes are available: 3 Insufficient cpu."
    }
    assert sorted(scheduler.names(second.explain)) == ["a-0", "a-1", "a-2"]


@pytest.mark.parametrize(
    ("policy", "binds"),
    [("waiting-and-running", ["a-1", "a-2"]), ("only-waiting", [])],
)
def test_bound_members_count_toward_the_minimum_by_match_policy(
    policy: str, binds: list[str]
) -> None:
    annotations = {MATCH_POLICY_KEY: policy}
    pods = [
        member("a-0", min_available="3", annotations=annotations, node="n9"),
        *[member(f"a-{i}", min_available="3", annotations=annotations) for i in (1, 2)],
    ]
    scheduler = CycleHarness(pods, cluster(2, cpu="1"))

    outcome = scheduler.cycle("a-1")

    # Both pending members fit; whether that is enough depends on the bound one counting.
    assert outcome.plan is not None and outcome.plan.complete
    assert outcome.group.parts[0].counted == (1 if binds else 0)
    assert bound(outcome) == binds
    assert outcome.hold == []
    assert scheduler.assumed() == binds


# -- GangGroups --------------------------------------------------------------------------------


def gang_group(
    a: Mapping[str, str] | None = None, b: Mapping[str, str] | None = None
) -> list[PodInfo]:
    return [
        *gang("a", 2, 2, extra={**GROUP_AB, **(a or {})}),
        *gang("b", 2, 2, extra={**GROUP_AB, **(b or {})}),
    ]


def test_a_gang_group_is_one_group_with_a_part_per_gang() -> None:
    scheduler = CycleHarness(gang_group())

    group = scheduler.group("b-1")

    assert group.key == GroupKey(("ns/a", "ns/b"))
    assert [(part.key, [p.name for p in part.pending]) for part in group.parts] == [
        ("ns/a", ["a-0", "a-1"]),
        ("ns/b", ["b-0", "b-1"]),
    ]


def test_a_gang_group_with_room_for_both_binds_both() -> None:
    scheduler = CycleHarness(gang_group(), cluster(4, cpu="1"))

    outcome = scheduler.cycle("b-0")

    assert bound(outcome) == ["a-0", "a-1", "b-0", "b-1"]
    assert gang_of(scheduler.gangs, "ns/a").satisfied
    assert gang_of(scheduler.gangs, "ns/b").satisfied


def test_a_nonstrict_group_with_a_partner_short_keeps_both_waiting_and_says_for_whom() -> None:
    scheduler = CycleHarness(gang_group(NONSTRICT, NONSTRICT), cluster(3, cpu="1"))

    outcome = scheduler.cycle("a-0")

    assert outcome.status.code is Code.WAIT
    assert held(outcome) == ["a-0", "a-1", "b-0"]
    for_a = (
        "gang ns/a (holding 2 reservation(s) for at most 10m0s) waits for ns/b in its group: "
        f"ns/b has 1/2 members placed, min 2; {NO_CPU_3}"
    )
    for_b = (
        "gang ns/b: 1/2 members placed, min 2 (holding 1 reservation(s) for at most 10m0s); "
        f"{NO_CPU_3}"
    )
    assert told(scheduler, outcome.explain) == {"a-0": for_a, "a-1": for_a, "b-0": for_b}
    assert told(scheduler, outcome.unplaced) == {"b-1": for_b}
    assert gang_of(scheduler.gangs, "ns/a").state is GangState.WAITING
    assert not gang_of(scheduler.gangs, "ns/a").satisfied


def test_the_partner_that_completes_a_waiting_group_binds_it_whole() -> None:
    scheduler = CycleHarness(gang_group(NONSTRICT, NONSTRICT), cluster(3, cpu="1"))
    first = scheduler.cycle("a-0")
    scheduler.add_node(node("n4", cpu="1"))

    outcome = scheduler.cycle("b-1")

    assert bound(outcome) == ["b-1"]
    assert sorted(scheduler.names(outcome.allow_waiting)) == ["a-0", "a-1", "b-0"]
    assert len(outcome.allow_waiting) == len(first.hold)
    assert scheduler.held() == []
    assert gang_of(scheduler.gangs, "ns/a").satisfied
    assert gang_of(scheduler.gangs, "ns/b").satisfied


def test_a_strict_group_stops_at_the_first_gang_that_cannot_reach_its_minimum() -> None:
    scheduler = CycleHarness(gang_group(), cluster(1, cpu="1"))

    outcome = scheduler.cycle("a-0")

    assert outcome.plan is not None
    part_a, part_b = outcome.plan.parts
    assert [r.pod.name for r in part_a.failed] == ["a-1"]
    assert (part_b.placed, [p.name for p in part_b.skipped]) == ([], ["b-0", "b-1"])
    assert told(scheduler, outcome.unplaced) == {
        "a-0": f"gang ns/a: 1/2 members placed, min 2; {NO_CPU_1}",
        "a-1": f"gang ns/a: 1/2 members placed, min 2; {NO_CPU_1}",
        "b-0": f"gang ns/b waits for ns/a in its group: ns/a has 1/2 members placed, min 2; "
        f"{NO_CPU_1}",
        "b-1": f"gang ns/b waits for ns/a in its group: ns/a has 1/2 members placed, min 2; "
        f"{NO_CPU_1}",
    }
    assert scheduler.assumed() == []


@pytest.mark.parametrize(
    ("a", "b"), [({}, NONSTRICT), (NONSTRICT, {})], ids=["a Strict", "b Strict"]
)
def test_a_group_with_one_strict_gang_holds_nothing(a: dict[str, str], b: dict[str, str]) -> None:
    scheduler = CycleHarness(gang_group(a, b), cluster(3, cpu="1"))

    outcome = scheduler.cycle("a-0")

    assert (outcome.bind, outcome.hold) == ([], [])
    assert outcome.release_held is True
    assert scheduler.assumed() == []


def test_a_gang_whose_partner_has_too_few_members_waits_before_any_filtering() -> None:
    pods = [*gang("a", 2, 2, extra=GROUP_AB), member("b-0", "b")]
    scheduler = CycleHarness(pods, cluster(4, cpu="1"))

    outcome = scheduler.cycle("a-0")

    message = "gang ns/a waits for ns/b in its group: ns/b 1/2 members created, min 2"
    assert outcome.plan is None
    assert outcome.status.code is Code.UNSCHEDULABLE
    # Each member hears it from its own gang's side.
    assert told(scheduler, outcome.unplaced) == {
        "a-0": message,
        "a-1": message,
        "b-0": "gang ns/b: 1/2 members created, min 2",
    }
    assert gang_of(scheduler.gangs, "ns/b").last_message == "gang ns/b: 1/2 members created, min 2"


# -- total number, member order ----------------------------------------------------------------


def test_members_above_the_minimum_that_do_not_fit_do_not_block_the_gang() -> None:
    scheduler = CycleHarness(gang("a", 4, 2, extra={TOTAL_NUMBER_KEY: "4"}), cluster(2, cpu="1"))
    assert gang_of(scheduler.gangs).spec.total_number == 4

    outcome = scheduler.cycle("a-0")

    assert outcome.status.is_success
    assert bound(outcome) == ["a-0", "a-1"]
    assert told(scheduler, outcome.unplaced) == {"a-2": NO_CPU_2, "a-3": NO_CPU_2}
    assert gang_of(scheduler.gangs).satisfied


def test_members_being_bound_are_not_taken_into_the_next_cycle_of_their_gang() -> None:
    annotations = {TOTAL_NUMBER_KEY: "4", MATCH_POLICY_KEY: "waiting-and-running"}
    scheduler = CycleHarness(gang("a", 4, 2, extra=annotations), cluster(2, cpu="1"))
    scheduler.cycle("a-0")
    assert scheduler.assumed() == ["a-0", "a-1"]

    group = scheduler.group("a-2")

    assert [p.name for p in group.members()] == ["a-2", "a-3"]


def test_members_of_a_satisfied_gang_later_schedule_like_plain_pods() -> None:
    scheduler = CycleHarness(gang("a", 4, 2, extra={TOTAL_NUMBER_KEY: "4"}), cluster(2, cpu="1"))
    scheduler.cycle("a-0")
    scheduler.add_node(node("n3", cpu="1"))

    assert scheduler.framework.group_members(scheduler.pod("a-2")) is None
    outcome = scheduler.cycle("a-2")

    assert outcome.group.key == ALONE
    assert bound(outcome) == ["a-2"]


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


def test_members_are_placed_in_network_topology_index_order_then_by_name() -> None:
    scheduler = CycleHarness(RANKED, cluster(6, cpu="1"))

    outcome = scheduler.cycle("w-b")

    assert bound(outcome) == ["w-1", "w-2", "w-10", "w-a", "w-b", "w-bad"]


def test_member_order_puts_ranked_pods_first_and_a_bad_index_among_the_unranked() -> None:
    keys = {p.name: member_order(p) for p in RANKED}

    assert keys["w-1"] == (0, 1, "w-1")
    assert keys["w-10"] == (0, 10, "w-10")
    assert keys["w-a"] == (1, 0, "w-a")
    assert keys["w-bad"] == (1, 0, "w-bad")


# -- readiness and minResources at PreFilter ---------------------------------------------------


def gated(name: str) -> PodInfo:
    pod = member(name, min_available="4")
    return parse_pod(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": pod.uid,
                "creationTimestamp": stamp(0),
                "annotations": dict(pod.annotations),
            },
            "spec": {
                "schedulerName": "koord-scheduler",
                "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                "containers": [{"name": "c"}],
            },
        }
    )


@pytest.mark.parametrize(
    ("pods", "message"),
    [
        pytest.param(
            gang("a", 3, 4), "gang ns/a: 3/4 members created, min 4", id="too few members created"
        ),
        pytest.param(
            [*gang("a", 2, 4), gated("a-8"), gated("a-9")],
            "gang ns/a: 2/4 members created (2 more scheduling-gated), min 4",
            id="scheduling-gated members do not count",
        ),
        pytest.param(
            [member(f"a-{i}", how="podgroup", min_available=None) for i in range(2)],
            "gang ns/a: waiting for PodGroup ns/a",
            id="its PodGroup does not exist",
        ),
        pytest.param(
            gang("a", 2, 2, extra={"gang.scheduling.koordinator.sh/min-available": "x"}),
            'gang ns/a cannot start: gang.scheduling.koordinator.sh/min-available="x" is not '
            "an integer; the gang cannot start",
            id="min-available is invalid",
        ),
        pytest.param(
            gang("a", 1, 2, extra={MODE_KEY: "Sometimes"}),
            "gang ns/a: 1/2 members created, min 2 (ignored settings: "
            'gang.scheduling.koordinator.sh/mode="Sometimes" is not Strict or NonStrict; '
            "using Strict)",
            id="settings that fell back to a default are named",
        ),
    ],
)
def test_a_gang_that_is_not_ready_is_rejected_at_prefilter_with_the_reason(
    pods: list[PodInfo], message: str
) -> None:
    scheduler = CycleHarness(pods, cluster(8, cpu="1"))

    outcome = scheduler.cycle("a-0")

    assert outcome.plan is None
    assert outcome.status.code is Code.UNSCHEDULABLE
    assert outcome.status.plugin == "Coscheduling"
    assert outcome.status.message() == message
    assert set(outcome.unplaced.values()) == {message}
    assert "a-0" in scheduler.names(outcome.unplaced)
    assert scheduler.assumed() == []


def test_a_pod_of_a_gang_with_bad_settings_is_told_once_when_it_arrives() -> None:
    scheduler = CycleHarness(gang("a", 1, 2, extra={MODE_KEY: "Sometimes"}))

    [report] = scheduler.reports()

    assert report.obj == ObjectRef("Pod", "ns", "a-0", "uid-ns-a-0")
    assert (report.event_type, report.reason, report.always) == (
        "Warning",
        "InvalidGangConfig",
        True,
    )
    assert report.message == (
        'gang.scheduling.koordinator.sh/mode="Sometimes" is not Strict or NonStrict; using Strict'
    )


def test_pods_waiting_for_their_podgroup_or_already_bound_are_not_told_of_bad_settings() -> None:
    scheduler = CycleHarness(
        [
            member("p-0", "p", how="podgroup", min_available=None),
            member("a-0", min_available="x", node="n1"),
        ]
    )

    assert scheduler.reports() == []


def gpu_scheduler(
    nodes: int, min_gpus: int, *, held: int = 0, workers: int = 4, gpus_each: int = 4
) -> CycleHarness:
    """PodGroup ns/a (min 4, minResources ``min_gpus`` GPUs) with ``workers`` members of
    ``gpus_each`` GPUs on ``nodes`` nodes of 4 GPUs; the first ``held`` members hold a node."""
    spec = {"minMember": 4, "minResources": {GPU: str(min_gpus)}}
    pods = [gpu_worker(f"a-{i}", gpus_each) for i in range(workers)]
    scheduler = CycleHarness(pods, cluster(nodes, cpu="8", gpus=4), [podgroup_json("a", spec=spec)])
    for i in range(held):
        pod = scheduler.pod(f"a-{i}")
        scheduler.cache.assume(pod, f"n{i + 1}")
        scheduler.waiting.add(
            pod,
            f"n{i + 1}",
            group=GroupKey(("ns/a",)),
            part="ns/a",
            since=START,
            deadline=START + 600,
        )
    return scheduler


def test_min_resources_larger_than_the_free_room_are_rejected_before_any_filtering() -> None:
    scheduler = gpu_scheduler(nodes=3, min_gpus=16)

    outcome = scheduler.cycle("a-0")

    message = (
        "gang ns/a: minResources do not fit the free room: nvidia.com/gpu short by 4 "
        "(needs 16, 12 free)"
    )
    assert outcome.plan is None
    # Not unresolvable: room may be made, by preemption or by pods that finish.
    assert outcome.status.code is Code.UNSCHEDULABLE
    assert outcome.status.message() == message
    assert set(outcome.unplaced.values()) == {message}
    assert len(outcome.unplaced) == 4
    assert gang_of(scheduler.gangs).last_message == message


def test_min_resources_that_fit_let_the_gang_be_placed() -> None:
    scheduler = gpu_scheduler(nodes=4, min_gpus=16)

    outcome = scheduler.cycle("a-0")

    assert bound(outcome) == ["a-0", "a-1", "a-2", "a-3"]


def test_members_already_holding_room_reduce_what_min_resources_still_need() -> None:
    scheduler = gpu_scheduler(nodes=3, min_gpus=16, held=1)

    outcome = scheduler.cycle("a-1")

    # 16 minus the 4 that a-0 holds; 12 on the nodes minus a-0's 4.
    assert outcome.status.message() == (
        "gang ns/a: minResources do not fit the free room: nvidia.com/gpu short by 4 "
        "(needs 12, 8 free)"
    )


def test_min_resources_covered_by_held_members_and_free_room_bind_the_gang() -> None:
    scheduler = gpu_scheduler(nodes=4, min_gpus=16, held=2)

    outcome = scheduler.cycle("a-2")

    assert bound(outcome) == ["a-2", "a-3"]
    assert sorted(scheduler.names(outcome.allow_waiting)) == ["a-0", "a-1"]


def test_prefilter_records_the_first_attempt_as_the_schedule_start_time_once() -> None:
    scheduler = CycleHarness(
        [member(f"a-{i}", how="podgroup", min_available=None) for i in range(2)],
        cluster(1, cpu="1"),
        [podgroup_json("a")],
    )
    assert gang_of(scheduler.gangs).first_attempt is None
    scheduler.clock.advance(60)

    scheduler.cycle("a-0")
    scheduler.clock.advance(60)
    scheduler.cycle("a-0")

    assert gang_of(scheduler.gangs).first_attempt == T0 + START + 60


# -- timeouts ----------------------------------------------------------------------------------


def timed_out(pods: list[PodInfo] | None = None) -> CycleHarness:
    """Gang ns/a (NonStrict, 4 members, min 4, 30s) held 3 placements past its deadline."""
    annotations = {**NONSTRICT, WAITING_TIME_KEY: "30s"}
    scheduler = CycleHarness(pods or gang("a", 4, 4, extra=annotations), cluster(3, cpu="1"))
    scheduler.cycle("a-0")
    scheduler.clock.advance(30)
    assert scheduler.expire() == [GroupKey(("ns/a",))]
    return scheduler


TIMED_OUT = (
    "gang ns/a timed out after 30s without reaching min 4: its reservations were released and "
    "its pods will not be scheduled again (delete and recreate them to retry)"
)


def test_held_placements_that_time_out_time_the_gang_out_and_tell_every_pending_member() -> None:
    scheduler = timed_out()

    gang_a = gang_of(scheduler.gangs)
    assert gang_a.timed_out
    assert gang_a.state is GangState.TIMED_OUT
    assert scheduler.held() == []
    assert scheduler.assumed() == []
    reports = scheduler.reports("GangTimeout")
    assert sorted(r.obj.name for r in reports) == ["a-0", "a-1", "a-2", "a-3"]
    for report in reports:
        assert report.message == TIMED_OUT
        assert report.event_type == "Warning"
        assert report.condition == ("False", "GangTimeout")
        assert report.annotations == {TIMEOUT_KEY: "true"}
        assert report.always is True


def test_a_timed_out_group_times_out_every_gang_in_it() -> None:
    pods = [
        *gang("a", 2, 2, extra={**GROUP_AB, **NONSTRICT}),
        *gang("b", 2, 2, extra={**GROUP_AB, **NONSTRICT}),
    ]
    scheduler = CycleHarness(pods, cluster(3, cpu="1"))
    scheduler.cycle("a-0")
    scheduler.clock.advance(DEFAULT_WAIT)

    assert scheduler.expire() == [GroupKey(("ns/a", "ns/b"))]

    assert gang_of(scheduler.gangs, "ns/a").timed_out
    assert gang_of(scheduler.gangs, "ns/b").timed_out
    assert sorted(r.obj.name for r in scheduler.reports("GangTimeout")) == [
        "a-0",
        "a-1",
        "b-0",
        "b-1",
    ]


def test_held_placements_given_up_for_another_reason_time_nothing_out() -> None:
    scheduler = CycleHarness(gang("a", 4, 4, extra=NONSTRICT), cluster(3, cpu="1"))
    scheduler.cycle("a-0")

    scheduler.release(GroupKey(("ns/a",)), UnreserveReason.NODE_GONE)

    assert not gang_of(scheduler.gangs).timed_out
    assert scheduler.reports("GangTimeout") == []


def test_a_timeout_of_gangs_that_were_all_satisfied_only_releases_the_room() -> None:
    # Satisfied, but under a policy that still counts: a replacement is held for the minimum
    # and does not reach it. That is not the gang timing out.
    annotations = {**NONSTRICT, MATCH_POLICY_KEY: "only-waiting"}
    pods = [
        member("a-0", annotations=annotations, node="n9"),
        member("a-1", annotations=annotations, node="n9"),
        member("a-2", annotations=annotations),
    ]
    scheduler = CycleHarness(pods, cluster(1, cpu="1"))
    first = scheduler.cycle("a-2")
    assert held(first) == ["a-2"]
    scheduler.clock.advance(DEFAULT_WAIT)

    assert scheduler.expire() == [GroupKey(("ns/a",))]

    gang_a = gang_of(scheduler.gangs)
    assert gang_a.satisfied and not gang_a.timed_out
    assert scheduler.reports("GangTimeout") == []
    assert scheduler.held() == []


def test_pre_enqueue_refuses_a_pod_marked_timed_out_without_telling_it_again() -> None:
    pod = member("a-0", annotations={TIMEOUT_KEY: "true"})
    scheduler = CycleHarness([pod])

    status = scheduler.framework.run_pre_enqueue(pod)

    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("the pod's gang timed out",)
    assert scheduler.reports() == []


def test_pre_enqueue_lets_in_members_of_a_gang_that_did_not_time_out() -> None:
    scheduler = CycleHarness(gang("a", 2, 2))

    assert scheduler.framework.run_pre_enqueue(scheduler.pod("a-0")).is_success


def test_a_replacement_of_a_timed_out_member_waits_outside_the_queue_and_is_told_why() -> None:
    scheduler = timed_out()
    replacement = member("a-new", min_available="4", annotations=NONSTRICT)
    scheduler.add(replacement)

    # The engine's PreEnqueue told it when it arrived; asking again here would tell it twice.
    [report] = scheduler.reports("FailedScheduling")
    status = scheduler.framework.run_pre_enqueue(replacement)

    message = (
        "gang ns/a timed out; this pod will be scheduled once the gang's timed-out members "
        "are deleted"
    )
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (message,)
    assert report.obj.name == "a-new"
    assert report.message == message
    assert report.condition == ("False", "GangTimeout")


def test_a_timed_out_member_re_enqueued_before_its_annotation_is_not_told_it_is_a_replacement() -> (
    None
):
    scheduler = timed_out()
    member_a0 = scheduler.pod("a-0")
    assert TIMEOUT_KEY not in member_a0.annotations

    status = scheduler.framework.run_pre_enqueue(member_a0)

    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert scheduler.reports("FailedScheduling") == []


def test_a_time_out_has_preenqueue_decide_again_about_its_pending_members() -> None:
    scheduler = timed_out()

    # Queued members leave the queue at once: PreEnqueue refuses every one of them now.
    assert sorted(scheduler.asked.activated) == ["a-0", "a-1", "a-2", "a-3"]
    for name in scheduler.asked.activated:
        assert not scheduler.framework.run_pre_enqueue(scheduler.pod(name)).is_success


def test_deleting_every_timed_out_member_lifts_the_latch_and_activates_the_others() -> None:
    scheduler = timed_out()
    scheduler.asked.activated.clear()  # the time-out's own (see above)
    scheduler.add(member("a-new", min_available="4", annotations=NONSTRICT))

    for name in ("a-0", "a-1", "a-2"):
        scheduler.delete(name)
    assert gang_of(scheduler.gangs).timed_out
    assert (scheduler.asked.activated, scheduler.asked.moves) == ([], 0)

    scheduler.delete("a-3")

    assert not gang_of(scheduler.gangs).timed_out
    assert scheduler.asked.activated == ["a-new"]
    assert scheduler.asked.moves == 1
    assert scheduler.framework.run_pre_enqueue(scheduler.pod("a-new")).is_success


def test_deleting_a_member_of_a_gang_that_did_not_time_out_activates_nobody() -> None:
    scheduler = CycleHarness(gang("a", 3, 2))

    scheduler.delete("a-0")

    assert (scheduler.asked.activated, scheduler.asked.moves) == ([], 0)


# -- PodGroup events and status ----------------------------------------------------------------


def test_a_podgroup_event_may_let_parked_pods_fit_and_makes_the_gang_ready() -> None:
    pods = [member(f"a-{i}", how="podgroup", min_available=None) for i in range(2)]
    scheduler = CycleHarness(pods, cluster(2, cpu="1"))
    before = scheduler.cycle("a-0")

    moved = scheduler.framework.on_object(
        "podgroups.scheduling.sigs.k8s.io", "ADDED", podgroup_json("a")
    )
    after = scheduler.cycle("a-0")

    assert before.status.message() == "gang ns/a: waiting for PodGroup ns/a"
    assert moved is True
    assert gang_of(scheduler.gangs).podgroup is not None
    assert bound(after) == ["a-0", "a-1"]
    assert scheduler.reports() == []


def test_a_podgroup_alone_makes_a_gang_without_members() -> None:
    scheduler = CycleHarness()

    assert scheduler.framework.on_object(
        "podgroups.scheduling.sigs.k8s.io", "MODIFIED", podgroup_json("a", 3)
    )

    gang_a = gang_of(scheduler.gangs)
    assert gang_a.members == {}
    assert gang_a.spec.min_available == 3


def test_an_invalid_podgroup_is_told_what_is_wrong_with_it() -> None:
    scheduler = CycleHarness()
    spec = {"scheduleTimeoutSeconds": -1, "minResources": {"cpu": "lots"}}

    assert (
        scheduler.framework.on_object(
            "podgroups.scheduling.sigs.k8s.io", "ADDED", podgroup_json("a", spec=spec)
        )
        is True
    )

    [report] = scheduler.reports()
    assert report.obj == ObjectRef("PodGroup", "ns", "a", "pg-a", api_version=PODGROUP_API)
    assert (report.event_type, report.reason) == ("Warning", "InvalidGangConfig")
    issues = parse_podgroup(podgroup_json("a", spec=spec)).issues
    assert [issue.key for issue in issues] == [
        "spec.minMember",
        "spec.scheduleTimeoutSeconds",
        "spec.minResources[cpu]",
    ]
    assert report.message == "; ".join(issue.message() for issue in issues)
    assert report.message.startswith(
        'spec.minMember="" is missing; the gang cannot start; '
        'spec.scheduleTimeoutSeconds="-1" is not positive; ignoring it; '
    )


def test_a_deleted_podgroup_leaves_its_members_waiting_for_it_again() -> None:
    pods = [member(f"a-{i}", how="podgroup", min_available=None) for i in range(2)]
    scheduler = CycleHarness(pods, cluster(2, cpu="1"), [podgroup_json("a")])

    assert (
        scheduler.framework.on_object(
            "podgroups.scheduling.sigs.k8s.io", "DELETED", podgroup_json("a")
        )
        is True
    )

    assert gang_of(scheduler.gangs).podgroup is None
    assert scheduler.cycle("a-0").status.message() == "gang ns/a: waiting for PodGroup ns/a"


def test_objects_of_other_kinds_are_not_the_plugins_business() -> None:
    scheduler = CycleHarness()

    assert scheduler.framework.on_object("ElasticQuota", "ADDED", {"metadata": {}}) is False
    assert list(scheduler.gangs.gangs()) == []


def test_each_changed_podgroup_is_touched_once_for_the_status_writer() -> None:
    """The plugin marks the gangs whose status may have changed; the engine's status
    controller takes them and asks each gang API for the words (engine/gang_status.py)."""
    pods = [
        *[member(f"a-{i}", how="podgroup", min_available=None) for i in range(2)],
        *gang("plain", 2, 2),
    ]
    scheduler = CycleHarness(pods, cluster(4, cpu="1"), [podgroup_json("a"), podgroup_json("idle")])
    first = scheduler.gangs.take_touched()
    scheduler.cycle("a-0")
    scheduler.cycle("plain-0")

    second = scheduler.gangs.take_touched()
    third = scheduler.gangs.take_touched()

    gang_a = gang_of(scheduler.gangs)
    # "plain" has no group object: the status controller passes it by.
    assert first == ["ns/a", "ns/idle", "ns/plain"]
    assert "ns/a" in second and "ns/idle" not in second
    status = KoordinatorApi().status(gang_a, 0.0)
    assert status == podgroup_status(gang_a)
    assert status["phase"] == "Scheduled"
    assert status["scheduleStartTime"] == "2022-07-11T18:43:13Z"
    assert third == []
