"""Start times through the engine: a job waiting for room is told when it starts if the pods
holding the room end by their time limits (their own, or their Job's), the gangs view and the
metric say the same, and room held without a limit is named instead of a time."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import replace
from typing import Any

import pytest

from koordgang.model.job import parse_job
from koordgang.model.pod import PodInfo
from koordgang.model.resources import Resources
from koordgang.model.time import format_rfc3339
from koordgang.plugins.starttimes import StartTimes
from koordgang.plugins.starttimes import plugin as starttimes_plugin
from koordgang.state.start_plan import Estimate, plan_starts
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import bound, gang, node, pod
from koordgang.testing.harness import Harness, MakeScheduler

LATE = "koordgang_start_later_than_expected_total"
#: Grace period (the default) and the allowance for the kubelet's and controller's lag.
AFTER_DEADLINE = 30 + 10


def running(name: str, node_name: str, cpu: str, *, started: float, limit: int | None) -> PodInfo:
    info = bound(pod(name, cpu=cpu), node_name)
    return replace(info, phase="Running", start_time=started, active_deadline_seconds=limit)


def limited(info: PodInfo, seconds: int) -> PodInfo:
    return replace(info, active_deadline_seconds=seconds)


def utc(moment: float) -> str:
    """As the pods are told it: to the minute, rounded up (never earlier than planned)."""
    return time.strftime("%H:%M UTC", time.gmtime(math.ceil(moment / 60) * 60))


def message(api: FakeApi, name: str) -> str:
    condition = api.condition(name)
    assert condition is not None, f"{name} was told nothing"
    return str(condition["message"])


async def told(sched: Harness) -> None:
    """A round of the loop; the plan it asks for is made off the cycle, and the jobs first
    seen since the last one are tried again once it is made, to be told their start."""
    await sched.run()
    await sched.run()


async def next_plan(sched: Harness) -> None:
    """Jobs first seen after a plan in its interval wait for the next: let it come, and the
    pods be tried again."""
    sched.clock.advance(11)
    sched.scheduler.signals.request_move()
    await told(sched)


def start_times(sched: Harness) -> StartTimes:
    return next(p for p in sched.framework.plugins if isinstance(p, StartTimes))


async def test_a_pod_waiting_for_room_hears_when_the_pods_there_reach_their_limits(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    wall = sched.clock.wall()
    # n1 is full until 600 s after r1 started (100 s ago), its grace period and the lag.
    sched.list(
        nodes=[node("n1", cpu="4")],
        pods=[running("r1", "n1", "4", started=wall - 100, limit=600), pod("w", cpu="2")],
    )
    await told(sched)
    expected = wall - 100 + 600 + AFTER_DEADLINE
    assert message(api, "w").endswith(
        f"; expected to start by {utc(expected)} (an estimate): 1 pod on n1 reaches its time limit"
    ), message(api, "w")


async def test_a_jobs_deadline_bounds_its_pods_and_a_gang_waits_for_enough_nodes(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    wall = sched.clock.wall()
    trainer = {
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {"activeDeadlineSeconds": 300},
        "status": {"startTime": format_rfc3339(wall - 60)},
    }
    holders = [
        # n1 ends with its Job (240 s from now), n2 on its own limit (900 s), n3 never.
        replace(
            running("t-0", "n1", "4", started=wall - 50, limit=None),
            owner="ns/train",
            owner_kind="Job",
        ),
        running("long", "n2", "4", started=wall, limit=900),
        running("endless", "n3", "4", started=wall, limit=None),
    ]
    members = gang("pair", 2, 2, cpu="4")
    sched.list(
        nodes=[node(f"n{i}", cpu="4") for i in (1, 2, 3)],
        pods=holders + members,
        jobs=[parse_job(trainer)],
    )
    await told(sched)
    expected = wall + 900 + AFTER_DEADLINE
    for member in members:
        assert f"expected to start by {utc(expected)} (an estimate): 2 pods on n1, n2" in (
            message(api, member.name)
        )
    facts = sched.framework.gang_facts("ns/pair")
    assert facts["expectedStart"] == format_rfc3339(expected)
    assert facts["startWaitsFor"] == ["ns/long", "ns/t-0"]
    gauges: dict[str, Any] = dict(start_times(sched).gauges())
    assert gauges["koordgang_expected_wait_seconds"][""] == expected - sched.clock.wall()


async def test_room_held_without_a_limit_is_named_to_a_job_with_one(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    wall = sched.clock.wall()
    sched.list(
        nodes=[node("n1", cpu="4")],
        pods=[
            running("endless", "n1", "4", started=wall, limit=None),
            limited(pod("w", cpu="2"), 60),
            pod("plain", cpu="2"),
        ],
    )
    await sched.run()
    await next_plan(sched)
    assert message(api, "w").endswith(
        "; no start time can be given: room it needs is held with no known end (no time "
        "limit, or not started yet) by ns/endless"
    ), message(api, "w")
    # A pod without a limit of its own is told nothing of start times it cannot have.
    assert "time limit" not in message(api, "plain")
    facts = sched.framework.gang_facts("ns/w")
    assert (facts["expectedStart"], facts["startHeldBy"]) == (None, ["ns/endless"])


async def test_a_later_job_is_planned_after_the_earlier_one_it_would_delay(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    wall = sched.clock.wall()
    big = [limited(p, 1000) for p in gang("big", 2, 2, cpu="4")]
    sched.list(
        nodes=[node("n1", cpu="4"), node("n2", cpu="4")],
        pods=[
            running("a", "n1", "4", started=wall, limit=100),
            running("b", "n2", "4", started=wall, limit=100),
            *big,
            limited(pod("small", cpu="2"), 5000),
        ],
    )
    await sched.run()
    await next_plan(sched)
    # The big gang, first in the queue, has both nodes from 140 s on for 1040 s: the small
    # pod would run into it anywhere, so it comes after.
    assert f"expected to start by {utc(wall + 100 + AFTER_DEADLINE)}" in message(api, "big-0")
    after = wall + 100 + AFTER_DEADLINE + 1000 + AFTER_DEADLINE
    assert f"expected to start by {utc(after)}" in message(api, "small")


def late_starts(sched: Harness) -> list[str]:
    text = sched.scheduler.metrics.render().decode()
    return [line for line in text.splitlines() if line.startswith(LATE + "{")]


async def bind_all(sched: Harness) -> None:
    """The pods given room are tried again past their backoff, and their bindings seen."""
    sched.clock.advance(11)
    sched.scheduler.signals.request_move()
    await sched.run()
    sched.observe_binds()
    await sched.run()


async def waiting_behind_r1(sched: Harness) -> PodInfo:
    """n1 full until 540 s from now (r1's limit, grace and lag), and w, limited, told so."""
    wall = sched.clock.wall()
    holder = running("r1", "n1", "4", started=wall - 100, limit=600)
    sched.list(nodes=[node("n1", cpu="4")], pods=[holder, limited(pod("w", cpu="2"), 60)])
    await told(sched)
    return holder


async def test_a_job_started_by_the_time_told_is_not_counted_late(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    holder = await waiting_behind_r1(sched)
    assert "expected to start by" in message(api, "w")
    sched.clock.advance(100)
    sched.intake.on_pod_delete(holder.uid)
    await bind_all(sched)
    assert dict(api.binds()) == {"w": "n1"}
    assert late_starts(sched) == []


async def test_a_job_waiting_for_a_pod_that_outlived_its_bound_is_counted_late(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    holder = await waiting_behind_r1(sched)
    # Told 540 s from now; the holder is still there 700 s from now.
    sched.clock.advance(700)
    await next_plan(sched)
    sched.intake.on_pod_delete(holder.uid)
    await bind_all(sched)
    assert dict(api.binds()) == {"w": "n1"}
    assert late_starts(sched) == [LATE + '{reason="outlived_bound"} 1.0']


async def test_a_job_a_higher_priority_one_overtook_is_counted_late_and_says_so(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    wall = sched.clock.wall()
    holder = running("r1", "n1", "4", started=wall - 100, limit=600)
    sched.list(nodes=[node("n1", cpu="4")], pods=[holder, limited(pod("w", cpu="4"), 60)])
    await told(sched)
    assert f"expected to start by {utc(wall + 540)}" in message(api, "w")
    # A more important job arrives; it waits rather than preempt, and comes first.
    vip = replace(
        limited(pod("vip", cpu="4", priority=10, preemption_policy="Never"), 1000),
        creation_timestamp=wall + 10,
    )
    sched.clock.advance(10)
    sched.add(vip)
    await next_plan(sched)
    # w, told before, hears of its new start when it is next tried after that plan (past
    # its backoff; before the starvation guard would hold room for it).
    sched.clock.advance(5)
    sched.scheduler.signals.request_move()
    await sched.run()
    assert f"expected to start by {utc(wall + 540 + 1040)}" in message(api, "w")
    sched.clock.advance(600)
    sched.intake.on_pod_delete(holder.uid)
    await bind_all(sched)
    assert dict(api.binds()) == {"vip": "n1"}
    sched.intake.on_pod_delete(vip.uid)
    await bind_all(sched)
    assert dict(api.binds())["w"] == "n1"
    assert late_starts(sched) == [LATE + '{reason="higher_priority"} 1.0']


async def test_a_gpu_job_of_a_device_plugin_waits_for_room_and_hears_its_start(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """GPUs a device plugin serves (node allocatable, no DeviceClass) are room like cpu."""
    sched = make_scheduler()
    wall = sched.clock.wall()
    holder = replace(
        running("r1", "n1", "1", started=wall, limit=600),
        requests=Resources({"cpu": 1000, "nvidia.com/gpu": 1}),
    )
    waiting = limited(pod("w", cpu="1", requests={"nvidia.com/gpu": "1"}), 60)
    sched.list(nodes=[node("n1", cpu="4", gpus=1)], pods=[holder, waiting])
    await told(sched)
    assert f"expected to start by {utc(wall + 600 + AFTER_DEADLINE)}" in message(api, "w"), message(
        api, "w"
    )


async def test_room_held_for_a_reserving_job_has_no_known_end(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """The starvation guard holds n1 for big (its members nominated, not started): a job
    behind it is not told a start from big's time limit counted from now."""
    sched = make_scheduler(reserve_after=30)
    wall = sched.clock.wall()
    sched.list(
        nodes=[node("n1", cpu="8")],
        pods=[
            running("r1", "n1", "1", started=wall, limit=600),
            *(limited(m, 3600) for m in gang("big", 1, 1, cpu="8")),
        ],
    )
    await sched.run()
    sched.clock.advance(31)
    sched.scheduler.signals.request_move()
    await sched.run()
    assert message(api, "big-0").startswith("holding 1 node for ns/big"), message(api, "big-0")
    sched.add(limited(pod("w", cpu="8"), 60))
    await next_plan(sched)
    assert message(api, "w").endswith(
        "no start time can be given: room it needs is held with no known end (no time limit, "
        "or not started yet) by ns/big-0"
    ), message(api, "w")


async def test_a_gang_whose_members_accept_different_nodes_hears_its_start(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    """An MPI-style gang: its launcher goes to CPU nodes, its workers to GPU nodes."""
    sched = make_scheduler()
    wall = sched.clock.wall()
    cpu_node = node("n1", cpu="4", labels={"role": "cpu"})
    gpu_nodes = [node(f"n{i}", cpu="4", labels={"role": "gpu"}) for i in (2, 3)]
    launcher, *workers = gang("mpi", 3, 3, cpu="4")
    members = [
        replace(limited(launcher, 600), node_selector={"role": "cpu"}),
        *(replace(limited(w, 600), node_selector={"role": "gpu"}) for w in workers),
    ]
    sched.list(
        nodes=[cpu_node, *gpu_nodes],
        pods=[running("r1", "n3", "4", started=wall, limit=300), *members],
    )
    await told(sched)
    expected = f"expected to start by {utc(wall + 300 + AFTER_DEADLINE)} (an estimate)"
    assert expected in message(api, "mpi-0"), message(api, "mpi-0")


async def test_the_plan_is_made_off_the_cycle_in_a_thread_and_read_by_later_cycles(
    make_scheduler: MakeScheduler, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []

    def plan(*args: Any) -> list[Estimate]:
        threads.append(threading.get_ident())
        return plan_starts(*args)

    monkeypatch.setattr(starttimes_plugin, "plan_starts", plan)
    sched = make_scheduler()
    wall = sched.clock.wall()
    sched.list(
        nodes=[node("n1", cpu="4")],
        pods=[running("r1", "n1", "4", started=wall, limit=600), limited(pod("w", cpu="2"), 60)],
    )
    sched.step()
    # The cycle asked for a plan and went on: w is told why it waits, not yet when it starts.
    assert threads == [] and sched.framework.working()
    await sched.settle()
    assert threads and threading.get_ident() not in threads
    assert not sched.framework.working()
    # w, first seen before the plan, is tried again and told its start from it.
    await sched.run()
    assert f"expected to start by {utc(wall + 600 + AFTER_DEADLINE)}" in message(api, "w")
    assert len(threads) == 1
