"""Backfill into held room through the engine: while a starving job holds nodes, a pod or gang
whose time limits end before the job starts (by the time limits of the pods it waits for) runs
on them; one that ends later, or has no limit, does not, nor does anything while a pod the job
waits for has no limit; the job waits for what it let in, says so, and binds whole once those
are gone too; once they are all it waits for, they are evicted (unless ``reclaimLentRoom`` is
off)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from koordgang.model.job import parse_job
from koordgang.model.pod import PodInfo
from koordgang.model.resources import Resources
from koordgang.model.time import format_rfc3339
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import bound, gang, node, parse, pod, pod_json
from koordgang.testing.harness import Harness, MakeScheduler

RESERVE_AFTER = 30.0
LATE = "koordgang_start_later_than_expected_total"
#: The blockers' time limit (seconds from their start): the job starts by then, plus their
#: grace period (30 s, the default) and the lag allowance (10 s).
BLOCKER_LIMIT = 600
SHORT = 60
LONG = 3600


@pytest.fixture
async def guarded(make_scheduler: MakeScheduler) -> Harness:
    return make_scheduler(reserve_after=RESERVE_AFTER)


def running(name: str, node_name: str, *, started: float, limit: int | None) -> PodInfo:
    """A one-cpu pod of ours running on ``node_name`` since ``started`` (wall clock)."""
    info = bound(pod(name), node_name)
    return replace(info, phase="Running", start_time=started, active_deadline_seconds=limit)


def limited(info: PodInfo, seconds: int | None) -> PodInfo:
    return replace(info, active_deadline_seconds=seconds)


def message(api: FakeApi, name: str) -> str:
    condition = api.condition(name)
    assert condition is not None, f"{name} was told nothing"
    return str(condition["message"])


def bound_to(api: FakeApi, prefix: str) -> dict[str, str]:
    return {name: where for name, where in api.binds() if name.startswith(prefix)}


async def retry(sched: Harness, seconds: float = 11) -> None:
    sched.clock.advance(seconds)
    sched.scheduler.signals.request_move()
    await sched.run()


async def hold(sched: Harness, api: FakeApi, limits: tuple[int | None, int | None]) -> list[Any]:
    """Two 8-cpu nodes, each with one running pod of ours (with these time limits, started
    now); the big job (2 x 8 cpu) waits past reserveAfter and holds both. Returns the
    blockers."""
    wall = sched.clock.wall()
    blockers = [
        running(f"blocker-{i}", f"n{i}", started=wall, limit=limit)
        for i, limit in zip((1, 2), limits, strict=True)
    ]
    members = gang("big", 2, 2, cpu="8")
    sched.list(nodes=[node("n1", cpu="8"), node("n2", cpu="8")], pods=blockers + members)
    await sched.run()
    await retry(sched, RESERVE_AFTER + 1)
    assert message(api, "big-0").startswith("holding 2 nodes for ns/big since "), message(
        api, "big-0"
    )
    return blockers


async def test_a_pod_that_ends_before_the_job_starts_runs_on_held_room(
    guarded: Harness, api: FakeApi
) -> None:
    blockers = await hold(guarded, api, (BLOCKER_LIMIT, BLOCKER_LIMIT))
    guarded.add(limited(pod("short", cpu="4"), SHORT))
    await guarded.run()
    assert set(bound_to(api, "short").values()) <= {"n1", "n2"}
    assert "short" in bound_to(api, "short")
    # The reservation says what it let in (on the members, when they are tried again, and in
    # the gangs view at once), and keeps the start it promised as it began to hold room.
    promised = blockers[0].start_time + BLOCKER_LIMIT + 30 + 10
    by = time.strftime("%H:%M:%S", time.gmtime(promised))
    facts = guarded.framework.gang_facts("ns/big")
    assert facts["waitingFor"].endswith(
        "waiting for 3 pods to finish, let in 1 pod that ends before it starts; "
        f"promised to start by {by} UTC"
    ), facts["waitingFor"]
    assert (facts["expectedStart"], facts["promised"]) == (format_rfc3339(promised), True)
    # A job that holds room has the guard's promise, not an estimate from before it held.
    assert "startWaitsFor" not in facts
    await retry(guarded)
    assert message(api, "big-0").startswith("holding 2 nodes for ns/big since "), message(
        api, "big-0"
    )
    assert "let in 1 pod that ends before it starts" in message(api, "big-0")


async def test_a_gang_that_ends_before_the_job_starts_runs_on_held_room_whole(
    guarded: Harness, api: FakeApi
) -> None:
    """Both members on held room, past the last check of a gang before it binds."""
    await hold(guarded, api, (BLOCKER_LIMIT, BLOCKER_LIMIT))
    guarded.add(*(limited(m, SHORT) for m in gang("pair", 2, 2, cpu="6")))
    await guarded.run()
    assert sorted(bound_to(api, "pair-").values()) == ["n1", "n2"]


async def test_a_pod_that_would_end_after_the_job_starts_is_kept_off(
    guarded: Harness, api: FakeApi
) -> None:
    await hold(guarded, api, (BLOCKER_LIMIT, BLOCKER_LIMIT))
    guarded.add(limited(pod("long", cpu="4"), LONG))
    await guarded.run()
    assert bound_to(api, "long") == {}
    assert "2 node(s) held for ns/big" in message(api, "long")
    guarded.add(limited(pod("short", cpu="4"), SHORT))
    await guarded.run()
    assert "short" in bound_to(api, "short")
    assert bound_to(api, "long") == {}


async def test_a_pods_job_ends_it_when_its_deadline_comes_first(
    guarded: Harness, api: FakeApi
) -> None:
    await hold(guarded, api, (BLOCKER_LIMIT, BLOCKER_LIMIT))
    # A pod with a long limit of its own, whose Job ends sooner, goes with its Job (the Job's
    # clock runs from the Job's start): it ends before the job starts.
    wall = guarded.clock.wall()
    trainer = {
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {"activeDeadlineSeconds": SHORT},
        "status": {"startTime": format_rfc3339(wall - 10)},
    }
    guarded.intake.kind("jobs").upsert(parse_job(trainer))
    member = replace(limited(pod("train-0", cpu="4"), LONG), owner="ns/train", owner_kind="Job")
    guarded.add(member)
    await guarded.run()
    assert "train-0" in bound_to(api, "train-0")
    # The Job controller writes a Job's startTime after it made its pods: a pod may come
    # before it does, and its Job's clock runs all the same.
    fresh = {
        "metadata": {"name": "fresh", "namespace": "ns"},
        "spec": {"activeDeadlineSeconds": SHORT},
        "status": {},
    }
    guarded.intake.kind("jobs").upsert(parse_job(fresh))
    guarded.add(replace(pod("fresh-0", cpu="2"), owner="ns/fresh", owner_kind="Job"))
    await guarded.run()
    assert "fresh-0" in bound_to(api, "fresh-0")


async def test_a_pod_without_a_time_limit_is_kept_off(guarded: Harness, api: FakeApi) -> None:
    await hold(guarded, api, (BLOCKER_LIMIT, BLOCKER_LIMIT))
    guarded.add(pod("endless", cpu="4"), limited(pod("short", cpu="4"), SHORT))
    await guarded.run()
    assert bound_to(api, "endless") == {}
    assert "2 node(s) held for ns/big" in message(api, "endless")
    assert "short" in bound_to(api, "short")


async def test_a_pod_the_job_waits_for_without_a_time_limit_lets_nothing_in(
    guarded: Harness, api: FakeApi
) -> None:
    """The job's start is unknown while it waits for a pod that may run for ever: nothing can
    be said to end before it. Once that pod is gone, the start is known again."""
    blockers = await hold(guarded, api, (BLOCKER_LIMIT, None))
    guarded.add(limited(pod("short", cpu="4"), SHORT))
    await guarded.run()
    assert bound_to(api, "short") == {}
    assert "2 node(s) held for ns/big" in message(api, "short")
    guarded.intake.on_pod_delete(blockers[1].uid)
    await guarded.run()
    await retry(guarded)
    assert "short" in bound_to(api, "short")


async def let_in_short(sched: Harness, api: FakeApi) -> list[Any]:
    """The big job holds n1 and n2 (their blockers end by their limits); a short pod is let in
    on one of them and runs. Returns the blockers."""
    blockers = await hold(sched, api, (BLOCKER_LIMIT, BLOCKER_LIMIT))
    sched.add(limited(pod("short", cpu="4"), SHORT))
    await sched.run()
    [where] = bound_to(api, "short").values()
    sched.intake.on_pod_upsert(
        replace(bound(limited(pod("short", cpu="4"), SHORT), where), phase="Running")
    )
    await sched.run()
    return blockers


def deleted(api: FakeApi) -> list[str]:
    return [c.path.rsplit("/", 1)[-1] for c in api.landed() if c.method == "DELETE"]


async def test_room_lent_is_taken_back_once_it_is_all_the_job_waits_for(
    guarded: Harness, api: FakeApi
) -> None:
    """The pods it held the room for end well before their limits: the pod let in, which
    would end after them, is evicted, and the job binds once it is gone, as it would have
    without backfill."""
    blockers = await let_in_short(guarded, api)
    assert deleted(api) == []
    for blocker in blockers:
        guarded.intake.on_pod_delete(blocker.uid)
    await retry(guarded)
    assert deleted(api) == ["short"]
    [target] = [
        c
        for call in api.landed()
        if call.path.endswith("/pods/short/status")
        for c in call.body["status"].get("conditions", ())
        if c["type"] == "DisruptionTarget"
    ]
    assert target["reason"] == "PreemptionByScheduler"
    assert target["message"] == (
        "koord-scheduler: reclaiming the room this pod was let into while another job held "
        "it, preemptor: ns/big, triggerpod: ns/big-0"
    )
    assert "its room is ready but for 1 pod it let in: evicting" in message(api, "big-0")
    assert bound_to(api, "big-") == {}
    guarded.intake.on_pod_delete(pod("short").uid)
    await retry(guarded, 1)
    assert sorted(bound_to(api, "big-").values()) == ["n1", "n2"]


async def test_nothing_is_reclaimed_while_a_pod_it_held_the_room_for_is_there(
    guarded: Harness, api: FakeApi
) -> None:
    blockers = await let_in_short(guarded, api)
    guarded.intake.on_pod_delete(blockers[0].uid)
    await retry(guarded)
    await retry(guarded)
    assert deleted(api) == []
    assert bound_to(api, "big-") == {}


async def test_without_reclaiming_the_job_waits_for_what_it_let_in(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(reserve_after=RESERVE_AFTER, reclaim_lent_room=False)
    blockers = await let_in_short(sched, api)
    # The pods it held the room for finish first: the job starts when the pod it let in is
    # gone (and nothing more comes in on that pod's bound).
    for blocker in blockers:
        sched.intake.on_pod_delete(blocker.uid)
    await retry(sched)
    assert bound_to(api, "big-") == {}
    assert (
        "waiting for 1 pod to finish, let in 1 pod that ends before it starts; promised "
        in message(api, "big-0")
    ), message(api, "big-0")
    sched.intake.on_pod_delete(pod("short").uid)
    await retry(sched, 1)
    assert sorted(bound_to(api, "big-").values()) == ["n1", "n2"]
    assert deleted(api) == []


async def test_a_pod_is_not_let_in_where_the_job_fits_sooner_than_the_pods_it_waits_for_end(
    guarded: Harness, api: FakeApi
) -> None:
    """n1 (12 cpu) holds a (ends 140 s from now) and b (ends 640 s from now); big needs 8.
    The dry run waits for b, but big fits as soon as a goes: a pod of 400 s would delay it."""
    wall = guarded.clock.wall()
    early = running("a", "n1", started=wall - 500, limit=600)
    late = running("b", "n1", started=wall, limit=600)
    early, late = (replace(p, requests=Resources({"cpu": 4000})) for p in (early, late))
    guarded.list(nodes=[node("n1", cpu="12")], pods=[early, late, *gang("big", 1, 1, cpu="8")])
    await guarded.run()
    await retry(guarded, RESERVE_AFTER + 1)
    assert message(api, "big-0").startswith("holding 1 node for ns/big"), message(api, "big-0")
    promised = wall - 500 + 600 + 30 + 10
    assert guarded.framework.gang_facts("ns/big")["expectedStart"] == format_rfc3339(promised)
    guarded.add(limited(pod("p", cpu="4"), 400))
    await guarded.run()
    assert bound_to(api, "p") == {}
    assert "held for ns/big" in message(api, "p")


async def test_a_terminating_pod_on_the_held_node_counts_in_the_promise(
    guarded: Harness, api: FakeApi
) -> None:
    """A pod deleted with an hour's grace period holds its room until then: the job is not
    promised a start before."""
    wall = guarded.clock.wall()
    leaving = replace(
        running("t", "n1", started=wall - 10, limit=None),
        requests=Resources({"cpu": 4000}),
        deletion_timestamp=wall + 3600,
    )
    short = replace(running("b", "n1", started=wall, limit=100), requests=Resources({"cpu": 4000}))
    guarded.list(nodes=[node("n1", cpu="8")], pods=[leaving, short, *gang("big", 1, 1, cpu="8")])
    await guarded.run()
    await retry(guarded, RESERVE_AFTER + 1)
    facts = guarded.framework.gang_facts("ns/big")
    assert facts["expectedStart"] == format_rfc3339(wall + 3600 + 10), facts


async def test_a_pod_let_in_that_succeeds_is_no_longer_waited_for(
    guarded: Harness, api: FakeApi
) -> None:
    """A Job's pod that completes stays as an object (phase Succeeded): its room is free, and
    the job is tried at once, as when a pod it waits for is deleted."""
    blockers = await hold(guarded, api, (BLOCKER_LIMIT, BLOCKER_LIMIT))
    guarded.add(limited(pod("short", cpu="4"), SHORT))
    await guarded.run()
    [where] = bound_to(api, "short").values()
    let_in = replace(bound(limited(pod("short", cpu="4"), SHORT), where), phase="Running")
    guarded.intake.on_pod_upsert(let_in)
    await guarded.run()
    for blocker in blockers:
        guarded.intake.on_pod_delete(blocker.uid)
    await retry(guarded, 1)
    assert bound_to(api, "big-") == {}
    assert "waiting for 1 pod to finish" in guarded.framework.gang_facts("ns/big")["waitingFor"]
    guarded.asked.activated.clear()
    guarded.intake.on_pod_upsert(replace(let_in, phase="Succeeded", resource_version="3"))
    assert sorted(guarded.asked.activated) == ["big-0", "big-1"]
    assert "waiting for" not in guarded.framework.gang_facts("ns/big")["waitingFor"]
    await retry(guarded, 1)
    assert sorted(bound_to(api, "big-").values()) == ["n1", "n2"]


async def test_nothing_is_let_in_while_a_pod_the_job_waits_for_outlives_its_bound(
    guarded: Harness, api: FakeApi
) -> None:
    """The blockers' bound has passed and they are still there (a kubelet late to act): the
    job's start is not known any more, and a short pod is kept off rather than let in on a
    start that keeps sliding."""
    await hold(guarded, api, (100, 100))
    # Due by 140 s from their start (100 s, grace, lag); it is 141 s later.
    guarded.clock.advance(141 - RESERVE_AFTER - 1)
    # 1 s and no grace period: it would end well within what the overdue pods' grace is.
    guarded.add(replace(limited(pod("short", cpu="4"), 1), grace_seconds=0))
    await guarded.run()
    assert bound_to(api, "short") == {}


def nominated(api: FakeApi, name: str) -> str:
    """The node the pod's last status patch nominated it to."""
    path = f"/api/v1/namespaces/ns/pods/{name}/status"
    patches = [
        c.body["status"]["nominatedNodeName"]
        for c in api.landed()
        if c.method == "PATCH" and c.path == path and "nominatedNodeName" in c.body["status"]
    ]
    assert patches, f"{name} was never nominated"
    return str(patches[-1])


def late_starts(sched: Harness) -> list[str]:
    text = sched.scheduler.metrics.render().decode()
    return [line for line in text.splitlines() if line.startswith(LATE + "{")]


@pytest.mark.parametrize(
    ("gone_after", "late"), [(50, []), (200, ['{reason="outlived_bound"} 1.0'])]
)
async def test_a_job_that_binds_after_its_promise_is_counted_late(
    guarded: Harness, api: FakeApi, gone_after: float, late: list[str]
) -> None:
    """Promised 140 s from its blockers' start (100 s, grace, lag); they go at ``gone_after``."""
    blockers = await hold(guarded, api, (100, 100))
    # The informer shows the members nominated, as the API server has them now.
    for member in [p for p in guarded.cache.pods() if p.name.startswith("big-")]:
        guarded.intake.on_pod_upsert(
            replace(member, nominated_node_name=nominated(api, member.name), resource_version="5")
        )
    guarded.clock.advance(gone_after - RESERVE_AFTER - 1)
    for blocker in blockers:
        guarded.intake.on_pod_delete(blocker.uid)
    await retry(guarded, 1)
    guarded.observe_binds()
    await guarded.run()
    assert sorted(bound_to(api, "big-").values()) == ["n1", "n2"]
    assert late_starts(guarded) == [LATE + line for line in late]


async def test_a_pod_is_let_in_on_a_held_node_only_if_it_ends_before_that_nodes_room_is_free(
    guarded: Harness, api: FakeApi
) -> None:
    """n1's room is free by its blocker's bound 140 s from now (100 s, grace 30 s, lag 10 s),
    n2's by 640 s: the job starts by 640 s (it binds whole). A pod let in on n1 that ends at
    371 s would keep n1 busy past the moment it is free for the job by the time limits, and
    pods end before their limits: the job's start would hang on it. A pod placed 31 s from now
    with a limit of 300 s ends by 31 + 300 + 40 = 371 s: kept off n1; one with 60 s ends by
    131 s: let in. n2 (4 cpu held by its blocker) has no room for either."""
    wall = guarded.clock.wall()
    blockers = [
        running("blocker-1", "n1", started=wall, limit=100),
        replace(
            running("blocker-2", "n2", started=wall, limit=600), requests=Resources({"cpu": 4000})
        ),
    ]
    members = gang("big", 2, 2, cpu="8")
    guarded.list(nodes=[node("n1", cpu="8"), node("n2", cpu="8")], pods=blockers + members)
    await guarded.run()
    await retry(guarded, RESERVE_AFTER + 1)
    assert message(api, "big-0").startswith("holding 2 nodes for ns/big"), message(api, "big-0")
    assert guarded.framework.gang_facts("ns/big")["expectedStart"] == format_rfc3339(wall + 640)
    guarded.add(limited(pod("long", cpu="6"), 300))
    await guarded.run()
    assert bound_to(api, "long") == {}
    assert "held for ns/big" in message(api, "long")
    guarded.add(limited(pod("short", cpu="6"), SHORT))
    await guarded.run()
    assert bound_to(api, "short") == {"short": "n1"}


async def test_a_job_promised_a_start_past_its_waiting_time_holds_its_room_until_then(
    guarded: Harness, api: FakeApi
) -> None:
    """Blockers limited to 1,200 s from t0: the job, holding room from t0 + 31 s, is promised
    t0 + 1,240 s (grace 30 s, lag 10 s), past its waiting time (600 s, the default: t0 + 631 s).
    At t0 + 700 s it still holds the room (a pod without a limit is kept off, where it would
    fit once the room is given up), and binds there when the blockers go at t0 + 1,240 s."""
    t0 = guarded.clock.wall()
    blockers = await hold(guarded, api, (1200, 1200))
    promised = t0 + 1200 + 30 + 10
    assert guarded.framework.gang_facts("ns/big")["expectedStart"] == format_rfc3339(promised)
    await retry(guarded, 700 - RESERVE_AFTER - 1)
    assert message(api, "big-0").startswith("holding 2 nodes for ns/big"), message(api, "big-0")
    guarded.add(pod("endless", cpu="4"))
    await guarded.run()
    assert bound_to(api, "endless") == {}
    assert "held for ns/big" in message(api, "endless")
    guarded.clock.advance(promised - guarded.clock.wall())
    for blocker in blockers:
        guarded.intake.on_pod_delete(blocker.uid)
    await retry(guarded, 0)
    assert sorted(bound_to(api, "big-").values()) == ["n1", "n2"]


async def test_what_was_let_in_does_not_keep_held_room_open_for_more(
    guarded: Harness, api: FakeApi
) -> None:
    """Blockers limited to 600 s from t0 (free by t0 + 640 s) hold 1 cpu on n1 and n2. At
    t0 + 31 s a 4-cpu pod limited to 400 s comes in (free by t0 + 471 s). The blockers end
    early, at t0 + 100 s: the job now waits only for what it let in. A 2-cpu pod limited to
    60 s (free by t0 + 200 s) would end before it, but is kept off: room the job waits for
    only because of what it let in is not lent again, or pods ending early would never make
    the job start sooner, each let in on the bound of the one before."""
    t0 = guarded.clock.wall()
    blockers = await hold(guarded, api, (BLOCKER_LIMIT, BLOCKER_LIMIT))
    guarded.add(limited(pod("first", cpu="4"), 400))
    await guarded.run()
    [where] = bound_to(api, "first").values()
    first = replace(
        bound(limited(pod("first", cpu="4"), 400), where), phase="Running", start_time=t0 + 31
    )
    guarded.intake.on_pod_upsert(first)
    await guarded.run()
    guarded.clock.advance(100 - RESERVE_AFTER - 1)
    for blocker in blockers:
        guarded.intake.on_pod_delete(blocker.uid)
    await guarded.run()
    guarded.add(limited(pod("second", cpu="2"), SHORT))
    await guarded.run()
    assert bound_to(api, "second") == {}
    assert "held for ns/big" in message(api, "second")
    guarded.intake.on_pod_delete(first.uid)
    await retry(guarded, 1)
    assert sorted(bound_to(api, "big-").values()) == ["n1", "n2"]


async def test_a_job_let_in_and_disrupted_whole_is_evicted_whole(
    guarded: Harness, api: FakeApi
) -> None:
    """A gang let in with one member on held room and one on a node of its own, its PodGroup
    disrupted whole (upstream's ``disruptionMode: {all: {}}``): when the room is taken back,
    both go, as preemption would evict them."""
    wall = guarded.clock.wall()
    blockers = [running(f"blocker-{i}", f"n{i}", started=wall, limit=BLOCKER_LIMIT) for i in (1, 2)]
    members = gang("big", 2, 2, cpu="8")
    nodes = [node("n1", cpu="8"), node("n2", cpu="8"), node("n3", cpu="1", labels={"own": "n3"})]
    guarded.list(nodes=nodes, pods=blockers + members)
    guarded.intake.on_object(
        "podgroups.scheduling.k8s.io",
        "ADDED",
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": "pair",
                "namespace": "ns",
                "uid": "uid-pair",
                "resourceVersion": "1",
                "creationTimestamp": "2024-01-01T00:00:00Z",
            },
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}}},
        },
    )
    await guarded.run()
    await retry(guarded, RESERVE_AFTER + 1)
    assert message(api, "big-0").startswith("holding 2 nodes for ns/big"), message(api, "big-0")

    pair = []
    for i in range(2):
        obj = pod_json(f"pair-{i}", cpu="1")
        obj["spec"]["schedulingGroup"] = {"podGroupName": "pair"}
        obj["spec"]["activeDeadlineSeconds"] = SHORT
        if i == 0:
            obj["spec"]["nodeSelector"] = {"own": "n3"}
        pair.append(parse(obj))
    guarded.add(*pair)
    await guarded.run()
    where = dict(bound_to(api, "pair-"))
    assert sorted(where) == ["pair-0", "pair-1"] and "n3" in where.values(), where
    for info in pair:
        guarded.intake.on_pod_upsert(
            replace(bound(info, where[info.name]), phase="Running", start_time=wall)
        )
    await guarded.run()

    for blocker in blockers:
        guarded.intake.on_pod_delete(blocker.uid)
    await retry(guarded)
    assert sorted(deleted(api)) == ["pair-0", "pair-1"]
