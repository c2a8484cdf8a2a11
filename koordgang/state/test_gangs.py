"""GangRegistry and Gang: membership, PodGroups, lifecycle latches, counting, held members."""

from __future__ import annotations

import pytest

from koordgang.model.gang import GangMode, GangSource, MatchPolicy, PodGroupInfo
from koordgang.model.group_key import GroupKey
from koordgang.model.koordinator import (
    GROUPS_KEY,
    LIGHTWEIGHT_MIN_LABEL,
    LIGHTWEIGHT_NAME_LABEL,
    MATCH_POLICY_KEY,
    MIN_AVAILABLE_KEY,
    MODE_KEY,
    NAME_KEY,
    POD_GROUP_LABEL,
    TIMEOUT_KEY,
)
from koordgang.model.pod import PodInfo
from koordgang.state.gangs import (
    TRANSITIONS,
    GangRegistry,
    GangState,
    GangTransitionError,
)
from koordgang.state.waiting import WaitingPods
from koordgang.testing.builders import (
    DEFAULT_WAIT,
    T0,
    gang_of,
    koordinator_only,
    member,
    podgroup,
    registry,
)


def names(pods: list[PodInfo]) -> list[str]:
    return sorted(p.name for p in pods)


def hold(
    gangs: GangRegistry,
    uid: str,
    node: str = "n1",
    *,
    gang: str = "ns/a",
    group: str = "ns/a",
    since: float = 1.0,
    deadline: float = 601.0,
) -> None:
    """Holds member ``uid`` of ``gang`` placed on ``node`` (a NonStrict gang's Permit waits),
    as the engine does: in the registry's WaitingPods, with the gang as the part."""
    member = gang_of(gangs, gang).members[uid]
    gangs.waiting.add(
        member, node, group=GroupKey((group,)), part=gang, since=since, deadline=deadline
    )


# -- membership --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "annotations", "key", "source"),
    [
        ({POD_GROUP_LABEL: "pg"}, {}, "ns/pg", GangSource.POD_GROUP),
        (
            {LIGHTWEIGHT_NAME_LABEL: "lw", LIGHTWEIGHT_MIN_LABEL: "2"},
            {},
            "ns/lw",
            GangSource.LABELS,
        ),
        ({}, {NAME_KEY: "an", MIN_AVAILABLE_KEY: "2"}, "ns/an", GangSource.ANNOTATIONS),
        (
            {POD_GROUP_LABEL: "pg", LIGHTWEIGHT_NAME_LABEL: "lw"},
            {NAME_KEY: "an"},
            "ns/pg",
            GangSource.POD_GROUP,
        ),
        ({LIGHTWEIGHT_NAME_LABEL: "lw"}, {NAME_KEY: "an"}, "ns/lw", GangSource.LABELS),
        ({POD_GROUP_LABEL: " "}, {NAME_KEY: "an"}, "ns/an", GangSource.ANNOTATIONS),
    ],
)
def test_a_pod_joins_the_gang_named_by_its_first_matching_declaration(
    labels: dict[str, str], annotations: dict[str, str], key: str, source: GangSource
) -> None:
    pod = member("p", None, labels=labels, annotations=annotations)
    gangs = GangRegistry(DEFAULT_WAIT, resolve=koordinator_only)

    gang = gangs.on_pod(pod)

    assert gang is not None
    assert (gang.key, gang.ref.source) == (key, source)
    assert gangs.gang_of(pod.uid) is gang
    assert list(gang.members) == [pod.uid]
    assert [g.key for g in gangs.gangs()] == [key]


def test_a_pod_without_a_gang_declaration_belongs_to_no_gang() -> None:
    pod = member("p", None, labels={"app": "web"}, annotations={MIN_AVAILABLE_KEY: "2"})
    gangs = GangRegistry(DEFAULT_WAIT, resolve=koordinator_only)

    assert gangs.on_pod(pod) is None
    assert gangs.gang_of(pod.uid) is None
    assert list(gangs.gangs()) == []


def test_changing_a_pods_gang_label_moves_it_and_drops_the_emptied_gang() -> None:
    gangs = registry(member("p", "old", how="labels"), member("q", "old", how="labels"))
    moved = member("p", "new", how="labels")

    new = gangs.on_pod(moved)

    assert new is not None and new.key == "ns/new"
    assert gangs.gang_of(moved.uid) is new
    assert names(list(gang_of(gangs, "ns/old").members.values())) == ["q"]

    gangs.on_pod(member("q", "new", how="labels"))

    assert gangs.get("ns/old") is None
    assert names(list(gang_of(gangs, "ns/new").members.values())) == ["p", "q"]


def test_removing_the_gang_declaration_makes_the_pod_ordinary() -> None:
    gangs = registry(member("p"))

    assert gangs.on_pod(member("p", None)) is None
    assert gangs.gang_of("uid-ns-p") is None
    assert gangs.get("ns/a") is None


@pytest.mark.parametrize(
    ("how", "with_podgroup", "kept"),
    [
        ("annotations", False, False),
        ("labels", False, False),
        ("podgroup", False, False),
        ("podgroup", True, True),
    ],
)
def test_deleting_the_last_member_drops_the_gang_unless_its_podgroup_exists(
    how: str, with_podgroup: bool, kept: bool
) -> None:
    podgroups = (podgroup("a"),) if with_podgroup else ()
    gangs = registry(member("p", how=how), member("q", how=how), podgroups=podgroups)

    assert gangs.on_pod_deleted("uid-ns-p") is gang_of(gangs)
    assert gangs.get("ns/a") is not None
    gangs.on_pod_deleted("uid-ns-q")

    assert (gangs.get("ns/a") is not None) is kept
    assert gangs.gang_of("uid-ns-q") is None


def test_deleting_an_unknown_pod_changes_nothing() -> None:
    gangs = registry(member("p"))

    assert gangs.on_pod_deleted("uid-nobody") is None
    assert [g.key for g in gangs.gangs()] == ["ns/a"]


def test_a_podgroup_seen_before_any_member_creates_the_gang_its_members_then_join() -> None:
    gangs = GangRegistry(DEFAULT_WAIT, resolve=koordinator_only)

    gang = gangs.on_podgroup(podgroup("a", 3, created=-50))

    assert gang is not None
    assert gangs.get("ns/a") is gang
    assert gang.ref.source is GangSource.POD_GROUP
    assert gang.members == {}
    assert gang.needs_podgroup() is False
    assert gang.spec.min_available == 3
    assert gang.created_at() == T0 - 50

    joined = gangs.on_pod(member("p", how="podgroup", min_available=None))

    assert joined is gang
    assert list(gang.members) == ["uid-ns-p"]


def test_deleting_the_podgroup_drops_an_empty_gang_and_leaves_members_waiting_for_it() -> None:
    gangs = registry(podgroups=(podgroup("a"), podgroup("b")))
    gangs.on_pod(member("p", "b", how="podgroup", min_available=None))

    empty = gang_of(gangs, "ns/a")
    assert gangs.on_podgroup_deleted("ns/a") is empty
    assert gangs.get("ns/a") is None

    gang = gangs.on_podgroup_deleted("ns/b")

    assert gang is gang_of(gangs, "ns/b")
    assert gang.podgroup is None
    assert gang.needs_podgroup() is True
    assert gang.spec.startable is False


def test_a_podgroup_update_re_resolves_the_gang_spec() -> None:
    gangs = registry(member("p", how="podgroup", min_available=None), podgroups=(podgroup("a", 2),))
    assert gang_of(gangs).spec.min_available == 2

    gangs.on_podgroup(podgroup("a", 5))

    assert gang_of(gangs).spec.min_available == 5


@pytest.mark.parametrize(
    ("how", "podgroups", "needs"),
    [
        ("podgroup", (), True),
        ("podgroup", (podgroup("a"),), False),
        ("podgroup", (podgroup("other"),), True),
        ("labels", (), False),
        ("annotations", (), False),
    ],
)
def test_needs_podgroup_only_for_podgroup_gangs_whose_podgroup_is_missing(
    how: str, podgroups: tuple[PodGroupInfo, ...], needs: bool
) -> None:
    gang = gang_of(registry(member("p", how=how, min_available=None), podgroups=podgroups))

    assert gang.needs_podgroup() is needs


# -- the gang's configuration -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "representative", "min_available"),
    [
        ([member("young", created=20, min_available="5"), member("old", created=10)], "old", 2),
        ([member("w-b", min_available="5"), member("w-a", min_available="3")], "w-a", 3),
        (
            [member("w-b", created=5, min_available="5"), member("w-a", created=9)],
            "w-b",
            5,
        ),
    ],
)
def test_the_oldest_member_then_the_first_by_name_configures_the_gang(
    pods: list[PodInfo], representative: str, min_available: int
) -> None:
    gang = gang_of(registry(*pods))

    rep = gang.representative()
    assert rep is not None and rep.name == representative
    assert gang.spec.min_available == min_available


def test_the_representatives_options_configure_the_gang_and_changes_re_resolve_it() -> None:
    old = member("old", created=1, annotations={MODE_KEY: "NonStrict"}, min_available="3")
    gangs = registry(old, member("young", created=2, min_available="7"))
    gang = gang_of(gangs)
    assert (gang.spec.min_available, gang.spec.mode) == (3, GangMode.NON_STRICT)

    gangs.on_pod(member("old", created=1, min_available="4"))
    assert (gang.spec.min_available, gang.spec.mode) == (4, GangMode.STRICT)

    gangs.on_pod_deleted(old.uid)
    rep = gang.representative()
    assert rep is not None and rep.name == "young"
    assert gang.spec.min_available == 7


def test_a_gang_without_members_has_no_representative_and_dates_from_its_podgroup() -> None:
    gang = gang_of(registry(podgroups=(podgroup("a", created=30),)))

    assert gang.representative() is None
    assert gang.created_at() == T0 + 30


@pytest.mark.parametrize(
    ("podgroups", "created_at"),
    [((), T0 + 10), ((podgroup("a", created=99),), T0 + 99)],
)
def test_a_gang_dates_from_its_podgroup_or_else_its_oldest_member(
    podgroups: tuple[PodGroupInfo, ...], created_at: float
) -> None:
    pods = [member("p", how="podgroup", created=20), member("q", how="podgroup", created=10)]

    assert gang_of(registry(*pods, podgroups=podgroups)).created_at() == created_at


@pytest.mark.parametrize(
    ("groups", "existing", "expected"),
    [
        (None, [], [("ns/a", "ns/a")]),
        (
            '["ns/b", "other/c"]',
            [member("b-0", "b")],
            [("ns/a", "ns/a"), ("ns/b", "ns/b"), ("other/c", None)],
        ),
        (
            '["other/c", "ns/a"]',
            [member("c-0", "c", namespace="other")],
            [("ns/a", "ns/a"), ("other/c", "other/c")],
        ),
        ("not json", [member("b-0", "b")], [("ns/a", "ns/a")]),
    ],
)
def test_group_lists_every_gang_of_the_gang_group_and_none_for_unknown_partners(
    groups: str | None, existing: list[PodInfo], expected: list[tuple[str, str | None]]
) -> None:
    annotations = {GROUPS_KEY: groups} if groups is not None else {}
    gangs = registry(member("a-0", annotations=annotations), *existing)

    group = gangs.group(gang_of(gangs))

    assert [(key, g.key if g is not None else None) for key, g in group] == expected
    for key, g in group:
        assert g is gangs.get(key)


def test_a_podgroup_known_without_members_makes_its_gang_a_known_partner() -> None:
    gangs = registry(
        member("a-0", annotations={GROUPS_KEY: '["ns/b"]'}), podgroups=(podgroup("b"),)
    )

    group = dict(gangs.group(gang_of(gangs)))

    assert group["ns/b"] is gangs.get("ns/b")
    assert group["ns/b"] is not None


# -- lifecycle latches -------------------------------------------------------------------------


def test_a_bound_member_latches_the_gang_satisfied_as_after_a_restart() -> None:
    gangs = registry(member("p"), member("q", node="n1"))
    gang = gang_of(gangs)

    assert gang.satisfied is True
    assert gang.timed_out is False
    assert gang.state is GangState.SATISFIED


def test_a_member_with_the_timeout_annotation_latches_the_gang_timed_out() -> None:
    gangs = registry(member("p"), member("q", annotations={TIMEOUT_KEY: "true"}))
    gang = gang_of(gangs)

    assert gang.timed_out is True
    assert gang.satisfied is False
    assert gang.state is GangState.TIMED_OUT


@pytest.mark.parametrize("value", ["false", "True", "yes", ""])
def test_only_the_exact_timeout_value_true_latches(value: str) -> None:
    gang = gang_of(registry(member("p", annotations={TIMEOUT_KEY: value})))

    assert gang.timed_out is False
    assert gang.state is GangState.PENDING


def test_satisfied_never_reverts() -> None:
    gangs = registry(member("p", node="n1"), member("q"))
    gang = gang_of(gangs)

    hold(gangs, "uid-ns-q")
    gangs.on_pod_deleted("uid-ns-p")  # the bound member goes away
    gangs.on_pod(member("q", annotations={TIMEOUT_KEY: "true"}))  # a stray timeout mark
    gangs.waiting.release_group(GroupKey(("ns/a",)))

    assert gang.satisfied is True
    assert gang.timed_out is False
    assert gang.state is GangState.SATISFIED


def test_timed_out_never_reverts() -> None:
    gangs = registry(member("p", annotations={TIMEOUT_KEY: "true"}), member("q"))
    gang = gang_of(gangs)

    gangs.on_pod(member("p"))  # annotation removed by hand
    gangs.on_pod(member("q", node="n1"))  # bound by someone else
    hold(gangs, "uid-ns-p", "n2")

    assert gang.timed_out is True
    assert gang.satisfied is False
    assert gang.state is GangState.TIMED_OUT


def worker(name: str, *, timed_out: bool = False, node: str = "") -> PodInfo:
    """A member of PodGroup gang ns/a."""
    annotations = {TIMEOUT_KEY: "true"} if timed_out else {}
    return member(name, how="podgroup", min_available=None, annotations=annotations, node=node)


@pytest.mark.parametrize("latch", ["satisfied", "timed_out"])
def test_a_podgroup_gang_emptied_of_its_members_starts_afresh_as_after_a_restart(
    latch: str,
) -> None:
    # The timeout message tells users to delete and recreate the pods to retry. Without a
    # PodGroup the emptied gang is dropped; with one the gang object stays, and must not keep
    # a past that a restart would not see in the cluster.
    pg = podgroup("a", 2)
    gangs = registry(worker("p"), worker("q"), podgroups=(pg,))
    gang = gang_of(gangs)
    gang.first_attempt = T0
    gang.last_message = "gang ns/a: 1/2 members placed, min 2"
    getattr(gang, "mark_" + latch)()

    gangs.on_pod_deleted("uid-ns-p")
    gangs.on_pod_deleted("uid-ns-q")
    gangs.on_pod(worker("p2"))
    gangs.on_pod(worker("q2"))

    restarted = gang_of(registry(worker("p2"), worker("q2"), podgroups=(pg,)))
    assert gang_of(gangs) is gang
    for fresh in (gang, restarted):
        assert (fresh.satisfied, fresh.timed_out) == (False, False)
        assert fresh.state is GangState.PENDING
        assert fresh.first_attempt is None
        assert fresh.last_message == ""


def test_replacements_created_while_timed_out_members_go_start_afresh_once_none_is_left() -> None:
    # A Job recreates each deleted pod at once, so the informer sees delete p, add p2,
    # delete q, add q2: the gang is never empty, yet once p and q are gone nothing in the
    # cluster says it timed out (a restart would schedule p2 and q2).
    pg = podgroup("a", 2)
    gangs = registry(worker("p"), worker("q"), podgroups=(pg,))
    gang = gang_of(gangs)
    gang.mark_timed_out()
    gangs.on_pod(worker("p", timed_out=True))
    gangs.on_pod(worker("q", timed_out=True))

    gangs.on_pod_deleted("uid-ns-p")
    gangs.on_pod(worker("p2"))
    assert gang.timed_out is True  # q still carries the mark
    gangs.on_pod_deleted("uid-ns-q")
    gangs.on_pod(worker("q2"))

    assert gang_of(registry(worker("p2"), worker("q2"), podgroups=(pg,))).timed_out is False
    assert gang.timed_out is False
    assert gang.state is GangState.PENDING


@pytest.mark.parametrize(
    ("setup", "action", "message"),
    [
        ("satisfied", "mark_timed_out", "gang ns/a: Satisfied -> TimedOut is not allowed"),
        ("timed_out", "mark_satisfied", "gang ns/a: TimedOut -> Satisfied is not allowed"),
    ],
)
def test_leaving_a_latched_state_raises_gang_transition_error(
    setup: str, action: str, message: str
) -> None:
    gang = gang_of(registry(member("p")))
    getattr(gang, "mark_" + setup)()

    with pytest.raises(GangTransitionError) as caught:
        getattr(gang, action)()

    assert str(caught.value) == message
    assert (gang.satisfied, gang.timed_out) == (setup == "satisfied", setup == "timed_out")


@pytest.mark.parametrize(
    ("annotations", "held", "before", "action", "after"),
    [
        ({}, False, GangState.PENDING, "mark_satisfied", GangState.SATISFIED),
        ({}, False, GangState.PENDING, "mark_timed_out", GangState.TIMED_OUT),
        ({}, True, GangState.WAITING, "mark_satisfied", GangState.SATISFIED),
        ({}, True, GangState.WAITING, "mark_timed_out", GangState.TIMED_OUT),
        (
            {MIN_AVAILABLE_KEY: "two"},
            False,
            GangState.INVALID,
            "mark_timed_out",
            GangState.TIMED_OUT,
        ),
        # Bound before its declaration was broken: the bound member still means satisfied.
        (
            {MIN_AVAILABLE_KEY: "two"},
            False,
            GangState.INVALID,
            "mark_satisfied",
            GangState.SATISFIED,
        ),
        ({}, False, GangState.PENDING, "mark_satisfied_twice", GangState.SATISFIED),
        ({}, False, GangState.PENDING, "mark_timed_out_twice", GangState.TIMED_OUT),
    ],
)
def test_latches_are_reachable_from_every_open_state_and_idempotent(
    annotations: dict[str, str], held: bool, before: GangState, action: str, after: GangState
) -> None:
    gangs = registry(member("p", annotations=annotations), member("q"))
    gang = gang_of(gangs)
    if held:
        hold(gangs, "uid-ns-q")
    assert gang.state is before

    if action.endswith("_twice"):
        getattr(gang, action.removesuffix("_twice"))()
        action = action.removesuffix("_twice")
    getattr(gang, action)()

    assert gang.state is after
    # Latching does not touch the held pods: the engine releases or binds them.
    assert gang.held() == int(held)
    assert ("uid-ns-q" in gangs.waiting) is held


def test_a_bound_member_of_an_invalid_gang_latches_it_satisfied() -> None:
    gangs = registry(member("p", min_available="0"))
    assert gang_of(gangs).state is GangState.INVALID

    gangs.on_pod(member("p", min_available="0", node="n1"))

    assert gang_of(gangs).state is GangState.SATISFIED


def test_a_satisfied_gang_is_pending_again_only_while_no_member_is_bound() -> None:
    gangs = registry(member("p"), member("q"))
    gang = gang_of(gangs)
    gang.mark_satisfied()
    assert gang.undo_satisfied() is True
    assert gang.state is GangState.PENDING
    gang.mark_satisfied()
    gangs.on_pod(member("p", node="n1"))
    assert gang.undo_satisfied() is False
    assert gang_of(gangs).state is GangState.SATISFIED


def test_the_transition_table_makes_satisfied_and_timed_out_terminal() -> None:
    assert set(TRANSITIONS) == set(GangState)
    # Satisfied goes back to pending only through undo_satisfied (no member bound).
    assert TRANSITIONS[GangState.SATISFIED] == frozenset({GangState.PENDING})
    assert TRANSITIONS[GangState.TIMED_OUT] == frozenset()
    for state in (GangState.PENDING, GangState.WAITING):
        assert {GangState.SATISFIED, GangState.TIMED_OUT} <= TRANSITIONS[state]
    assert GangState.TIMED_OUT in TRANSITIONS[GangState.INVALID]


@pytest.mark.parametrize(
    ("pods", "podgroups", "held", "state"),
    [
        ([member("p")], (), False, GangState.PENDING),
        ([member("p"), member("q")], (), True, GangState.WAITING),
        ([member("p", min_available="many")], (), False, GangState.INVALID),
        ([member("p", min_available=None)], (), False, GangState.INVALID),
        # A PodGroup that has not arrived yet is a passing state, not a mistake.
        ([member("p", how="podgroup")], (), False, GangState.PENDING),
        ([member("p", how="podgroup")], (podgroup("a", None),), False, GangState.INVALID),
    ],
)
def test_the_unlatched_state_is_derived_from_the_facts(
    pods: list[PodInfo], podgroups: tuple[PodGroupInfo, ...], held: bool, state: GangState
) -> None:
    gangs = registry(*pods, podgroups=podgroups)
    if held:
        hold(gangs, "uid-ns-q")

    assert gang_of(gangs).state is state


# -- counting ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "counted"),
    [
        (None, 3),
        ("once-satisfied", 3),
        ("waiting-and-running", 3),
        ("only-waiting", 1),
    ],
)
def test_counted_includes_bound_members_unless_the_policy_is_only_waiting(
    policy: str | None, counted: int
) -> None:
    annotations = {MATCH_POLICY_KEY: policy} if policy is not None else {}
    gangs = registry(
        member("a-0", min_available="4", annotations=annotations),
        member("a-1", node="n1"),
        member("a-2", node="n2", phase="Pending"),
        member("a-3", node="n3", phase="Succeeded"),
        member("a-4", node="n4", phase="Failed"),
        member("a-5"),
        member("a-6"),
    )
    hold(gangs, "uid-ns-a-5", "n5")

    assert gang_of(gangs).counted() == counted


@pytest.mark.parametrize(
    ("policy", "satisfied", "exempt"),
    [
        ("once-satisfied", True, True),
        ("once-satisfied", False, False),
        ("waiting-and-running", True, False),
        ("only-waiting", True, False),
        ("only-waiting", False, False),
    ],
)
def test_exempt_only_when_satisfied_with_the_once_satisfied_policy(
    policy: str, satisfied: bool, exempt: bool
) -> None:
    gang = gang_of(registry(member("p", annotations={MATCH_POLICY_KEY: policy})))
    if satisfied:
        gang.mark_satisfied()

    assert gang.spec.match_policy is MatchPolicy(policy)
    assert gang.exempt() is exempt


def test_pending_members_excludes_bound_terminal_terminating_and_held_pods() -> None:
    gangs = registry(
        member("pending-1"),
        member("pending-2", phase="Pending"),
        member("bound", node="n1"),
        member("bound-starting", node="n1", phase="Pending"),
        member("succeeded", phase="Succeeded"),
        member("failed", phase="Failed"),
        member("terminating", deleting=True),
        member("held"),
    )
    gang = gang_of(gangs)
    hold(gangs, "uid-ns-held", "n2")

    assert names(gang.pending_members()) == ["pending-1", "pending-2"]
    assert names(list(gang.live_members())) == [
        "bound",
        "bound-starting",
        "held",
        "pending-1",
        "pending-2",
    ]
    assert names(list(gang.bound_members())) == ["bound", "bound-starting"]


# -- held members ------------------------------------------------------------------------------


def test_held_counts_the_members_the_waiting_registry_holds_for_the_gang() -> None:
    gangs = registry(member("p"), member("q"), member("r"), member("b-0", "b"))
    gang = gang_of(gangs)
    assert (gang.held(), gang.state) == (0, GangState.PENDING)

    hold(gangs, "uid-ns-p", "n1")
    hold(gangs, "uid-ns-q", "n2")
    # Held for the same group, but as a member of another gang: not this gang's.
    hold(gangs, "uid-ns-b-0", "n3", gang="ns/b")

    assert gang.held() == 2
    assert gang.state is GangState.WAITING
    assert gang_of(gangs, "ns/b").held() == 1
    assert names(gang.pending_members()) == ["r"]


def test_releasing_the_group_makes_the_gang_pending_again() -> None:
    gangs = registry(member("p"), member("q"), member("b-0", "b"))
    gang = gang_of(gangs)
    hold(gangs, "uid-ns-p")
    hold(gangs, "uid-ns-b-0", gang="ns/b")

    released = gangs.waiting.release_group(GroupKey(("ns/a",)))

    assert sorted(w.pod.uid for w in released) == ["uid-ns-b-0", "uid-ns-p"]
    assert gang.held() == 0
    assert gang.state is GangState.PENDING
    assert names(gang.pending_members()) == ["p", "q"]


def test_a_held_member_let_go_is_pending_again_and_no_longer_counted() -> None:
    gangs = registry(member("p"), member("q"), member("r"))
    gang = gang_of(gangs)
    hold(gangs, "uid-ns-p")
    hold(gangs, "uid-ns-q")
    assert gang.counted() == 2

    gangs.waiting.remove("uid-ns-p")

    assert gang.held() == 1
    assert gang.counted() == 1
    assert names(gang.pending_members()) == ["p", "r"]


def test_gangs_share_the_waiting_registry_they_were_given() -> None:
    waiting = WaitingPods()
    gangs = registry(member("p"), member("q"), waiting=waiting)
    assert gangs.waiting is waiting

    hold(gangs, "uid-ns-p")

    assert "uid-ns-p" in waiting
    assert gang_of(gangs).held() == 1
    assert (
        GangRegistry(DEFAULT_WAIT, resolve=koordinator_only).waiting is not waiting
    )  # each gets its own by default


def test_a_held_member_seen_bound_latches_the_gang_satisfied() -> None:
    gangs = registry(member("p"), member("q"))
    gang = gang_of(gangs)
    hold(gangs, "uid-ns-p", "n1")
    hold(gangs, "uid-ns-q", "n2")

    gangs.on_pod(member("p", node="n1"))

    assert gang.satisfied is True
    assert gang.state is GangState.SATISFIED
    # The registry of waiting pods is the engine's to change: the gang leaves it alone.
    assert gang.held() == 2
