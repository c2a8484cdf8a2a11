"""Beside kube-scheduler: room another scheduler nominated to its pod (``status.nominatedNodeName``)
is taken for our pods of lower or equal priority, until the nomination is cleared or the pod
binds; a gang's nodes are checked again before it binds; the kubelet's refusals are counted;
and the two parts of the window between the schedulers are measured."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from koordgang.model.pod import PodInfo
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import bound, gang, node, pod
from koordgang.testing.harness import Harness

LOW, HIGH = 0, 100


def foreign(name: str, node_name: str, *, cpu: str = "2", priority: int = 0) -> PodInfo:
    """A pod of kube-scheduler, unbound, nominated to ``node_name`` after it preempted."""
    info = pod(name, cpu=cpu, priority=priority, scheduler="default-scheduler")
    return replace(info, nominated_node_name=node_name)


def retry(sched: Harness) -> None:
    """Time enough for the backoff of pods that failed to pass, and a cluster event."""
    sched.clock.advance(11)
    sched.scheduler.signals.request_move()


def ours(name: str, **kwargs: Any) -> PodInfo:
    return pod(name, **kwargs)


async def test_room_nominated_to_a_pod_of_equal_priority_keeps_ours_elsewhere(
    sched: Harness, api: FakeApi
) -> None:
    # n1 is the roomier node (the one our pod would go to), but 3 of its 4 cpu are nominated.
    sched.list(
        nodes=[node("n1", cpu="4"), node("n2", cpu="2")],
        pods=[foreign("kube-a", "n1", cpu="3"), ours("mine", cpu="2")],
    )
    await sched.run()
    assert api.binds() == [("mine", "n2")]


async def test_room_nominated_to_a_pod_of_higher_priority_is_taken_for_ours(
    sched: Harness, api: FakeApi
) -> None:
    sched.list(
        nodes=[node("n1", cpu="4"), node("n2", cpu="2")],
        pods=[foreign("kube-a", "n1", cpu="3", priority=HIGH), ours("mine", cpu="2")],
    )
    await sched.run()
    assert api.binds() == [("mine", "n2")]


async def test_room_nominated_to_a_pod_of_lower_priority_is_free_for_ours(
    sched: Harness, api: FakeApi
) -> None:
    sched.list(
        nodes=[node("n1", cpu="4"), node("n2", cpu="2")],
        pods=[foreign("kube-a", "n1", cpu="3", priority=LOW), ours("mine", cpu="2", priority=HIGH)],
    )
    await sched.run()
    assert api.binds() == [("mine", "n1")]
    # The nomination still counts in the cache (for pods of its priority or lower).
    state = sched.cache.node("n1")
    assert state is not None and state.requested.get("cpu") == 5000


async def test_clearing_the_nomination_frees_the_room(sched: Harness, api: FakeApi) -> None:
    nominated = foreign("kube-a", "n1")
    sched.list(nodes=[node("n1", cpu="2")], pods=[nominated, ours("mine", cpu="2")])
    await sched.run()
    assert api.binds() == []
    condition = api.condition("mine")
    assert condition is not None and condition["reason"] == "Unschedulable"

    sched.add(replace(nominated, nominated_node_name="", resource_version="2"))
    retry(sched)
    await sched.run()
    assert api.binds() == [("mine", "n1")]


async def test_a_gang_whose_only_room_is_nominated_waits_whole_until_the_pod_binds_elsewhere(
    sched: Harness, api: FakeApi
) -> None:
    nominated = foreign("kube-a", "n2")
    members = gang("x", 3, 3)
    sched.list(
        nodes=[node("n1", cpu="2"), node("n2", cpu="2"), node("n3", cpu="2")],
        pods=[
            nominated,
            bound(pod("busy", cpu="2", scheduler="default-scheduler"), "n3"),
            *members,
        ],
    )
    await sched.run()
    assert api.binds(landed=False) == []
    for member in members:
        condition = api.condition(member.name)
        assert condition is not None and condition["reason"] == "Unschedulable"

    # kube-scheduler bound its pod elsewhere after all: the nominated room is free.
    sched.intake.on_pod_delete(pod("busy").uid)
    sched.add(bound(replace(nominated, resource_version="2"), "n3"))
    retry(sched)
    await sched.run()
    placed = sorted(api.binds())
    assert [name for name, _ in placed] == ["x-0", "x-1", "x-2"]
    assert {node_name for _, node_name in placed} == {"n1", "n2"}


async def test_preemption_does_not_evict_where_a_higher_priority_nomination_stays(
    sched: Harness, api: FakeApi
) -> None:
    # n1: a low pod runs, and kube-scheduler nominated a pod above ours there. Evicting the low
    # pod would not make room for ours: the nominated room stays taken.
    victim = bound(pod("low", cpu="2", priority=LOW, scheduler="default-scheduler"), "n1")
    sched.list(
        nodes=[node("n1", cpu="4")],
        pods=[
            victim,
            foreign("kube-a", "n1", cpu="3", priority=HIGH + 1),
            ours("mine", cpu="2", priority=HIGH),
        ],
    )
    await sched.run()
    assert api.binds() == []
    assert [c for c in api.landed() if c.method == "DELETE"] == []


# -- their pods not tried yet --------------------------------------------------------------------


def untried(name: str, *, cpu: str = "3", created: str | None = None) -> PodInfo:
    """A pod of kube-scheduler it has not tried yet (no PodScheduled condition, no node)."""
    if created is None:
        return pod(name, cpu=cpu, scheduler="default-scheduler")
    return pod(name, cpu=cpu, scheduler="default-scheduler", created=created)


async def test_room_their_pod_not_tried_yet_is_likely_to_take_keeps_ours_elsewhere(
    sched: Harness, api: FakeApi
) -> None:
    # Only n1 holds kube-a (3 cpu): kube-scheduler is about to put it there. Ours would take n1
    # (the roomier) and leave kube-a's binding to over-commit it.
    sched.list(
        nodes=[node("n1", cpu="4"), node("n2", cpu="2")],
        pods=[untried("kube-a"), ours("mine", cpu="2")],
    )
    await sched.run()
    assert api.binds() == [("mine", "n2")]
    sched.scheduler.loop.tick(sched.clock.now)
    registry = sched.scheduler.metrics.registry
    assert registry.get_sample_value("koordgang_other_pods_in_flight") == 1.0


async def test_their_pod_their_scheduler_found_no_room_for_frees_the_guess(
    sched: Harness, api: FakeApi
) -> None:
    waiting = untried("kube-a")
    sched.list(nodes=[node("n1", cpu="4")], pods=[waiting, ours("mine", cpu="2")])
    await sched.run()
    assert api.binds() == []
    tried = replace(
        waiting,
        conditions_pod_scheduled=("False", "Unschedulable", "0/1 nodes are available"),
        resource_version="2",
    )
    sched.add(tried)
    retry(sched)
    await sched.run()
    assert api.binds() == [("mine", "n1")]


async def test_their_pod_left_untried_stops_counting_after_others_in_flight_for(
    sched: Harness, api: FakeApi
) -> None:
    # No scheduler is busy with kube-a (none runs by that name, or it is far behind).
    sched.list(nodes=[node("n1", cpu="4")], pods=[untried("kube-a"), ours("mine", cpu="2")])
    await sched.run()
    assert api.binds() == []
    sched.clock.advance(10.5)  # othersInFlightFor: 10 s by default
    await sched.run()  # the guess expires: parked pods are moved at the next turn
    await sched.run()
    assert api.binds() == [("mine", "n1")]


async def test_their_pod_created_long_ago_never_counts(sched: Harness, api: FakeApi) -> None:
    long_ago = "2023-11-14T22:00:00Z"  # half an hour before the harness's wall clock
    sched.list(
        nodes=[node("n1", cpu="4")],
        pods=[untried("kube-a", created=long_ago), ours("mine", cpu="2")],
    )
    await sched.run()
    assert api.binds() == [("mine", "n1")]


# -- re-checked before binding -------------------------------------------------------------------


async def test_a_pod_bound_on_the_chosen_node_before_the_gang_binds_sends_it_back_whole(
    sched: Harness, api: FakeApi
) -> None:
    members = gang("x", 2, 2)
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="2")], pods=members)
    assert sched.step() == 1  # decided (one member on each node), bindings not sent yet
    assert {sched.cache.node_of(m.uid) for m in members} == {"n1", "n2"}
    # kube-scheduler binds a pod of its own onto n1 meanwhile: n1 cannot hold x's member too.
    sched.add(bound(pod("kube-a", cpu="4", scheduler="default-scheduler"), "n1"))
    await sched.settle()

    assert api.binds(landed=False) == []
    for member in members:
        assert not sched.cache.is_assumed(member.uid)
        [event] = api.events(member.name, reason="FailedScheduling")
        assert "node n1 (Insufficient cpu) no longer has room for the gang" in event["message"]

    retry(sched)
    await sched.run()
    assert sorted(api.binds()) == [("x-0", "n2"), ("x-1", "n2")]


async def test_a_gang_whose_nodes_still_hold_it_binds_after_the_check(
    sched: Harness, api: FakeApi
) -> None:
    members = gang("x", 2, 2)
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="2")], pods=members)
    assert sched.step() == 1
    chosen = sorted((m.name, sched.cache.node_of(m.uid)) for m in members)
    sched.add(bound(pod("kube-a", cpu="3", scheduler="default-scheduler"), "n1"))  # fits still
    await sched.settle()
    assert sorted(api.binds()) == chosen


def refused(info: PodInfo, reason: str = "OutOfcpu") -> PodInfo:
    """``info`` as the kubelet leaves a pod it refused at admission."""
    return replace(info, phase="Failed", failure_reason=reason, resource_version="3")


async def test_a_member_the_kubelet_refuses_is_counted_and_its_gang_told(
    sched: Harness, api: FakeApi
) -> None:
    members = gang("train", 2, 2)
    sched.list(nodes=[node("n1", cpu="4")], pods=members)
    await sched.run()
    assert sorted(api.binds()) == [("train-0", "n1"), ("train-1", "n1")]
    sched.observe_binds()
    placed = [p for p in sched.cache.pods() if p.name == "train-1"]
    sched.add(refused(placed[0]))
    sched.add(refused(placed[0]))  # the same refusal seen again is not counted twice
    await sched.run()
    text = sched.scheduler.metrics.render().decode()
    assert 'koordgang_admission_refusals_total{reason="OutOfcpu"} 1.0' in text
    [event] = api.events("train-1", reason="AdmissionRefused")
    assert "refused by the kubelet on node n1 (OutOfcpu)" in event["message"]
    below = api.events(reason="GangBelowMinimum")
    assert below and "the kubelet refused train-1 on node n1: OutOfcpu" in below[0]["message"]


async def test_a_pod_that_failed_on_its_own_is_no_refusal(sched: Harness, api: FakeApi) -> None:
    members = gang("train", 2, 2)
    sched.list(nodes=[node("n1", cpu="4")], pods=members)
    await sched.run()
    sched.observe_binds()
    placed = [p for p in sched.cache.pods() if p.name == "train-1"]
    sched.add(refused(placed[0], reason="Error"))
    await sched.run()
    assert "koordgang_admission_refusals_total{" not in sched.scheduler.metrics.render().decode()
    assert api.events("train-1", reason="AdmissionRefused") == []


async def test_the_replacement_of_a_refused_member_joins_its_gang(
    sched: Harness, api: FakeApi
) -> None:
    sched.list(nodes=[node("n1", cpu="2"), node("n2", cpu="4")], pods=gang("train", 2, 2))
    await sched.run()
    sched.observe_binds()
    [gone] = [p for p in sched.cache.pods() if p.name == "train-1"]
    sched.add(refused(gone))
    await sched.run()
    sched.intake.on_pod_delete(gone.uid)
    [replacement] = gang("train", 1, 2, first=2)
    sched.add(replacement)
    retry(sched)
    await sched.run()
    # The gang ran whole and lacks one member: the replacement is placed alone, as its member.
    assert [name for name, _ in api.binds()].count("train-2") == 1


# -- where the window is: decision -> binding accepted -> the informer shows it --------------


def histogram(sched: Harness, name: str) -> tuple[float, float]:
    """(count, sum) of a histogram of the daemon's /metrics."""
    registry = sched.scheduler.metrics.registry
    count = registry.get_sample_value(f"{name}_count") or 0.0
    return count, registry.get_sample_value(f"{name}_sum") or 0.0


async def decided_binding_held(sched: Harness, api: FakeApi) -> tuple[PodInfo, asyncio.Event]:
    """Our pod "mine" decided onto n1 now, its Binding sent and not answered until the event
    returned is set."""
    mine = ours("mine", cpu="1")
    sched.list(nodes=[node("n1", cpu="4")], pods=[mine])
    gate = api.hold(lambda call: call.path.endswith("/mine/binding"))
    assert sched.step() == 1
    await sched.settle(50)
    return mine, gate


async def test_the_time_from_decision_to_binding_and_from_binding_to_the_watch_is_measured(
    sched: Harness, api: FakeApi
) -> None:
    _, gate = await decided_binding_held(sched, api)
    sched.clock.advance(0.3)  # the Binding takes 0.3 s to be accepted
    gate.set()
    await sched.settle()
    count, seconds = histogram(sched, "koordgang_binding_landed_seconds")
    assert (count, round(seconds, 6)) == (1, 0.3)
    assert histogram(sched, "koordgang_watch_lag_seconds") == (0, 0)

    sched.clock.advance(0.2)  # and the informer shows it bound 0.2 s later
    sched.observe_binds()
    count, seconds = histogram(sched, "koordgang_watch_lag_seconds")
    assert (count, round(seconds, 6)) == (1, 0.2)
    sched.observe_binds()  # seen again (a status update): timed once
    assert histogram(sched, "koordgang_watch_lag_seconds")[0] == 1
    assert sched.scheduler.watch_lag.waiting == 0


async def test_a_binding_the_watch_showed_before_its_reply_has_no_lag(
    sched: Harness, api: FakeApi
) -> None:
    mine, gate = await decided_binding_held(sched, api)
    sched.add(bound(mine, "n1"))  # the watch event comes first
    sched.clock.advance(0.3)
    gate.set()
    await sched.settle()
    assert histogram(sched, "koordgang_watch_lag_seconds") == (1, 0.0)
    assert sched.scheduler.watch_lag.waiting == 0


async def test_a_bound_pod_deleted_before_the_watch_showed_it_is_not_timed(
    sched: Harness, api: FakeApi
) -> None:
    mine = ours("mine", cpu="1")
    sched.list(nodes=[node("n1", cpu="4")], pods=[mine])
    await sched.run()
    assert api.binds() == [("mine", "n1")]
    sched.intake.on_pod_delete(mine.uid)
    sched.clock.advance(5)
    sched.add(bound(mine, "n1"))
    assert histogram(sched, "koordgang_watch_lag_seconds") == (0, 0)
