"""Gangs through the engine: all or nothing, NonStrict holds and their exact timeout, held
placements on a node that goes, and what a restarted scheduler rebuilds from a listing."""

from __future__ import annotations

import pytest

from koordgang.model.koordinator import TIMEOUT_KEY
from koordgang.model.pod import PodInfo
from koordgang.state.gangs import Gang
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import bound, gang, node, pod, uid_of
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness, MakeScheduler

NO_CPU = "0/1 nodes are available: 1 Insufficient cpu."
#: What preemption adds when no pod of lower priority runs.
NOTHING_TO_EVICT = "preemption is not helpful: no pod of lower priority to evict"
TIMED_OUT = (
    "gang ns/x timed out after 10s without reaching min 4: its reservations were released and "
    "its pods will not be scheduled again (delete and recreate them to retry)"
)


def names(pods: list[PodInfo]) -> list[str]:
    return [p.name for p in pods]


def gang_state(sched: Harness, key: str) -> Gang:
    found = sched.gangs.get(key)
    assert found is not None
    return found


def used_cpu(sched: Harness, name: str) -> int:
    state = sched.cache.node(name)
    assert state is not None
    return state.requested.get("cpu", 0)


async def hold_three_of_four(sched: Harness, waiting_time: str = "10s") -> list[PodInfo]:
    """A NonStrict gang ns/x of 4 (min 4) on one node with room for 3: three placements held."""
    members = gang("x", 4, 4, mode="NonStrict", waiting_time=waiting_time)
    sched.list(nodes=[node("n1", cpu="3")], pods=members)
    await sched.run()
    assert len(sched.waiting) == 3
    return members


async def test_a_gang_larger_than_the_room_binds_nothing_and_every_member_says_why(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    members = gang("x", 4, 4)
    sched.list(nodes=[node("n1", cpu="3")], pods=members)

    assert await sched.run() == 1

    assert api.binds(landed=False) == []
    assert used_cpu(sched, "n1") == 0  # Strict: nothing held either
    for member in members:
        condition = api.condition(member.name)
        assert condition is not None
        assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
        assert (
            condition["message"]
            == f"gang ns/x: 3/4 members placed, min 4; {NO_CPU}; {NOTHING_TO_EVICT}"
        )
        [event] = api.events(member.name)
        assert (event["type"], event["reason"]) == ("Warning", "FailedScheduling")
        assert event["message"] == condition["message"]

    # The room appears: the whole gang binds (once its backoff is over).
    sched.intake.on_node_upsert(node("n1", cpu="4", resource_version="2"))
    clock.advance(sched.settings.initial_backoff)
    await sched.run()
    assert sorted(api.binds()) == [(m.name, "n1") for m in members]


async def test_a_nonstrict_gang_holds_its_placements_and_nobody_else_takes_the_room(
    sched: Harness, api: FakeApi
) -> None:
    members = await hold_three_of_four(sched)

    held = [m for m in members if m.uid in sched.waiting]
    assert len(held) == 3
    assert all(sched.cache.is_assumed(m.uid) for m in held)
    assert used_cpu(sched, "n1") == 3000
    assert api.binds(landed=False) == []
    holding = "(holding 3 reservation(s) for at most 10s)"
    for member in members:
        condition = api.condition(member.name)
        assert condition is not None
        assert condition["message"] == f"gang ns/x: 3/4 members placed, min 4 {holding}; {NO_CPU}"

    sched.add(pod("plain"))
    await sched.run()
    assert api.binds(landed=False) == []
    condition = api.condition("plain")
    assert condition is not None and condition["message"] == f"{NO_CPU}; {NOTHING_TO_EVICT}"
    assert "Insufficient cpu" in condition["message"]


async def test_a_nonstrict_gang_times_out_exactly_at_its_waiting_time_and_releases_the_room(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    placed_at = clock()
    members = await hold_three_of_four(sched)
    sched.add(pod("plain"))
    await sched.run()
    deadline = sched.waiting.next_deadline()
    assert deadline == placed_at + 10.0

    # One millisecond before: nothing happens.
    clock.now = deadline - 0.001
    before = len(api.calls)
    await sched.run()
    assert len(sched.waiting) == 3
    assert api.calls[before:] == []
    assert 0.0 <= sched.loop._idle_wait() <= deadline - clock()

    # At the deadline: every member is marked, told, and the room is free.
    clock.now = deadline
    await sched.run()
    assert len(sched.waiting) == 0
    assert used_cpu(sched, "n1") == 0
    for member in members:
        assert api.annotation_patches(member.name) == [{TIMEOUT_KEY: "true"}]
        [event] = api.events(member.name, "GangTimeout")
        assert (event["type"], event["message"]) == ("Warning", TIMED_OUT)
        assert {"reason": "GangTimeout", "message": TIMED_OUT}.items() <= next(
            c for c in api.conditions(member.name) if c["reason"] == "GangTimeout"
        ).items()
    assert api.binds(landed=False) == []

    # The plain pod takes the released room on the next step; the gang never binds.
    await sched.run()
    assert api.binds() == [("plain", "n1")]
    sched.intake.on_node_upsert(node("n2", cpu="8"))
    clock.advance(120)
    await sched.run()
    assert [name for name, _ in api.binds(landed=False)] == ["plain"]


async def test_timed_out_members_are_not_told_they_are_replacements(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    """At the timeout the released members are queued again before the informer shows their
    timeout annotation; PreEnqueue must not take them for replacements of themselves (it
    did, and overwrote their GangTimeout condition with "this pod will be scheduled once the
    gang's timed-out members are deleted")."""
    members = await hold_three_of_four(sched)
    deadline = sched.waiting.next_deadline()
    assert deadline is not None
    clock.now = deadline
    await sched.run()
    await sched.run()

    for member in members:
        condition = api.condition(member.name)
        assert condition is not None
        assert (condition["reason"], condition["message"]) == ("GangTimeout", TIMED_OUT)
        assert [e["reason"] for e in api.events(member.name)] in (
            ["GangTimeout"],
            ["FailedScheduling", "GangTimeout"],  # the one explanation before the timeout
        )


async def test_the_idle_wait_never_overshoots_the_next_deadline(
    sched: Harness, clock: FakeClock
) -> None:
    await hold_three_of_four(sched, waiting_time="500ms")
    deadline = sched.waiting.next_deadline()
    assert deadline is not None

    # Right after the hold the tick is a whole second away; the deadline comes first.
    assert sched.loop._idle_wait() == deadline - clock()
    for left in (0.4, 0.25, 0.01, 0.001):
        clock.now = deadline - left
        sched.step()
        assert 0.0 <= sched.loop._idle_wait() <= left
    clock.now = deadline
    sched.step()
    assert len(sched.waiting) == 0


async def test_a_held_placement_whose_node_is_deleted_is_given_up_and_placed_again(
    sched: Harness, api: FakeApi
) -> None:
    members = gang("x", 4, 4, mode="NonStrict", waiting_time="10s")
    sched.list(nodes=[node("n1", cpu="2"), node("n2", cpu="1")], pods=members)
    await sched.run()
    on_n1 = [w.pod.uid for w in sched.waiting if w.node == "n1"]
    assert len(on_n1) == 2 and len(sched.waiting) == 3

    sched.intake.on_node_delete("n1")
    assert len(sched.waiting) == 1
    assert all(not sched.cache.is_assumed(uid) for uid in on_n1)
    assert all(uid in sched.queue for uid in on_n1)
    assert sched.cache.node("n1") is None

    sched.intake.on_node_upsert(node("n3", cpu="4"))
    await sched.run()
    placed = dict(api.binds())
    assert sorted(placed) == sorted(names(members))
    assert "n1" not in placed.values()
    by_uid = {m.uid: m.name for m in members}
    assert all(placed[by_uid[uid]] == "n3" for uid in on_n1)


async def test_after_a_restart_a_gang_with_a_bound_member_is_satisfied_and_a_new_member_binds_alone(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    old, new = gang("x", 2, 4)
    sched = make_scheduler()
    sched.list(nodes=[node("n1", cpu="4")], pods=[bound(old, "n1"), new])

    await sched.run()

    assert api.binds() == [(new.name, "n1")]
    assert gang_state(sched, "ns/x").satisfied


async def test_after_a_restart_members_annotated_timed_out_are_never_scheduled(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    members = gang("x", 4, 4, mode="NonStrict", extra={TIMEOUT_KEY: "true"})
    sched = make_scheduler()
    sched.list(nodes=[node("n1", cpu="8")], pods=members)

    await sched.run()
    clock.advance(600)
    sched.intake.on_node_upsert(node("n2", cpu="8"))
    await sched.run()

    assert api.binds(landed=False) == []
    assert all(m.uid not in sched.queue for m in members)
    assert gang_state(sched, "ns/x").timed_out
    # A replacement without the annotation waits too, and is told why.
    sched.add(pod("x-9", annotations=dict(members[0].annotations) | {TIMEOUT_KEY: "false"}))
    await sched.run()
    assert api.binds(landed=False) == []
    condition = api.condition("x-9")
    assert condition is not None and condition["reason"] == "GangTimeout"
    assert uid_of("x-9") not in sched.queue


@pytest.mark.parametrize("minimum", [3, 4])
async def test_a_timeout_annotation_arriving_by_watch_takes_the_queued_members_out(
    make_scheduler: MakeScheduler, api: FakeApi, minimum: int
) -> None:
    """A gang times out by an event too: another leader's timeout annotation lands after this
    one listed (or a user sets it). Members queued before it wait outside the queue, told
    why; none is tried again (nor bound, had the room been there)."""
    members = gang("x", 4, minimum, mode="NonStrict")
    sched = make_scheduler()
    sched.list(nodes=[node("n1", cpu="2")], pods=members[:3])
    marked = pod("x-3", annotations=dict(members[3].annotations) | {TIMEOUT_KEY: "true"})
    sched.add(marked)
    sched.intake.on_node_upsert(node("n2", cpu="8"))
    await sched.run()

    assert gang_state(sched, "ns/x").timed_out
    assert api.binds(landed=False) == []
    for member in members[:3]:
        assert member.uid not in sched.queue
        condition = api.condition(member.name)
        assert condition is not None and condition["reason"] == "GangTimeout"


async def test_gang_metrics_count_phases_waits_and_timeouts(
    sched: Harness, clock: FakeClock
) -> None:
    sched.list(
        nodes=[node("n1", cpu="3")],
        pods=[*gang("ok", 2, 2), *gang("x", 4, 4, mode="NonStrict", waiting_time="10s")],
    )
    await sched.run()
    clock.advance(11)
    await sched.run()
    sched.scheduler.loop.tick(clock())
    text = sched.scheduler.metrics.render().decode()
    assert "koordgang_gang_wait_seconds_count 1.0" in text
    assert "koordgang_gang_timeouts_total 1.0" in text
    assert 'koordgang_gangs{phase="Satisfied"} 1.0' in text
    assert 'koordgang_gangs{phase="TimedOut"} 1.0' in text
    assert 'koordgang_gangs_by_api{api="koordinator"} 2.0' in text
    assert 'koordgang_gangs_by_api{api="volcano"} 0.0' in text


async def test_every_pending_member_of_a_gang_made_over_time_ends_with_the_same_current_message(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    """A Job makes the members of a NonStrict gang one by one; three are held, the fourth does
    not fit. Then a held member goes (its Job deletes it) and the gang is short of members: the
    member that is retried and the members still held are told the same, current thing."""
    members = gang("x", 4, 4, mode="NonStrict", waiting_time="60s")
    sched.list(nodes=[node("n1", cpu="3")], pods=[])
    for member in members:
        sched.add(member)
        await sched.run()
        clock.advance(0.2)
    assert len(sched.waiting) == 3

    gone = next(m for m in members if m.uid in sched.waiting)
    sched.intake.on_pod_delete(gone.uid)
    # Something changes in the cluster: the member that did not fit is tried again.
    sched.intake.on_node_upsert(node("n1", cpu="3", labels={"zone": "a"}, resource_version="2"))
    clock.advance(sched.settings.max_backoff)
    await sched.run()

    pending = [m for m in members if m.uid != gone.uid]
    told = {m.name: (api.condition(m.name) or {}).get("message") for m in pending}
    assert set(told.values()) == {"gang ns/x: 3/4 members created, min 4"}, told
    for member in pending:
        assert api.events(member.name, "FailedScheduling")[-1]["message"] == told[member.name]
