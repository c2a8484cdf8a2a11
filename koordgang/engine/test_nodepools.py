"""Karpenter's NodePools through the engine: members of a gang beyond what every NodePool may
still add wait under BeyondNodePoolLimits (which autoscalers leave alone) and say which limit
stops them; within the limits, or once a limit is raised, they ask as Unschedulable."""

from __future__ import annotations

from typing import Any

from koordgang.plugins.nodepools import CLAIMS, REASON, RESOURCE
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import gang, node
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness

KIND = RESOURCE.id
CLAIM_KIND = CLAIMS.id


def nodepool(name: str, limits: dict[str, str] | None, used: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {}}}
    if limits is not None:
        spec["limits"] = limits
    return {"metadata": {"name": name}, "spec": spec, "status": {"resources": used}}


def reasons(api: FakeApi, names: list[str]) -> set[str]:
    found = set()
    for name in names:
        condition = api.condition(name)
        assert condition is not None, name
        found.add(condition["reason"])
    return found


async def test_a_gang_beyond_every_nodepools_limits_stops_asking_and_says_which(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    members = gang("x", 4, 4, cpu="2")  # 8 cpu; the node has 3 free
    sched.list(nodes=[node("n1", cpu="3")], pods=members)
    sched.intake.on_object(KIND, "ADDED", nodepool("gpu", {"cpu": "2"}, {"cpu": "0"}))
    sched.intake.on_object(KIND, "ADDED", nodepool("general", {"cpu": "4"}, {"cpu": "1500m"}))
    await sched.run()

    names = [m.name for m in members]
    assert reasons(api, names) == {REASON}
    condition = api.condition(names[0])
    assert condition is not None
    message = condition["message"]
    assert message.startswith("gang ns/x: ")
    assert message.endswith(
        "no NodePool can add the room: 5 cpu more than the nodes have free is needed, and the "
        "NodePools may add 4500m (general: limit 4, 1500m in use, gpu: limit 2, 0 in use); "
        "raise a NodePool's spec.limits, or free room"
    )
    assert api.binds(landed=False) == []

    # A limit raised: the members are judged again, and ask for the room.
    sched.intake.on_object(KIND, "MODIFIED", nodepool("gpu", {"cpu": "8"}, {"cpu": "0"}))
    clock.advance(sched.settings.initial_backoff)
    await sched.run()
    assert reasons(api, names) == {"Unschedulable"}


async def test_within_the_limits_or_without_a_limit_the_members_ask_as_unschedulable(
    sched: Harness, api: FakeApi
) -> None:
    members = gang("y", 4, 4, cpu="2")  # 8 cpu, 3 free: 5 short
    sched.list(nodes=[node("n1", cpu="3")], pods=members)
    # Exactly the shortfall left under the limit, and a pool without one on memory.
    sched.intake.on_object(
        KIND, "ADDED", nodepool("general", {"cpu": "9", "memory": "1Gi"}, {"cpu": "4"})
    )
    sched.intake.on_object(KIND, "ADDED", nodepool("open", None, {}))
    await sched.run()
    assert reasons(api, [m.name for m in members]) == {"Unschedulable"}


async def test_without_nodepools_nothing_changes(sched: Harness, api: FakeApi) -> None:
    members = gang("z", 2, 2, cpu="4")
    sched.list(nodes=[node("n1", cpu="3")], pods=members)
    sched.intake.on_object(KIND, "ADDED", nodepool("gone", {"cpu": "1"}, {}))
    sched.intake.on_object(KIND, "DELETED", nodepool("gone", {"cpu": "1"}, {}))
    await sched.run()
    assert reasons(api, [m.name for m in members]) == {"Unschedulable"}


async def test_only_the_members_the_minimum_needs_are_weighed(sched: Harness, api: FakeApi) -> None:
    # Ten members of 2 cpu, two of them the minimum: 1 cpu free, 3 more needed; a pool may
    # add 4. The optional members do not count: the gang asks.
    members = gang("m", 10, 2, cpu="2")
    sched.list(nodes=[node("n1", cpu="1")], pods=members)
    sched.intake.on_object(KIND, "ADDED", nodepool("general", {"cpu": "4"}, {}))
    await sched.run()
    assert reasons(api, [m.name for m in members]) == {"Unschedulable"}


async def test_a_paused_pool_adds_nothing_and_room_on_its_way_counts(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    members = gang("w", 2, 2, cpu="4")  # 8 cpu; 3 free
    sched.list(nodes=[node("n1", cpu="3")], pods=members)
    sched.intake.on_object(KIND, "ADDED", nodepool("paused", {"cpu": "0"}, {}))
    await sched.run()
    names = [m.name for m in members]
    assert reasons(api, names) == {REASON}

    # The pool's nodes are booting: Karpenter counts them in use, no node shows them yet.
    sched.intake.on_object(KIND, "MODIFIED", nodepool("paused", {"cpu": "8"}, {"cpu": "8"}))
    claim = {
        "metadata": {"name": "c1"},
        "spec": {"resources": {"requests": {"cpu": "8"}}},
        "status": {"allocatable": {"cpu": "7800m"}},
    }
    sched.intake.on_object(CLAIM_KIND, "ADDED", claim)
    clock.advance(sched.settings.initial_backoff)
    await sched.run()
    assert reasons(api, names) == {"Unschedulable"}
