"""Binding through the engine: the loop places a pod, the Binder POSTs the Binding, and every
way the bind can end releases or confirms the cycle's assumption (BindOutcomes)."""

from __future__ import annotations

import asyncio

import pytest

from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.engine.tasks import Supervisor
from koordgang.state.queue import QueueState
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import NS, gang, node, pod, pod_json, uid_of
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness, MakeScheduler, turns, until


def cpu_free(sched: Harness, name: str) -> int:
    state = sched.cache.node(name)
    assert state is not None
    return state.free("cpu")


async def test_a_plain_pod_is_bound_to_the_node_with_room_and_gets_a_scheduled_event(
    sched: Harness, api: FakeApi
) -> None:
    sched.list(nodes=[node("small", cpu="500m"), node("big", cpu="2")], pods=[pod("p")])

    assert await sched.run() == 1

    assert api.binds() == [("p", "big")]
    binding = next(call.body for call in api.calls if call.path.endswith("/p/binding"))
    assert binding["metadata"] == {"name": "p", "namespace": NS, "uid": uid_of("p")}
    assert sched.cache.node_of(uid_of("p")) == "big"
    assert sched.cache.is_assumed(uid_of("p"))
    [event] = api.events("p")
    assert (event["type"], event["reason"]) == ("Normal", "Scheduled")
    assert event["message"] == f"Successfully assigned {NS}/p to big"
    assert event["involvedObject"]["uid"] == uid_of("p")
    assert api.conditions("p") == []
    assert uid_of("p") not in sched.queue

    # The informer shows it bound: it counts there for good, nothing more is written.
    sched.observe_binds()
    await sched.run()
    assert not sched.cache.is_assumed(uid_of("p"))
    assert cpu_free(sched, "big") == 1000
    assert len(api.events("p")) == 1


async def test_a_404_on_bind_forgets_the_assumption_and_does_not_requeue(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    api.answer_bind("p", ApiError(404, "NotFound", 'pods "p" not found'))
    sched.list(nodes=[node("n1", cpu="1")], pods=[pod("p")])

    await sched.run()

    assert api.bind_attempts("p") == 1  # a 404 is not retried
    assert not sched.cache.is_assumed(uid_of("p"))
    assert sched.cache.node_of(uid_of("p")) is None
    assert cpu_free(sched, "n1") == 1000
    assert uid_of("p") not in sched.queue
    assert api.events("p") == [] and api.conditions("p") == []

    clock.advance(120)
    await sched.run()
    assert api.bind_attempts("p") == 1


async def test_bind_outcomes_and_the_time_to_bind_are_counted_by_label(
    sched: Harness, api: FakeApi
) -> None:
    api.answer_bind("gone", ApiError(404, "NotFound", 'pods "gone" not found'))
    sched.list(nodes=[node("n1", cpu="4")], pods=[pod("a"), pod("b"), pod("gone")])

    await sched.run()

    text = sched.scheduler.metrics.render().decode()
    assert 'koordgang_binds_total{result="ok"} 2.0' in text
    assert 'koordgang_binds_total{result="gone"} 1.0' in text
    assert 'scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"} 2.0' in text


@pytest.mark.parametrize("recreated", [False, True], ids=["bound-elsewhere", "recreated"])
async def test_a_409_reads_the_pod_back_and_trusts_it_when_it_is_bound_or_replaced(
    sched: Harness, api: FakeApi, clock: FakeClock, recreated: bool
) -> None:
    api.answer_bind("p", ApiError(409, "Conflict", "pod p is already assigned"))
    if recreated:
        api.pods[(NS, "p")] = pod_json("p", uid="uid-of-a-new-p")
    else:
        api.pods[(NS, "p")] = pod_json("p", node_name="n2")
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="2")], pods=[pod("p")])

    await sched.run()

    assert api.binds(landed=False) == [("p", "n1")]  # LeastAllocated chose n1
    assert [c.method for c in api.calls if c.path == f"/api/v1/namespaces/{NS}/pods/p"] == ["GET"]
    assert not sched.cache.is_assumed(uid_of("p"))
    assert cpu_free(sched, "n1") == 4000
    if recreated:
        assert sched.cache.node_of(uid_of("p")) is None
    else:
        assert sched.cache.node_of(uid_of("p")) == "n2"
        assert cpu_free(sched, "n2") == 1000
        # Another binder: told on the pod and counted, not fought over.
        [event] = api.events("p", "BoundByAnotherScheduler")
        assert event["type"] == "Warning"
        assert "bound to n2 by another binder while koord-scheduler chose n1" in event["message"]
        text = sched.scheduler.metrics.render().decode()
        assert "koordgang_binds_taken_total 1.0" in text
    assert uid_of("p") not in sched.queue
    clock.advance(120)
    await sched.run()
    assert api.bind_attempts("p") == 1


async def test_a_409_for_a_pod_still_unbound_requeues_it_with_backoff(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    api.answer_bind("p", ApiError(409, "Conflict", "the object has been modified"), {})
    api.pods[(NS, "p")] = pod_json("p")
    sched.list(nodes=[node("n1", cpu="1")], pods=[pod("p")])
    started = clock()

    await sched.run()

    entry = sched.queue.get(uid_of("p"))
    assert entry is not None and entry.state is QueueState.BACKOFF
    assert entry.backoff_until == started + sched.settings.initial_backoff
    assert not sched.cache.is_assumed(uid_of("p"))
    assert cpu_free(sched, "n1") == 1000

    clock.advance(sched.settings.initial_backoff - 0.001)
    await sched.run()
    assert api.bind_attempts("p") == 1
    clock.advance(0.001)
    await sched.run()
    assert api.binds() == [("p", "n1")]


@pytest.mark.parametrize(
    ("error", "detail"),
    [
        (ApiError(500, "InternalError", "etcd timed out"), "500 InternalError: etcd timed out"),
        (ApiUnavailable("POST binding: connection reset"), "POST binding: connection reset"),
    ],
    ids=["500", "unavailable"],
)
async def test_a_bind_that_fails_after_retries_forgets_requeues_with_backoff_and_says_why(
    sched: Harness, api: FakeApi, clock: FakeClock, error: Exception, detail: str
) -> None:
    api.answer_bind("p", error)
    sched.list(nodes=[node("n1", cpu="1")], pods=[pod("p")])
    started = clock()

    await sched.run()

    assert api.bind_attempts("p") == 5  # with_retries' attempts for transient errors
    assert not sched.cache.is_assumed(uid_of("p"))
    assert cpu_free(sched, "n1") == 1000
    entry = sched.queue.get(uid_of("p"))
    assert entry is not None and entry.state is QueueState.BACKOFF
    assert entry.backoff_until == started + sched.settings.initial_backoff
    condition = api.condition("p")
    assert condition is not None
    assert (condition["type"], condition["status"]) == ("PodScheduled", "False")
    assert condition["reason"] == "SchedulerError"
    assert condition["message"] == f"Binding rejected: {detail}"
    [event] = api.events("p")
    assert (event["type"], event["reason"]) == ("Warning", "FailedScheduling")
    assert api.events("p", "Scheduled") == []

    # Backoff over and the API server healthy again: bound on the next try.
    api.answer_bind("p", {})
    clock.advance(sched.settings.initial_backoff)
    await sched.run()
    assert api.binds() == [("p", "n1")]


async def test_binds_in_flight_never_exceed_bind_concurrency(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(bind_concurrency=2)
    gate = api.hold(lambda call: call.path.endswith("/binding"))
    pods = [pod(f"p{i}") for i in range(5)]
    sched.list(nodes=[node("n1", cpu="8")], pods=pods)

    # The loop stops taking pods when binding is full.
    assert sched.step() == 2
    assert sched.scheduler.binder.in_flight == 2
    assert not sched.scheduler.binder.has_room()
    assert sched.step() == 0
    await asyncio.sleep(0)
    assert api.active["bind"] == 2

    gate.set()
    for _ in range(10):
        await sched.run()
    assert sorted(name for name, _ in api.binds()) == [f"p{i}" for i in range(5)]
    assert api.peak["bind"] == 2


async def test_a_gang_submitted_at_once_still_keeps_requests_within_bind_concurrency(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(bind_concurrency=2)
    gate = api.hold(lambda call: call.path.endswith("/binding"))
    members = gang("x", 4, 4)
    sched.list(nodes=[node("n1", cpu="8")], pods=members)

    assert sched.step() == 1  # one group: all four members placed and submitted
    await sched.settle(turns=50)
    assert api.active["bind"] == 2
    gate.set()
    await sched.settle()
    assert len(api.binds()) == 4
    assert api.peak["bind"] == 2


async def test_the_running_loop_binds_a_pod_created_after_it_started_and_stops_when_told(
    sched: Harness, api: FakeApi
) -> None:
    task = asyncio.create_task(sched.loop.run())
    await sched.settle(turns=20)
    assert not task.done()  # waiting for the listings
    sched.list(nodes=[node("n1")])
    sched.add(pod("late"))
    await sched.settle()
    assert api.binds() == [("late", "n1")]

    sched.loop.stop()
    await asyncio.wait_for(task, timeout=30.0)


async def test_stop_lets_binds_in_flight_finish_and_writes_what_is_pending(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler(writers=False)
    fatal: list[str] = []
    guard = Supervisor(on_fatal=lambda name, _: fatal.append(name), clock=clock)
    gate = api.hold(lambda call: call.path.endswith("/binding"))
    sched.list(nodes=[node("n1")], pods=[pod("p"), pod("huge", cpu="64")])
    sched.scheduler.start(guard)
    assert await until(lambda: api.active["bind"] == 1)

    stopping = asyncio.create_task(sched.scheduler.stop(grace=5.0))
    await turns(50)
    assert not stopping.done()  # waits for the bind in flight
    gate.set()
    await asyncio.wait_for(stopping, timeout=30.0)

    assert api.binds() == [("p", "n1")]
    assert len(api.events("p", "Scheduled")) == 1
    assert len(api.events("huge", "FailedScheduling")) == 1
    # Starting opened as many connections as binds may be in flight, ahead of them.
    assert api.warmed == [sched.scheduler.settings.bind_concurrency]
    await guard.stop()
    assert fatal == []


async def test_stop_cuts_off_binds_that_outlast_the_grace(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    api.hold(lambda call: call.path.endswith("/binding"))
    sched.list(nodes=[node("n1")], pods=[pod("p")])
    sched.step()
    assert await until(lambda: api.active["bind"] == 1)

    await sched.scheduler.stop(grace=0.001)

    assert sched.scheduler.binder.in_flight == 0
    assert api.binds() == []
