"""One daemon answering to several scheduler names: one engine and one view of the cluster,
each pod told in the name of the scheduler it asked for."""

from __future__ import annotations

from dataclasses import replace

from koordgang.testing.api import FakeApi
from koordgang.testing.builders import gang, node, pod
from koordgang.testing.harness import MakeScheduler

NAMES = ("koord-scheduler", "scheduler-plugins-scheduler")


async def test_pods_of_every_name_are_scheduled_and_told_in_their_schedulers_name(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(scheduler_names=NAMES)
    sched.list(
        nodes=[node("n1", cpu="4")],
        pods=[
            pod("ours-a"),
            pod("ours-b", scheduler="scheduler-plugins-scheduler"),
            pod("theirs", scheduler="default-scheduler"),
        ],
    )
    await sched.run()

    assert sorted(name for name, _ in api.binds()) == ["ours-a", "ours-b"]
    sources = {e["involvedObject"]["name"]: e["source"]["component"] for e in api.events()}
    assert sources == {"ours-a": "koord-scheduler", "ours-b": "scheduler-plugins-scheduler"}
    metrics = sched.scheduler.metrics.render().decode()
    for name in NAMES:
        assert (
            f'scheduler_schedule_attempts_total{{profile="{name}",result="scheduled"}} 1.0'
            in metrics
        )


async def test_a_gang_whose_members_name_two_of_our_schedulers_waits_whole_and_says_why(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler(scheduler_names=NAMES)
    first, second, third = gang("mixed", 3, 3)
    third = replace(third, scheduler_name="scheduler-plugins-scheduler")
    sched.list(nodes=[node("n1", cpu="8")], pods=[first, second, third])
    await sched.run()

    assert api.binds(landed=False) == []
    for member in (first, second, third):
        condition = api.condition(member.name)
        assert condition is not None and condition["status"] == "False"
        assert "members name different schedulers" in condition["message"]
        assert "koord-scheduler (2), scheduler-plugins-scheduler (1)" in condition["message"]

    # spec.schedulerName cannot change: the odd member is replaced by one that agrees, and the
    # gang binds whole.
    sched.intake.on_pod_delete(third.uid)
    [replacement] = gang("mixed", 1, 3, first=3)
    sched.add(replacement)
    await sched.run()
    assert sorted(name for name, _ in api.binds()) == ["mixed-0", "mixed-1", "mixed-3"]
