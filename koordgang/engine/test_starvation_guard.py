"""The starvation guard through the engine: a job that has not fitted for ``reserveAfter`` holds
the nodes it will fit on, nothing of ours at its priority is placed there meanwhile (backfill
goes elsewhere, and hears why), it binds whole once the pods there finish, nothing is evicted
for it, and a higher-priority job still takes the room."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from koordgang.plugins.starvationguard import StarvationGuard
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import bound, gang, node, pod, uid_of
from koordgang.testing.harness import Harness, MakeScheduler

RESERVE_AFTER = 30.0


@pytest.fixture
async def guarded(make_scheduler: MakeScheduler) -> Harness:
    return make_scheduler(reserve_after=RESERVE_AFTER)


def small_pods(per_node: dict[str, int]) -> list[Any]:
    """Pods of ours, one cpu each, already running (same priority as the big job)."""
    return [
        bound(pod(f"small-{name}-{i}"), name)
        for name, count in per_node.items()
        for i in range(count)
    ]


def status_patches(api: FakeApi, name: str) -> list[dict[str, Any]]:
    path = f"/api/v1/namespaces/ns/pods/{name}/status"
    return [c.body["status"] for c in api.landed() if c.method == "PATCH" and c.path == path]


def nominated(api: FakeApi, name: str) -> str | None:
    patches = [p for p in status_patches(api, name) if "nominatedNodeName" in p]
    return patches[-1]["nominatedNodeName"] if patches else None


def message(api: FakeApi, name: str) -> str:
    condition = api.condition(name)
    assert condition is not None, f"{name} was told nothing"
    return str(condition["message"])


def deletes(api: FakeApi) -> list[str]:
    return [c.path.rsplit("/", 1)[1] for c in api.landed() if c.method == "DELETE"]


async def retry(sched: Harness, seconds: float = 11) -> None:
    sched.clock.advance(seconds)
    sched.scheduler.signals.request_move()
    await sched.run()


async def reserve(sched: Harness, api: FakeApi, blockers: list[Any], members: list[Any]) -> None:
    """Three busy 8-cpu nodes and a spare 2-cpu one; the big job (3 x 8 cpu) waits past
    reserveAfter and reserves."""
    nodes = [node(f"n{i}", cpu="8") for i in (1, 2, 3)] + [node("spare", cpu="2")]
    sched.list(nodes=nodes, pods=blockers + members)
    await sched.run()
    assert api.binds() == []
    assert all(nominated(api, m.name) is None for m in members)
    await retry(sched, RESERVE_AFTER + 1)


async def test_a_starving_job_holds_nodes_binds_when_their_pods_finish_and_evicts_nothing(
    guarded: Harness, api: FakeApi
) -> None:
    blockers = small_pods({"n1": 1, "n2": 2, "n3": 3})
    members = gang("big", 3, 3, cpu="8")
    await reserve(guarded, api, blockers, members)

    held = {m.name: nominated(api, m.name) for m in members}
    assert sorted(held.values(), key=str) == ["n1", "n2", "n3"]
    for member in members:
        text = message(api, member.name)
        assert text.startswith("holding 3 nodes for ns/big since "), text
        assert text.endswith(": 0/3 have room, waiting for 6 pods to finish"), text

    # Backfill: a small pod of the same priority goes to the one node not held, and the next
    # one, with no room left there, hears which nodes are held and for whom.
    guarded.add(pod("later-0"), pod("later-1", cpu="2"))
    await guarded.run()
    assert ("later-0", "spare") in api.binds()
    assert "later-1" not in dict(api.binds())
    assert "3 node(s) held for ns/big" in message(api, "later-1")

    # The pods there finish (they are never evicted); the job binds whole, where it was held.
    for blocker in blockers[:-1]:
        guarded.intake.on_pod_delete(blocker.uid)
    await retry(guarded)
    assert not any(name.startswith("big-") for name, _ in api.binds())
    assert message(api, "big-0").endswith(": 2/3 have room, waiting for 1 pod to finish")
    guarded.intake.on_pod_delete(blockers[-1].uid)
    await retry(guarded, 1)
    placed = {name: node for name, node in api.binds() if name.startswith("big-")}
    assert sorted(placed) == sorted(held)
    assert set(placed.values()) == set(held.values())
    assert deletes(api) == []


async def test_a_higher_priority_pod_takes_held_room_and_the_reserving_job_plans_again(
    guarded: Harness, api: FakeApi
) -> None:
    blockers = small_pods({"n1": 1, "n2": 1, "n3": 1})
    members = gang("big", 3, 3, cpu="8")
    await reserve(guarded, api, blockers, members)
    assert all(nominated(api, m.name) for m in members)

    # 7 cpu free on every node but held: a higher-priority pod takes one node's room.
    # Preemption takes the room held for a lower priority without evicting anything: the
    # urgent pod is nominated there at once and binds on its next attempt.
    guarded.add(pod("urgent", cpu="4", priority=100))
    await guarded.run()
    urgent_node = nominated(api, "urgent")
    assert urgent_node in {"n1", "n2", "n3"}
    # The member held there lost its node, and hears why; the others keep theirs.
    losers = [m.name for m in members if nominated(api, m.name) is None]
    assert len(losers) == 1
    loser = losers[0]
    assert "given up: the room goes to higher-priority" in message(api, loser)
    await retry(guarded)
    assert ("urgent", urgent_node) in api.binds()
    assert deletes(api) == []
    # While the urgent pod runs, no waiting lets the job fit: it holds nothing.
    guard = next(p for p in guarded.framework.plugins if p.name == "StarvationGuard")
    assert isinstance(guard, StarvationGuard)
    assert guard.reservations() == {}
    assert "holding" not in message(api, "big-0")
    assert "Insufficient cpu" in message(api, "big-0")
    # Once it is gone the job reserves again at once (it keeps its time waited), and binds
    # when the small pods finish.
    guarded.intake.on_pod_delete(uid_of("urgent"))
    await retry(guarded)
    assert all(nominated(api, m.name) for m in members)
    for blocker in blockers:
        guarded.intake.on_pod_delete(blocker.uid)
    await retry(guarded, 1)
    assert sum(1 for name, _ in api.binds() if name.startswith("big-")) == 3


async def test_without_the_guard_a_busy_cluster_keeps_a_big_job_waiting(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(reserve_after=0)
    blockers = small_pods({"n1": 1, "n2": 1, "n3": 1})
    members = gang("big", 3, 3, cpu="8")
    await reserve(sched, api, blockers, members)
    await retry(sched, 300)
    assert all(nominated(api, m.name) is None for m in members)
    sched.add(pod("later-0", cpu="2"))
    await sched.run()
    assert "later-0" in dict(api.binds())


async def test_only_one_job_reserves_at_a_time_by_default(guarded: Harness, api: FakeApi) -> None:
    blockers = small_pods({"n1": 1, "n2": 1, "n3": 1})
    first = gang("big", 2, 2, cpu="8")
    second = gang("other", 1, 1, cpu="8")
    await reserve(guarded, api, blockers, first + second)
    holders = [m.name for m in first + second if nominated(api, m.name)]
    assert holders in (["big-0", "big-1"], ["other-0"])
    guard = next(p for p in guarded.framework.plugins if p.name == "StarvationGuard")
    assert isinstance(guard, StarvationGuard)
    gauges = guard.gauges()
    assert gauges["koordgang_reserving_jobs"] == {"": 1.0}
    assert gauges["koordgang_reserved_nodes"] == {"": float(len(holders))}


async def test_a_higher_priority_job_takes_the_reserving_place_of_a_lower_one(
    guarded: Harness, api: FakeApi
) -> None:
    blockers = small_pods({"n1": 1, "n2": 1, "n3": 1})
    low = gang("low", 2, 2, cpu="8")
    await reserve(guarded, api, blockers, low)
    assert all(nominated(api, m.name) for m in low)
    # Higher priority, but it may not evict (preemptionPolicy Never): it waits as well.
    high = [
        pod(
            m.name,
            cpu="8",
            annotations=dict(m.annotations),
            priority=100,
            preemption_policy="Never",
        )
        for m in gang("high", 3, 3, cpu="8")
    ]
    guarded.add(*high)
    await guarded.run()
    await retry(guarded, RESERVE_AFTER + 1)
    assert all(nominated(api, m.name) for m in high)
    assert "holding" not in message(api, "low-0")
    guard = next(p for p in guarded.framework.plugins if p.name == "StarvationGuard")
    assert isinstance(guard, StarvationGuard)
    assert [r.job for r in guard.reservations().values()] == ["ns/high"]
    assert deletes(api) == []


async def test_on_a_quiet_cluster_the_job_holds_once_reserve_after_has_passed(
    guarded: Harness, api: FakeApi
) -> None:
    """No event comes to retry the job: it asked to be tried again when reserveAfter has
    passed, which is before the periodic retry of parked pods (a minute)."""
    blockers = small_pods({"n1": 1, "n2": 2, "n3": 3})
    members = gang("big", 3, 3, cpu="8")
    nodes = [node(f"n{i}", cpu="8") for i in (1, 2, 3)] + [node("spare", cpu="2")]
    guarded.list(nodes=nodes, pods=blockers + members)
    await guarded.run()
    assert guarded.settings.unschedulable_retry_interval > RESERVE_AFTER + 5

    guarded.clock.advance(RESERVE_AFTER - 1)
    guarded.scheduler.loop.tick(guarded.clock())
    await guarded.run()
    assert all(nominated(api, m.name) is None for m in members)

    guarded.clock.advance(2)
    guarded.scheduler.loop.tick(guarded.clock())
    await guarded.run()
    assert {nominated(api, m.name) for m in members} == {"n1", "n2", "n3"}


async def test_a_place_to_hold_room_goes_to_the_job_first_in_the_queue(
    guarded: Harness, api: FakeApi
) -> None:
    """Three jobs wait past reserveAfter; the oldest holds room first. When it binds, the next
    place goes to the older of the two left, even when the younger is the one tried first
    (an event of its own woke it): the younger waits its turn and wakes the older one."""
    blockers = small_pods({"n1": 1, "n2": 1, "n3": 1})
    first, big, other = (
        [replace(m, creation_timestamp=float(age)) for m in gang(name, count, count, cpu="8")]
        for name, count, age in (("first", 1, 1), ("big", 2, 2), ("other", 1, 3))
    )
    await reserve(guarded, api, blockers, first + big + other)
    assert nominated(api, "first-0")
    assert not any(nominated(api, m.name) for m in big + other)
    # The node held for the first job frees: it binds, and its place is free.
    [held] = [b for b in blockers if b.node_name == nominated(api, "first-0")]
    guarded.intake.on_pod_delete(held.uid)
    await guarded.run()
    assert dict(api.binds())["first-0"] == held.node_name
    guarded.intake.activate(other)
    await guarded.run()
    assert nominated(api, "other-0") is None
    assert all(nominated(api, m.name) for m in big), message(api, "big-0")
