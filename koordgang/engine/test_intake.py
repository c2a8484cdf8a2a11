"""Informer events into the engine (Intake): readiness, invalid pods, scheduling gates, pods
bound or deleted meanwhile, and cluster changes that let parked pods be tried again."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from koordgang.engine.kinds import KINDS
from koordgang.model.pod import PodParseError, parse_pod
from koordgang.plugins.schedulinggates.plugin import GATED_MESSAGE, GATED_REASON
from koordgang.state.queue import QueueState
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import bound, node, pod, pod_json, uid_of
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness, MakeScheduler


def state_of(sched: Harness, name: str) -> QueueState | None:
    entry = sched.queue.get(uid_of(name))
    return None if entry is None else entry.state


@pytest.mark.parametrize("last", [kind.name for kind in KINDS])
async def test_the_loop_is_ready_only_once_every_kind_is_listed(sched: Harness, last: str) -> None:
    intake = sched.intake
    first: dict[str, list[Any]] = {"nodes": [node("n1")], "pods": [pod("p")]}
    for kind in KINDS:
        if kind.name != last:
            intake.kind(kind.name).listed(first.get(kind.name, []))
    assert not sched.scheduler.ready
    intake.kind(last).listed([])
    assert sched.scheduler.ready


async def test_the_collector_is_as_usual_again_once_every_kind_is_listed(sched: Harness) -> None:
    usual = gc.get_threshold()
    intake = sched.intake
    intake.collector.relax()
    *rest, last = KINDS
    try:
        for kind in rest:
            intake.kind(kind.name).listed([])
        assert gc.get_threshold() != usual
        intake.kind(last.name).listed([])
        assert gc.get_threshold() == usual
    finally:
        gc.set_threshold(*usual)


def bad_pod() -> dict[str, Any]:
    obj = pod_json("bad")
    obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    return obj


async def test_an_invalid_pod_of_ours_is_told_which_field_is_wrong(
    sched: Harness, api: FakeApi
) -> None:
    """The report is made, but never written: ``ReportRelevance.is_current`` drops reports
    about pods the cache does not hold, and an invalid pod is never in the cache."""
    sched.list(nodes=[node("n1")])
    obj = bad_pod()
    with pytest.raises(PodParseError) as caught:
        parse_pod(obj)
    assert "spec.containers[0].resources.requests[cpu]" in str(caught.value)

    sched.intake.on_pod_invalid(obj, caught.value)
    assert sched.scheduler.reporter.backlog == 1  # made...
    await sched.settle()

    condition = api.condition("bad")  # ...and written
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert condition["message"].startswith("the pod cannot be scheduled: ")
    assert "spec.containers[0].resources.requests[cpu]" in condition["message"]
    [event] = api.events("bad")
    assert (event["type"], event["reason"]) == ("Warning", "FailedScheduling")


@pytest.mark.parametrize("case", ["foreign", "bound"])
async def test_an_invalid_pod_that_is_not_ours_to_schedule_is_left_alone(
    sched: Harness, api: FakeApi, case: str
) -> None:
    sched.list(nodes=[node("n1")])
    obj = bad_pod()
    if case == "foreign":
        obj["spec"]["schedulerName"] = "default-scheduler"
    else:
        obj["spec"]["nodeName"] = "n1"
    with pytest.raises(PodParseError) as caught:
        parse_pod(obj)

    sched.intake.on_pod_invalid(obj, caught.value)
    await sched.settle()

    assert sched.scheduler.reporter.backlog == 0
    assert api.writes_to("bad") == []


async def test_a_gated_pod_waits_outside_the_queue_until_its_gates_are_removed(
    sched: Harness, api: FakeApi
) -> None:
    gated = pod("gated", gates=["example.com/quota"])
    sched.list(nodes=[node("n1")], pods=[gated])
    await sched.run()

    assert uid_of("gated") not in sched.queue
    assert api.binds(landed=False) == []
    condition = api.condition("gated")
    assert condition is not None
    assert (condition["reason"], condition["message"]) == (GATED_REASON, GATED_MESSAGE)
    assert api.events("gated") == []  # Kubernetes posts none for it either
    sched.scheduler.loop.tick(sched.clock())
    metrics = sched.scheduler.metrics.render().decode()
    assert 'scheduler_pending_pods{queue="gated"} 1.0' in metrics

    sched.add(pod("gated"))  # the gate removed
    await sched.run()
    assert api.binds() == [("gated", "n1")]
    sched.scheduler.loop.tick(sched.clock())
    metrics = sched.scheduler.metrics.render().decode()
    assert 'scheduler_pending_pods{queue="gated"} 0.0' in metrics


async def test_a_pod_bound_meanwhile_is_removed_from_the_queue(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    p = pod("p")
    sched.list(nodes=[node("n1", cpu="1"), node("n2", cpu="1")], pods=[p])
    assert state_of(sched, "p") is QueueState.ACTIVE

    sched.add(bound(p, "n2"))  # another scheduler (or a lost reply) bound it

    assert uid_of("p") not in sched.queue
    assert sched.cache.node_of(uid_of("p")) == "n2"
    clock.advance(5)
    await sched.run()
    assert api.binds(landed=False) == []


async def test_a_pod_deleted_while_parked_leaves_the_queue_and_its_room_is_freed(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    running = bound(pod("running", cpu="1"), "n1")
    sched.list(nodes=[node("n1", cpu="1")], pods=[running, pod("waits"), pod("doomed")])
    await sched.run()
    assert state_of(sched, "waits") is QueueState.UNSCHEDULABLE

    sched.intake.on_pod_delete(uid_of("doomed"))
    assert uid_of("doomed") not in sched.queue
    sched.intake.on_pod_delete(uid_of("running"))  # its node has room now
    clock.advance(sched.settings.initial_backoff)
    await sched.run()
    assert api.binds() == [("waits", "n1")]


async def test_a_node_spec_change_moves_parked_pods_and_a_mere_resync_does_not(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler(initial_backoff=0.5)
    sched.list(nodes=[node("n1", cpu="1")], pods=[pod("big", cpu="2")])
    await sched.run()
    assert state_of(sched, "big") is QueueState.UNSCHEDULABLE

    # The same node again, only a newer resourceVersion: nothing to retry for.
    sched.intake.on_node_upsert(node("n1", cpu="1", resource_version="2"))
    clock.advance(1)
    await sched.run()
    assert state_of(sched, "big") is QueueState.UNSCHEDULABLE
    assert api.bind_attempts("big") == 0

    sched.intake.on_node_upsert(node("n1", cpu="2", resource_version="3"))
    await sched.run()
    assert api.binds() == [("big", "n1")]


async def test_a_new_node_moves_parked_pods(sched: Harness, api: FakeApi, clock: FakeClock) -> None:
    sched.list(nodes=[node("n1", cpu="1")], pods=[pod("big", cpu="2")])
    await sched.run()
    assert state_of(sched, "big") is QueueState.UNSCHEDULABLE

    sched.intake.on_node_upsert(node("n2", cpu="2"))
    assert state_of(sched, "big") is QueueState.UNSCHEDULABLE  # moved by the loop, not here
    clock.advance(sched.settings.initial_backoff)
    await sched.run()
    assert api.binds() == [("big", "n2")]
