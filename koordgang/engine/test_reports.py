"""What users read, as the Reporter writes it: in order per object, once, only while true, and
``Scheduled`` Events out of binding's way; and PodGroup statuses through the StatusWriter."""

from __future__ import annotations

import random

import pytest

from koordgang.clients.errors import ApiError
from koordgang.engine.reporter import REPEAT_AFTER
from koordgang.framework.report import Report
from koordgang.model.koordinator import POD_GROUP_LABEL
from koordgang.model.pod import PodInfo
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import NS, bound, node, pod
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness, MakeScheduler, turns, until


def messages(api: FakeApi, name: str) -> list[str]:
    return [c["message"] for c in api.conditions(name)]


def status_path(name: str) -> str:
    return f"/api/v1/namespaces/{NS}/pods/{name}/status"


async def test_explanations_for_one_pod_land_in_the_order_they_were_made(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(workers=4)
    p, q = pod("p"), pod("q")
    sched.list(pods=[p, q])
    await sched.settle()
    reporter = sched.scheduler.reporter
    gate = api.hold(lambda call: call.path == status_path("p"))

    reporter.report(Report.unschedulable(p, "first"))
    await turns(10)  # a worker is writing "first" to p, held by the API server
    reporter.report(Report.unschedulable(p, "second"))
    reporter.report(Report.unschedulable(q, "for q"))
    await sched.settle(turns=200)

    # Three idle workers, yet none writes to p while "first" is in flight; q is not held up.
    assert messages(api, "q") == ["for q"]
    assert [
        c.body["status"]["conditions"][0]["message"]
        for c in api.calls
        if c.path == status_path("p")
    ] == ["first"]
    gate.set()
    await sched.settle()
    assert messages(api, "p") == ["first", "second"]
    assert [e["message"] for e in api.events("p")] == ["first", "second"]


async def test_many_explanations_from_several_workers_never_land_older_after_newer(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(workers=4)
    pods = [pod(f"p{i}") for i in range(6)]
    sched.list(pods=pods)
    await sched.settle()
    reporter = sched.scheduler.reporter
    rng = random.Random(1)
    # Replies take a random number of event-loop turns, so writes overlap and finish out of
    # order across pods.
    api.latency = lambda _call: rng.randrange(0, 6)
    made: dict[str, list[str]] = {p.name: [] for p in pods}

    for index in range(200):
        target = rng.choice(pods)
        message = f"explanation {index}"
        made[target.name].append(message)
        reporter.report(Report.unschedulable(target, message))
        if rng.random() < 0.3:
            await turns(rng.randrange(1, 4))
    await sched.settle()

    assert api.peak["other"] > 1  # writes did overlap
    for target in pods:
        written = messages(api, target.name)
        order = [made[target.name].index(m) for m in written]
        assert order == sorted(order), f"{target.name} was told an older explanation last"
        assert written[-1] == made[target.name][-1]
        assert len(set(written)) == len(written)


async def test_duplicate_explanations_are_not_written_again_until_they_would_age_out(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    p = pod("p")
    sched.list(pods=[p])
    reporter = sched.scheduler.reporter

    reporter.report(Report.unschedulable(p, "no room"))
    await sched.settle()
    reporter.report(Report.unschedulable(p, "no room"))
    clock.advance(REPEAT_AFTER - 1)
    reporter.report(Report.unschedulable(p, "no room"))
    await sched.settle()
    assert messages(api, "p") == ["no room"]
    assert len(api.events("p")) == 1

    clock.advance(1)
    reporter.report(Report.unschedulable(p, "no room"))
    await sched.settle()
    assert messages(api, "p") == ["no room", "no room"]


async def test_the_same_explanation_from_repeated_cycles_is_written_once(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.list(nodes=[node("n1", cpu="1")], pods=[pod("big", cpu="2")])
    for _ in range(5):
        await sched.run()
        clock.advance(61)  # parked pods are retried every unschedulable_retry_interval
    assert api.bind_attempts("big") == 0
    assert len(messages(api, "big")) == 1
    assert len(api.events("big")) == 1


async def test_a_message_equal_to_the_last_written_one_still_supersedes_a_pending_one(
    sched: Harness, api: FakeApi
) -> None:
    p = pod("p")
    sched.list(pods=[p])
    reporter = sched.scheduler.reporter
    reporter.report(Report.unschedulable(p, "A"))
    await sched.settle()

    reporter.report(Report.unschedulable(p, "B"))  # pending...
    reporter.report(Report.unschedulable(p, "A"))  # ...superseded by the newest explanation
    await sched.settle()

    assert messages(api, "p")[-1] == "A"


async def test_explanations_for_a_pod_bound_meanwhile_are_not_written(
    sched: Harness, api: FakeApi
) -> None:
    p, gone = pod("p"), pod("gone")
    sched.list(nodes=[node("n1")], pods=[p, gone])
    await sched.settle()
    api.calls.clear()
    reporter = sched.scheduler.reporter
    sched.loop.stop()  # nothing else runs: only the reports below

    reporter.report(Report.unschedulable(p, "no room"))
    reporter.report(Report.unschedulable(gone, "no room"))
    sched.add(bound(p, "n1"))  # someone else bound it meanwhile
    sched.intake.on_pod_delete(gone.uid)
    await sched.settle()

    assert api.writes_to("p") == []
    assert api.writes_to("gone") == []


async def test_a_first_explanation_waits_explain_after_and_is_dropped_if_the_pod_got_bound(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler(explain_after=1.0)
    p, q = pod("p"), pod("q")
    sched.list(nodes=[node("n1")], pods=[p, q])
    await sched.settle()
    api.calls.clear()
    reporter = sched.scheduler.reporter
    sched.loop.stop()  # nothing else runs: only the reports below

    reporter.report(Report.unschedulable(p, "waiting for 3 more members"))
    reporter.report(Report.unschedulable(q, "waiting for 3 more members"))
    clock.advance(0.5)
    reporter.report(Report.unschedulable(p, "waiting for 2 more members"))
    await sched.settle()
    assert api.writes_to("p") == [] and api.writes_to("q") == []

    sched.add(bound(q, "n1"))  # its gang came together meanwhile
    clock.advance(0.6)  # 1.1 s after the first report: due, not postponed by the second
    await sched.settle()
    assert messages(api, "p") == ["waiting for 2 more members"]
    assert api.writes_to("q") == []

    # A nomination (preemption made room) replaces a held explanation and goes out at once.
    r = pod("r")
    sched.add(r)
    reporter.report(Report.unschedulable(r, "no room"))
    reporter.report(Report.unschedulable(r, "preempting", nominated_node="n1"))
    await sched.settle()
    assert messages(api, "r") == ["preempting"]

    # Once told, a pod hears what changes at once.
    reporter.report(Report.unschedulable(p, "waiting for 1 more member"))
    await sched.settle()
    assert messages(api, "p") == ["waiting for 2 more members", "waiting for 1 more member"]


async def test_a_due_explanation_gives_way_to_binds_in_flight_for_explain_after_at_most(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler(explain_after=1.0)
    gate = api.hold(lambda call: call.path.endswith("/binding"))
    p, q, r = pod("p"), pod("q"), pod("huge", cpu="64")
    sched.list(nodes=[node("n1")], pods=[p, q])
    sched.step()  # p and q assumed, their binds held in flight
    await sched.settle(turns=100)
    assert sched.scheduler.binder.in_flight == 2
    reporter = sched.scheduler.reporter
    sched.add(r)
    reporter.report(Report.unschedulable(r, "no node has 64 cpu"))

    clock.advance(1.5)  # due, binds still in flight: it waits
    await sched.settle(turns=100)
    assert api.conditions("huge") == []

    clock.advance(0.6)  # held as long again: written though binds are still in flight
    await sched.settle(turns=100)
    assert sched.scheduler.binder.in_flight == 2
    assert messages(api, "huge") == ["no node has 64 cpu"]

    # With nothing in flight, a due explanation goes out at once.
    gate.set()
    await sched.settle()
    s = pod("later", cpu="64")
    sched.add(s)
    reporter.report(Report.unschedulable(s, "no node has 64 cpu"))
    clock.advance(1.1)
    await sched.settle()
    assert messages(api, "later") == ["no node has 64 cpu"]


async def test_explanations_for_a_pod_whose_bind_is_in_flight_are_not_written(
    sched: Harness, api: FakeApi
) -> None:
    gate = api.hold(lambda call: call.path.endswith("/binding"))
    p = pod("p")
    sched.list(nodes=[node("n1")], pods=[p])
    sched.step()  # p is assumed and its bind in flight
    assert sched.cache.is_assumed(p.uid) and p.uid not in sched.waiting
    sched.scheduler.reporter.report(Report.unschedulable(p, "stale"))
    await sched.settle(turns=100)
    assert api.conditions("p") == []
    gate.set()
    await sched.settle()
    assert api.conditions("p") == []
    assert len(api.events("p", "Scheduled")) == 1


async def test_scheduled_events_wait_while_binds_are_in_flight(
    sched: Harness, api: FakeApi
) -> None:
    gate = api.hold(lambda call: call.path.endswith("/slow/binding"))
    sched.list(nodes=[node("n1")], pods=[pod("slow"), pod("fast")])
    sched.step()
    await sched.settle(turns=200)

    assert sorted(api.binds()) == [("fast", "n1")]
    assert sched.scheduler.binder.in_flight == 1
    assert api.events("fast", "Scheduled") == []
    assert sched.scheduler.reporter.backlog == 1

    # Warnings are not held back meanwhile.
    sched.add(pod("huge", cpu="64"))
    sched.step()
    await sched.settle(turns=200)
    assert len(api.events("huge", "FailedScheduling")) == 1
    assert api.events("fast", "Scheduled") == []

    gate.set()
    await sched.settle()
    assert [e["involvedObject"]["name"] for e in api.events(reason="Scheduled")] == [
        "fast",
        "slow",
    ]


async def test_event_writers_sleep_through_a_burst_of_binds_and_wake_when_it_ends(
    sched: Harness, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each bound pod reports a Scheduled Event while binds are in flight: no event writer may
    # be woken for it then (48 of them looking for work at every bind cost more CPU than
    # the bind), and the end of the last bind must wake them without any other prompt.
    reporter = sched.scheduler.reporter
    assert reporter.event_workers > 0
    looks = 0
    look = reporter._next_informational

    def counted() -> Report | None:
        nonlocal looks
        looks += 1
        return look()

    monkeypatch.setattr(reporter, "_next_informational", counted)
    gate = api.hold(lambda call: call.path.endswith("/slow/binding"))
    fast = [f"fast-{i}" for i in range(20)]
    sched.list(nodes=[node("n1", cpu="32")], pods=[pod("slow"), *(pod(name) for name in fast)])
    sched.step()
    await until(lambda: len(api.binds()) == 20)
    await turns(200)  # no sched.settle(): it wakes the writers itself
    assert api.events(reason="Scheduled") == []
    assert looks == 0

    gate.set()
    assert await until(lambda: len(api.events(reason="Scheduled")) == 21)
    assert sorted(e["involvedObject"]["name"] for e in api.events(reason="Scheduled")) == sorted(
        ["slow", *fast]
    )


async def test_event_writers_write_scheduled_events_and_leave_explanations_to_the_others(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(workers=0, event_workers=2)
    sched.list(nodes=[node("n1")], pods=[pod("p"), pod("huge", cpu="64")])
    sched.step()
    await sched.settle(turns=300)
    assert api.binds() == [("p", "n1")]
    assert [e["involvedObject"]["name"] for e in api.events(reason="Scheduled")] == ["p"]
    # Why "huge" waits is a condition and a Warning: not an event writer's to write.
    assert api.events("huge") == [] and api.writes_to("huge") == []
    assert sched.scheduler.reporter.backlog == 1


async def test_scheduled_events_beyond_their_rate_are_dropped(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(scheduled_events_per_second=0)
    sched.list(nodes=[node("n1")], pods=[pod("p")])
    await sched.run()
    assert api.binds() == [("p", "n1")]
    assert api.events("p") == []


async def test_a_report_for_a_pod_deleted_from_the_server_is_dropped_and_forgotten(
    sched: Harness, api: FakeApi
) -> None:
    p = pod("p")
    sched.list(pods=[p])
    api.answer("PATCH", status_path("p"), ApiError(404, "NotFound", "gone"), {})
    reporter = sched.scheduler.reporter

    reporter.report(Report.unschedulable(p, "no room"))
    await sched.settle()
    assert api.events("p") == []  # the condition failed: the Event is not posted
    reporter.report(Report.unschedulable(p, "no room"))  # not remembered as written
    await sched.settle()
    assert messages(api, "p") == ["no room"]


async def test_a_report_that_keeps_failing_is_given_up_after_its_retries(
    sched: Harness, api: FakeApi
) -> None:
    p = pod("p")
    sched.list(pods=[p])
    api.answer("PATCH", status_path("p"), ApiError(503, "ServiceUnavailable", "busy"))

    sched.scheduler.reporter.report(Report.unschedulable(p, "no room"))
    await sched.settle()

    assert sum(1 for c in api.calls if c.path == status_path("p")) == 3
    assert api.events("p") == []
    assert sched.scheduler.reporter.backlog == 0


def podgroup_member(name: str, group: str = "pg") -> PodInfo:
    return pod(name, labels={POD_GROUP_LABEL: group})


async def test_podgroup_status_is_written_when_it_changed_and_only_then(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(
        "podgroups.scheduling.sigs.k8s.io",
        "ADDED",
        {
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": NS, "uid": "pg-uid", "resourceVersion": "1"},
            "spec": {"minMember": 2},
        },
    )
    members = [podgroup_member("a"), podgroup_member("b")]
    sched.list(nodes=[node("n1")], pods=members)
    await sched.run()
    assert sorted(api.binds()) == [("a", "n1"), ("b", "n1")]
    sched.observe_binds()

    clock.advance(1.0)  # the loop's tick publishes statuses
    await sched.run()
    [status] = api.custom_status_patches("podgroups", "pg")
    assert status["phase"] == "Scheduled" and status["scheduled"] == 2
    assert "scheduleStartTime" in status

    clock.advance(1.0)
    await sched.run()
    assert len(api.custom_status_patches("podgroups", "pg")) == 1  # unchanged: not rewritten


async def test_a_write_that_lands_after_its_object_is_gone_is_not_remembered(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(workers=1)
    p = pod("p")
    sched.list(pods=[p])
    await sched.settle()
    reporter = sched.scheduler.reporter
    before = reporter.remembered
    gate = api.hold(lambda call: call.path == status_path("p"))
    reporter.report(Report.unschedulable(p, "waiting"))
    await turns(10)  # in flight, held by the API server
    reporter.forget(p.uid)  # the pod is deleted meanwhile
    gate.set()
    await sched.settle()
    assert messages(api, "p") == ["waiting"]
    # Nothing about the deleted pod stays behind (hours of jobs made this grow).
    assert reporter.remembered == before
