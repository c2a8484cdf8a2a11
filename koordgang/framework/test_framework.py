"""Framework: plugins registered by the protocols they implement, the default group placement
(``place_members``), and how the answers of several plugins at one extension point combine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.framework import Framework, place_members, prebuilt
from koordgang.framework.group import (
    GroupPart,
    GroupPlan,
    GroupTopology,
    Placer,
    PodResult,
    SchedulingGroup,
)
from koordgang.framework.handle import Handle, Services
from koordgang.framework.interfaces import Plugin
from koordgang.framework.results import (
    ALLOW,
    Decision,
    PermitResult,
    PostFilterResult,
    UnreserveReason,
)
from koordgang.framework.runner import PodRunner
from koordgang.framework.status import SKIP, SUCCESS, Code, Status
from koordgang.model.group_key import GroupKey
from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Placement, Snapshot
from koordgang.state.stores import Stores
from koordgang.state.waiting import WaitingPods
from koordgang.testing.builders import cache_of, node, pod
from koordgang.testing.plugins import (
    CountingFit,
    CountingTaintFilter,
    FixedPermit,
    FixedPostFilter,
    FixedPreFilter,
    FreeCpuScore,
    GroupGate,
    Journal,
    LabelScore,
    NameSort,
    OnePerNode,
    RecordingReserve,
    runner,
)

# -- fake plugins of this file's own (koordgang.testing.plugins has the shared ones) -----------


class Gatekeeper:
    """PreEnqueue: refuses pods labelled ``gated``."""

    def __init__(self, name: str = "Gatekeeper") -> None:
        self.name = name
        self.seen: list[str] = []

    def pre_enqueue(self, pod: PodInfo) -> Status:
        self.seen.append(pod.name)
        if "gated" in pod.labels:
            return Status.unresolvable(self.name, f"{self.name} says no")
        return SUCCESS


class FixedPlacement:
    """GroupPlacement: places nothing and returns an empty plan, or declines (None)."""

    def __init__(self, name: str, decline: bool, journal: Journal) -> None:
        self.name, self.decline, self.journal = name, decline, journal

    def place_group(
        self, state: CycleState, group: SchedulingGroup, snapshot: Snapshot, placer: Placer
    ) -> GroupPlan | None:
        self.journal.append(f"{self.name}.place_group")
        return None if self.decline else GroupPlan(snapshot, [])


class FixedReclaim:
    def __init__(self, name: str, amounts: Mapping[str, int]) -> None:
        self.name, self.amounts = name, amounts

    def reclaimable(self, group: SchedulingGroup, snapshot: Snapshot) -> Mapping[str, int]:
        return self.amounts


class Listener:
    """EventHandler: records events; says parked pods might fit for kind ``PodGroup``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pods: list[tuple[str | None, str | None]] = []
        self.objects: list[tuple[str, str]] = []

    def on_pod(self, old: PodInfo | None, pod: PodInfo | None) -> None:
        self.pods.append((old.name if old else None, pod.name if pod else None))

    def on_object(self, kind: str, event: str, obj: Mapping[str, Any]) -> bool:
        self.objects.append((kind, event))
        return kind == "PodGroup"


class HandleUserPlugin:
    name = "NeedsHandle"

    def __init__(self, handle: Handle | None = None) -> None:
        self.handle = handle


class Grouper:
    """Grouping: pods labelled ``team`` go together, one part per team."""

    name = "Grouper"

    def __init__(self, pending: Sequence[PodInfo] = ()) -> None:
        self.pending = list(pending)

    def group_members(self, pod: PodInfo) -> Sequence[PodInfo] | None:
        if "team" not in pod.labels:
            return None
        return [p for p in self.pending if p.labels.get("team") == pod.labels["team"]]

    def topology_for(self, pod: PodInfo) -> GroupTopology | None:
        return None

    def build_group(self, pod: PodInfo, pending: Sequence[PodInfo]) -> SchedulingGroup:
        members = [pod, *pending]
        return SchedulingGroup(
            GroupKey((pod.labels["team"],)), [GroupPart("team", members, minimum=len(members))], pod
        )


def framework(*plugins: Any, waiting: WaitingPods | None = None) -> Framework:
    return Framework(prebuilt([NameSort(), *plugins]), waiting=waiting)


def group_of(*parts: GroupPart) -> SchedulingGroup:
    return SchedulingGroup(GroupKey(("ns/g",)), list(parts), parts[0].pending[0])


# -- registration ------------------------------------------------------------------------------


def test_each_plugin_is_registered_at_every_extension_point_it_implements() -> None:
    journal = Journal()
    sort, gate, fit, taints, score = (
        NameSort(),
        FixedPreFilter(SUCCESS),
        CountingFit(),
        CountingTaintFilter(),
        FreeCpuScore(),
    )
    grouping, group_gate = Grouper(), GroupGate("GroupGate", SUCCESS, journal)
    placement = FixedPlacement("Placement", True, journal)
    post = FixedPostFilter("Post", PostFilterResult(SUCCESS), journal)
    reserve, permit = RecordingReserve("Reserve", journal), FixedPermit("Permit", ALLOW)
    reclaim, listener = FixedReclaim("Reclaim", {}), Listener("Listener")
    user, keeper = HandleUserPlugin(), Gatekeeper()
    plugins: list[Plugin] = [sort, gate, fit, taints, score, grouping, group_gate, placement]
    plugins += [post, reserve]
    plugins += [permit, reclaim, listener, user, keeper]

    fw = Framework(prebuilt(plugins))

    assert fw.queue_sort is sort
    assert fw.grouping is grouping
    assert fw.pre_enqueue == [keeper]
    assert fw.group_pre_filters == [group_gate]
    assert fw.group_placements == [placement]
    assert fw.post_filters == [post]
    assert fw.reserves == [reserve]
    assert fw.permits == [permit]
    assert fw.reclaimers == [reclaim]
    assert fw.pod_handlers == [listener]
    assert fw.object_handlers == [listener]
    assert fw.left_pending == []
    assert fw.pods.pre_filters == (gate,)
    assert fw.pods.static_filters == (taints,)
    assert fw.pods.node_filters == (fit,)
    assert fw.pods.node_scores == (score,)
    assert fw.placer is fw.pods
    assert fw.plugins == tuple(plugins)


def test_one_plugin_may_serve_several_extension_points() -> None:
    journal = Journal()

    class Both(RecordingReserve):
        def pre_enqueue(self, pod: PodInfo) -> Status:
            return SUCCESS

    both = Both("Both", journal)
    fw = framework(both)

    assert fw.reserves == [both]
    assert fw.pre_enqueue == [both]


def test_a_plugin_missing_part_of_a_protocol_is_not_registered_there() -> None:
    class ReserveOnly:
        name = "ReserveOnly"

        def reserve(self, state: Any, group: Any, placements: Any) -> Status:
            return SUCCESS

    class FilterWithoutScope:
        name = "NoScope"

        def filter(self, state: Any, pod: Any, node: Any, snapshot: Any) -> Status:
            return SUCCESS

    fw = framework(ReserveOnly(), FilterWithoutScope())

    assert fw.reserves == []
    assert fw.pods.static_filters == fw.pods.node_filters == fw.pods.cluster_filters == ()


@pytest.mark.parametrize("sorts", [0, 2])
def test_a_profile_needs_exactly_one_queue_sort(sorts: int) -> None:
    with pytest.raises(ValueError, match=f"exactly one QueueSort plugin, got {sorts}"):
        Framework(prebuilt([NameSort() for _ in range(sorts)]))


def test_a_profile_takes_at_most_one_grouping_plugin() -> None:
    with pytest.raises(ValueError, match="at most one Grouping plugin"):
        framework(Grouper(), Grouper())


def test_the_waiting_registry_is_the_one_given_or_a_new_one() -> None:
    waiting = WaitingPods()
    assert framework(waiting=waiting).waiting is waiting
    assert isinstance(framework().waiting, WaitingPods)


def test_factories_make_plugins_with_one_handle_the_runner_serves_later() -> None:
    made: list[HandleUserPlugin] = []

    def factory(handle: Handle) -> HandleUserPlugin:
        made.append(HandleUserPlugin(handle))
        return made[-1]

    fw = Framework([lambda _: NameSort(), factory, factory, lambda _: Gatekeeper()])
    first, second = made
    assert first.handle is second.handle is fw.handle
    assert fw.plugins[1:3] == (first, second)
    with pytest.raises(RuntimeError, match="not served yet"):
        fw.handle.now()

    cache = SchedulerCache()
    reports: list[Any] = []
    fw.serve(
        Services(
            cache=cache,
            stores=Stores(),
            now=lambda: 42.0,
            wall=lambda: 1e9,
            report=reports.append,
            record=lambda metric, value, label: None,
            activate=lambda pods: None,
            request_move=lambda: None,
            is_pending=lambda pod: True,
        )
    )
    handle = fw.handle
    # The runner's services pass through; sibling questions go to the framework.
    assert handle.cache is cache and handle.now() == 42.0 and handle.wall() == 1e9
    assert handle.waiting is fw.waiting and handle.nominations is fw.nominations
    assert handle.placer is fw.placer


# -- queue and events --------------------------------------------------------------------------


def test_sort_key_is_the_queue_sort_plugins() -> None:
    assert framework().sort_key(pod("p")) == ("p",)


def test_pre_enqueue_runs_plugins_in_order_until_one_refuses() -> None:
    first, second = Gatekeeper("First"), Gatekeeper("Second")
    fw = framework(first, second)

    assert fw.run_pre_enqueue(pod("free")) is SUCCESS
    refused = fw.run_pre_enqueue(pod("stopped", labels={"gated": "yes"}))

    assert refused == Status.unresolvable("First", "First says no")
    assert (first.seen, second.seen) == (["free", "stopped"], ["free"])


def test_events_reach_every_handler_and_any_of_them_may_ask_for_a_move() -> None:
    one, two = Listener("One"), Listener("Two")
    fw = framework(one, two)

    fw.on_pod(None, pod("p"))
    fw.on_pod(pod("p"), None)
    moved = fw.on_object("PodGroup", "ADDED", {})
    quiet = fw.on_object("Namespace", "MODIFIED", {})

    assert one.pods == two.pods == [(None, "p"), ("p", None)]
    assert one.objects == two.objects == [("PodGroup", "ADDED"), ("Namespace", "MODIFIED")]
    assert (moved, quiet) == (True, False)


class Settled:
    def __init__(self, name: str) -> None:
        self.name = name
        self.told: list[tuple[str, bool]] = []

    def on_pod_left_pending(self, pod: PodInfo, gone: bool) -> None:
        self.told.append((pod.name, gone))


def test_only_pods_that_left_pending_are_told_to_those_that_ask_for_them() -> None:
    settled = Settled("Settled")
    fw = framework(settled)
    waiting, bound = pod("p"), pod("p", node_name="n1")

    fw.on_pod(None, waiting)
    fw.on_pod(waiting, waiting)
    fw.on_pod(waiting, bound)
    fw.on_pod(bound, None)
    fw.on_pod(None, pod("q"))
    fw.on_pod(pod("q"), None)

    assert settled.told == [("p", False), ("p", True), ("q", True)]


class GangFacts:
    def __init__(self, name: str, facts: dict[str, dict[str, Any]]) -> None:
        self.name = name
        self.facts = facts

    def gang_facts(self, gang_key: str) -> Mapping[str, Any]:
        return self.facts.get(gang_key, {})


def test_gang_facts_of_every_plugin_are_merged_later_plugins_winning() -> None:
    fw = framework(
        GangFacts("Topology", {"ns/a": {"domain": "spine s1", "waitingFor": "old"}}),
        GangFacts("Guard", {"ns/a": {"waitingFor": "new", "reserved": ["n1"]}}),
    )
    assert fw.gang_facts("ns/a") == {"domain": "spine s1", "waitingFor": "new", "reserved": ["n1"]}
    assert fw.gang_facts("ns/b") == {}


# -- groups ------------------------------------------------------------------------------------


def test_a_pod_goes_alone_without_a_grouping_plugin_or_without_a_group() -> None:
    p = pod("p", labels={"team": "x"})
    alone = SchedulingGroup.single(p)

    assert framework().group_members(p) is None
    assert framework().build_group(p, []) == alone
    assert framework(Grouper()).build_group(p, None) == alone


def test_the_grouping_plugin_finds_and_builds_the_group() -> None:
    p, q = pod("p", labels={"team": "x"}), pod("q", labels={"team": "x"})
    fw = framework(Grouper([q, pod("r", labels={"team": "y"})]))

    assert fw.group_members(pod("solo")) is None
    assert fw.group_members(p) == [q]
    group = fw.build_group(p, [q])
    assert (group.key, [m.name for m in group.members()], group.trigger) == (
        GroupKey(("x",)),
        ["p", "q"],
        p,
    )


REFUSAL = Status.unschedulable("B", "no")


@pytest.mark.parametrize(
    ("statuses", "result", "asked"),
    [
        ([], SUCCESS, 0),
        ([SUCCESS, SKIP], SUCCESS, 2),
        ([SKIP, REFUSAL, Status.unschedulable("C", "never")], REFUSAL, 2),
    ],
    ids=["no plugins", "success and skip", "first refusal"],
)
def test_group_pre_filter_returns_the_first_refusal_and_treats_skip_as_success(
    statuses: list[Status], result: Status, asked: int
) -> None:
    journal = Journal()
    fw = framework(*(GroupGate(f"G{i}", s, journal) for i, s in enumerate(statuses)))
    group = SchedulingGroup.single(pod("p"))

    status = fw.run_group_pre_filter(CycleState(), group, Snapshot(cache_of()))

    assert status == result
    assert len(journal) == asked


def test_group_placement_takes_the_first_plugin_plan_and_falls_back_to_place_members() -> None:
    journal = Journal()
    cache = cache_of(node("n1"))
    group = SchedulingGroup.single(pod("p"))
    declining = framework(FixedPlacement("A", True, journal))
    placing = framework(
        FixedPlacement("A", True, journal),
        FixedPlacement("B", False, journal),
        FixedPlacement("C", False, journal),
    )

    fallback = declining.run_group_placement(CycleState(), group, Snapshot(cache))
    chosen = placing.run_group_placement(CycleState(), group, Snapshot(cache))

    assert [p.node_name for p in fallback.placements()] == ["n1"]
    assert chosen.parts == []
    assert journal == ["A.place_group", "A.place_group", "B.place_group"]


def test_reclaimable_sums_what_every_reclaim_plugin_could_free() -> None:
    fw = framework(FixedReclaim("A", {"cpu": 1000}), FixedReclaim("B", {"cpu": 500, "pods": 2}))
    group = SchedulingGroup.single(pod("p"))
    assert fw.reclaimable(group, Snapshot(cache_of())) == {"cpu": 1500, "pods": 2}


# -- place_members -----------------------------------------------------------------------------


class RecordingPlacer:
    """A real PodRunner that remembers whom it was asked to place."""

    def __init__(self, pods: PodRunner) -> None:
        self.pods = pods
        self.tried: list[str] = []

    def place(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        *,
        within: frozenset[str] | None = None,
        diagnose: bool = True,
    ) -> PodResult:
        self.tried.append(pod.name)
        return self.pods.place(pod, snapshot, within=within, diagnose=diagnose)

    def find(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        *,
        within: frozenset[str] | None = None,
        diagnose: bool = True,
    ) -> PodResult:
        return self.pods.find(pod, snapshot, within=within, diagnose=diagnose)

    def check(self, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> Status:
        return self.pods.check(pod, node, snapshot)

    def put(self, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> Status:
        return self.pods.put(pod, node, snapshot)


def members(prefix: str, *cpus: str) -> list[PodInfo]:
    return [pod(f"{prefix}-{i}", cpu=cpu) for i, cpu in enumerate(cpus)]


def test_place_members_places_parts_in_order_and_members_in_their_order() -> None:
    cache = cache_of(node("n1", cpu="2"), node("n2", cpu="2"), node("n3", cpu="2"))
    placer = RecordingPlacer(runner(filters=(CountingFit(),), scores=(FreeCpuScore(),)))
    group = group_of(
        GroupPart("ns/a", members("a", "1", "1"), minimum=2),
        GroupPart("ns/b", members("b", "2"), minimum=1),
    )
    snapshot = Snapshot(cache)

    plan = place_members(group, snapshot, placer)

    assert placer.tried == ["a-0", "a-1", "b-0"]
    assert [p.pod.name for p in plan.placements()] == ["a-0", "a-1", "b-0"]
    assert [p.pod.name for p in snapshot.placements] == ["a-0", "a-1", "b-0"]
    assert plan.snapshot is snapshot
    assert (plan.complete, plan.satisfied) == (True, True)
    # Spread: the 2-cpu member took the node the two others left empty.
    assert len({p.node_name for p in plan.placements()}) == 3


#: One 2-cpu node; members of 3 cpu never fit, members of 1 cpu fit twice; the later part's
#: member (b-0) requests nothing and always fits.
STRICT_CASES = [
    # (strict, minimum, counted, cpus of part a, tried, placed of a, skipped of a, later tried)
    (True, 3, 0, ("3", "1", "1"), ["a-0"], [], ["a-1", "a-2"], False),
    (False, 3, 0, ("3", "1", "1"), ["a-0", "a-1", "a-2"], ["a-1", "a-2"], [], True),
    (True, 2, 0, ("3", "1", "1"), ["a-0", "a-1", "a-2"], ["a-1", "a-2"], [], True),
    (True, 3, 1, ("3", "1", "1"), ["a-0", "a-1", "a-2"], ["a-1", "a-2"], [], True),
    # a-3 has a-2's shape, which failed: it fails without a try, and then the minimum is lost.
    (True, 3, 0, ("1", "1", "1", "1"), ["a-0", "a-1", "a-2"], ["a-0", "a-1"], [], False),
    (True, 4, 0, ("1", "1", "1", "1"), ["a-0", "a-1", "a-2"], ["a-0", "a-1"], ["a-3"], False),
    (False, 4, 0, ("1", "1", "1", "1"), ["a-0", "a-1", "a-2"], ["a-0", "a-1"], [], True),
]


@pytest.mark.parametrize(
    ("strict", "minimum", "counted", "cpus", "tried", "placed", "skipped", "later"),
    STRICT_CASES,
    ids=[
        "strict: out of reach at once",
        "non-strict: goes on",
        "strict: still reachable",
        "strict: counted members keep it reachable",
        "strict: out of reach at the last member",
        "strict: out of reach midway",
        "non-strict: goes on to the next part",
    ],
)
def test_a_strict_part_stops_the_attempt_once_its_minimum_is_out_of_reach(
    strict: bool,
    minimum: int,
    counted: int,
    cpus: tuple[str, ...],
    tried: list[str],
    placed: list[str],
    skipped: list[str],
    later: bool,
) -> None:
    placer = RecordingPlacer(runner(filters=(CountingFit(),), scores=(FreeCpuScore(),)))
    part = GroupPart("ns/a", members("a", *cpus), minimum=minimum, counted=counted, strict=strict)
    next_part = GroupPart("ns/b", members("b", "0"), minimum=1, strict=strict)

    plan = place_members(group_of(part, next_part), Snapshot(cache_of(node("n1", cpu="2"))), placer)

    a, b = plan.parts
    assert placer.tried == tried + (["b-0"] if later else [])
    assert [p.pod.name for p in a.placed] == placed
    assert [p.name for p in a.skipped] == skipped
    assert [p.name for p in b.skipped] == ([] if later else ["b-0"])
    assert [p.pod.name for p in b.placed] == (["b-0"] if later else [])


def test_a_strict_part_gives_up_the_attempt_when_another_part_cannot_reach_its_minimum() -> None:
    placer = RecordingPlacer(runner(filters=(CountingFit(),)))
    loose = GroupPart("ns/a", members("a", "3", "1"), minimum=2)
    strict = GroupPart("ns/b", members("b", "1"), minimum=1, strict=True)

    plan = place_members(group_of(loose, strict), Snapshot(cache_of(node("n1", cpu="2"))), placer)

    # Whatever the group places now would be given up: the attempt stops at the first failure.
    assert placer.tried == ["a-0"]
    assert [p.name for p in plan.parts[0].skipped] == ["a-1"]
    assert [p.name for p in plan.parts[1].skipped] == ["b-0"]
    assert [p.name for p in plan.unplaced()] == ["a-0", "a-1", "b-0"]


def test_a_shape_that_failed_is_not_tried_again_when_the_failure_is_monotone() -> None:
    placer = RecordingPlacer(runner(filters=(CountingFit(),)))
    part = GroupPart("ns/a", [*members("a", "3", "3", "3"), pod("small", cpu="1")], minimum=4)

    plan = place_members(group_of(part), Snapshot(cache_of(node("n1", cpu="2"))), placer)

    [result] = plan.parts
    assert placer.tried == ["a-0", "small"]
    assert [r.pod.name for r in result.failed] == ["a-0", "a-1", "a-2"]
    assert {r.message for r in result.failed} == {"0/1 nodes are available: 1 Insufficient cpu."}
    assert {r.status.code for r in result.failed} == {Code.UNSCHEDULABLE}
    assert [p.pod.name for p in result.placed] == ["small"]
    assert result.first_failure == "0/1 nodes are available: 1 Insufficient cpu."


def test_a_shape_that_failed_is_tried_again_when_the_failure_may_not_last() -> None:
    # A cluster-wide filter is active: the answer depends on other pods, so it is not monotone.
    placer = RecordingPlacer(runner(filters=(CountingFit(), OnePerNode())))
    part = GroupPart("ns/a", members("a", "3", "3", "3"), minimum=3)

    plan = place_members(group_of(part), Snapshot(cache_of(node("n1", cpu="2"))), placer)

    assert placer.tried == ["a-0", "a-1", "a-2"]
    assert [r.monotone for r in plan.parts[0].failed] == [False, False, False]


# -- PostFilter --------------------------------------------------------------------------------


def an_incomplete_plan() -> tuple[SchedulingGroup, GroupPlan, Snapshot]:
    cache = cache_of(node("n1", cpu="1"))
    group = group_of(GroupPart("ns/a", members("a", "2"), minimum=1))
    snapshot = Snapshot(cache)
    plan = place_members(group, snapshot.fork(), runner(filters=(CountingFit(),)))
    assert not plan.complete
    return group, plan, snapshot


def test_post_filter_stops_at_the_first_success_and_merges_what_the_others_said() -> None:
    journal = Journal()
    nominated = {"uid-a-0": "n1"}
    fw = framework(
        FixedPostFilter(
            "Gang",
            PostFilterResult(Status.unschedulable("Gang"), messages={"uid-a-0": "gang says"}),
            journal,
        ),
        FixedPostFilter("Skip", PostFilterResult(SKIP, messages={"uid-x": "skip says"}), journal),
        FixedPostFilter("Preempt", PostFilterResult(SUCCESS, nominated=nominated), journal),
        FixedPostFilter("Never", PostFilterResult(SUCCESS, drop_placements=True), journal),
    )
    group, plan, snapshot = an_incomplete_plan()

    result = fw.run_post_filter(CycleState(), group, plan, snapshot)

    assert result.status.is_success
    assert result.nominated == nominated
    assert result.messages == {"uid-a-0": "gang says", "uid-x": "skip says"}
    assert result.drop_placements is False
    assert journal == ["Gang.post_filter", "Skip.post_filter", "Preempt.post_filter"]


def test_post_filter_without_success_keeps_the_last_refusal_and_any_drop() -> None:
    journal = Journal()
    fw = framework(
        FixedPostFilter(
            "Gang",
            PostFilterResult(
                Status.unschedulable("Gang", "strict"),
                drop_placements=True,
                messages={"uid-a-0": "first", "uid-b": "kept"},
            ),
            journal,
        ),
        FixedPostFilter(
            "Preempt",
            PostFilterResult(
                Status.unschedulable("Preempt", "no victims"), messages={"uid-a-0": "later"}
            ),
            journal,
        ),
        FixedPostFilter("Skip", PostFilterResult(SKIP), journal),
    )
    group, plan, snapshot = an_incomplete_plan()

    result = fw.run_post_filter(CycleState(), group, plan, snapshot)

    assert result.status == Status.unschedulable("Preempt", "no victims")
    assert result.drop_placements is True
    assert result.messages == {"uid-a-0": "later", "uid-b": "kept"}
    assert result.nominated == {}
    assert len(journal) == 3


def test_post_filter_without_plugins_is_unschedulable() -> None:
    group, plan, snapshot = an_incomplete_plan()
    result = framework().run_post_filter(CycleState(), group, plan, snapshot)
    assert result.status.code is Code.UNSCHEDULABLE
    assert (result.drop_placements, result.messages, result.nominated) == (False, {}, {})


# -- Reserve -----------------------------------------------------------------------------------


def test_reserve_runs_every_plugin_with_the_placements() -> None:
    journal = Journal()
    first, second = RecordingReserve("A", journal), RecordingReserve("B", journal)
    fw = framework(first, second)
    placements = [Placement(pod("p"), "n1")]

    assert fw.run_reserve(CycleState(), group_of(GroupPart("ns/a", [pod("p")])), placements) is (
        SUCCESS
    )

    assert journal == ["A.reserve", "B.reserve"]
    assert first.placements == second.placements == [placements]


def test_a_failed_reserve_undoes_the_plugins_that_reserved_before_it_only() -> None:
    journal = Journal()
    refusal = Status.unschedulable("B", "quota exceeded")
    fw = framework(
        RecordingReserve("A", journal),
        RecordingReserve("B", journal, refusal),
        RecordingReserve("C", journal),
    )
    placements = [Placement(pod("p"), "n1"), Placement(pod("q"), "n2")]

    status = fw.run_reserve(CycleState(), group_of(GroupPart("ns/a", [pod("p")])), placements)

    assert status == refusal
    assert journal == ["A.reserve", "B.reserve", "A.unreserve(ns/g, 2, reserve failed)"]


def test_a_failed_reserve_undoes_the_earlier_plugins_in_reverse_order() -> None:
    journal = Journal()
    fw = framework(
        RecordingReserve("A", journal),
        RecordingReserve("B", journal),
        RecordingReserve("C", journal, Status.unschedulable("C", "no")),
    )

    fw.run_reserve(CycleState(), group_of(GroupPart("ns/a", [pod("p")])), [])

    assert [entry.split("(")[0] for entry in journal[3:]] == ["B.unreserve", "A.unreserve"]


def test_unreserve_runs_every_plugin_in_reverse_order() -> None:
    journal = Journal()
    fw = framework(RecordingReserve("A", journal), RecordingReserve("B", journal))

    fw.run_unreserve(GroupKey(("ns/g",)), [Placement(pod("p"), "n1")], UnreserveReason.REJECTED)

    assert journal == ["B.unreserve(ns/g, 1, rejected)", "A.unreserve(ns/g, 1, rejected)"]


# -- Permit ------------------------------------------------------------------------------------


def allow(*also: str, messages: dict[str, str] | None = None) -> PermitResult:
    return PermitResult(Decision.ALLOW, also_allow=also, messages=messages or {})


def wait(deadline: float | None, plugin: str, **messages: str) -> PermitResult:
    return PermitResult(Decision.WAIT, deadline=deadline, plugin=plugin, messages=messages)


def reject(plugin: str, **messages: str) -> PermitResult:
    return PermitResult(Decision.REJECT, plugin=plugin, messages=messages)


def run_permit(*results: PermitResult, journal: Journal | None = None) -> PermitResult:
    fw = framework(*(FixedPermit(f"P{i}", r, journal) for i, r in enumerate(results)))
    group, plan, _ = an_incomplete_plan()
    return fw.run_permit(CycleState(), group, plan, 100.0)


def test_permit_without_plugins_allows() -> None:
    assert run_permit() is ALLOW


@pytest.mark.parametrize(
    "results",
    [
        [reject("Gang")],
        [allow("uid-x"), reject("Gang")],
        [wait(50.0, "Quota"), reject("Gang")],
        [reject("Gang"), wait(10.0, "Quota")],
    ],
    ids=["alone", "after an allow", "after a wait", "before a wait"],
)
def test_any_reject_rejects(results: list[PermitResult]) -> None:
    journal = Journal()
    result = run_permit(*results, journal=journal)

    assert result.decision is Decision.REJECT
    assert result.plugin == "Gang"
    assert result.also_allow == ()
    assert journal[-1] == f"P{[r.plugin for r in results].index('Gang')}.permit"  # stops there


def test_a_reject_keeps_the_messages_said_so_far() -> None:
    result = run_permit(wait(5.0, "Quota", **{"uid-p": "quota"}), reject("Gang", **{"uid-q": "no"}))
    assert result.messages == {"uid-p": "quota", "uid-q": "no"}


@pytest.mark.parametrize(
    ("results", "deadline", "plugin"),
    [
        ([wait(30.0, "A")], 30.0, "A"),
        ([wait(30.0, "A"), wait(10.0, "B"), wait(20.0, "C")], 10.0, "B"),
        ([wait(10.0, "A"), wait(10.0, "B")], 10.0, "A"),
        ([wait(None, "A"), wait(40.0, "B")], 40.0, "B"),
        ([wait(40.0, "A"), wait(None, "B")], 40.0, "A"),
        ([wait(None, "A")], None, "A"),
        ([allow("uid-x"), wait(25.0, "B"), allow("uid-y")], 25.0, "B"),
    ],
    ids=[
        "one",
        "earliest of three",
        "tie: the first",
        "a deadline beats none",
        "none does not replace a deadline",
        "no deadline",
        "among allows",
    ],
)
def test_any_wait_without_a_reject_waits_until_the_earliest_deadline(
    results: list[PermitResult], deadline: float | None, plugin: str
) -> None:
    result = run_permit(*results)

    assert result.decision is Decision.WAIT
    assert (result.deadline, result.plugin) == (deadline, plugin)
    assert result.also_allow == ()  # nothing held is let go while the group waits


def test_allow_merges_the_held_pods_every_plugin_lets_go_and_their_messages() -> None:
    result = run_permit(
        allow("uid-a", messages={"uid-a": "bound with its gang"}),
        allow(),
        allow("uid-b", "uid-c"),
    )

    assert result.decision is Decision.ALLOW
    assert result.also_allow == ("uid-a", "uid-b", "uid-c")
    assert result.messages == {"uid-a": "bound with its gang"}
    assert result.deadline is None


def test_wait_merges_the_messages_of_all_plugins_later_ones_winning() -> None:
    result = run_permit(
        wait(30.0, "A", **{"uid-p": "first", "uid-q": "q"}), wait(40.0, "B", **{"uid-p": "second"})
    )
    assert result.messages == {"uid-p": "second", "uid-q": "q"}


def test_a_score_plugin_of_static_scope_is_registered_as_a_static_score() -> None:
    label = LabelScore()
    assert framework(label).pods.static_scores == (label,)
