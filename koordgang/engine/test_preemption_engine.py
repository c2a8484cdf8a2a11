"""Preemption through the engine: victims get the condition and are deleted, members are
nominated and hold the room, then bind together once the victims are gone; no second
preemption while victims are still there."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from koordgang.model.koordinator import NETWORK_TOPOLOGY_SPEC_KEY
from koordgang.plugins.preemption import Preemption
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import bound, gang, node, parse, pod, pod_json
from koordgang.testing.harness import Harness, MakeScheduler

LOW, HIGH = 0, 100


def low_pods(per_node: dict[str, int], cpu: str = "1") -> list[Any]:
    return [
        bound(pod(f"low-{name}-{i}", cpu=cpu, priority=LOW, scheduler="other"), name)
        for name, count in per_node.items()
        for i in range(count)
    ]


def retry(sched: Harness) -> None:
    """Time enough for the backoff of pods that failed to pass, and a cluster event."""
    sched.clock.advance(11)
    sched.scheduler.signals.request_move()


def deletes(api: FakeApi) -> list[str]:
    return [c.path.rsplit("/", 1)[1] for c in api.landed() if c.method == "DELETE"]


def status_patches(api: FakeApi, name: str) -> list[dict[str, Any]]:
    path = f"/api/v1/namespaces/ns/pods/{name}/status"
    return [c.body["status"] for c in api.landed() if c.method == "PATCH" and c.path == path]


def high_gang(count: int = 2, **kwargs: Any) -> list[Any]:
    members = gang("hi", count, count, **kwargs)
    return [pod(p.name, annotations=dict(p.annotations), priority=HIGH) for p in members]


async def test_a_gang_evicts_the_fewest_victims_then_binds_on_the_nominated_nodes(
    sched: Harness, api: FakeApi
) -> None:
    # Two full nodes (2 cpu each): a gang of 2 needs 2 cpu, so 2 victims, on one node or two.
    victims_pool = low_pods({"n1": 2, "n2": 2})
    members = high_gang(2)
    sched.list(nodes=[node("n1", cpu="2"), node("n2", cpu="2")], pods=victims_pool + members)
    await sched.run()

    evicted = deletes(api)
    assert len(evicted) == 2
    assert api.binds() == []
    for name in evicted:
        condition = status_patches(api, name)[0]["conditions"][0]
        assert condition["type"] == "DisruptionTarget"
        assert condition["reason"] == "PreemptionByScheduler"
        assert condition["message"] == (
            "koord-scheduler: preempting to accommodate higher priority pods, "
            "preemptor: ns/hi, triggerpod: ns/hi-0"
        )
        assert api.events(name, "Preempted")
    nominated = {}
    for member in members:
        patch = status_patches(api, member.name)[-1]
        nominated[member.name] = patch["nominatedNodeName"]
        assert patch["conditions"][0]["message"].startswith("preempting 2 pods on ")
    victim_nodes = {p.node_name for p in victims_pool if p.name in evicted}
    assert set(nominated.values()) == victim_nodes

    # A second attempt while the victims are still there evicts nothing more.
    retry(sched)
    await sched.run()
    assert len(deletes(api)) == 2
    assert api.binds() == []

    # The victims go: the gang binds, all of it, where it was nominated.
    for victim in victims_pool:
        if victim.name in evicted:
            sched.intake.on_pod_delete(victim.uid)
    retry(sched)
    await sched.run()
    assert dict(api.binds()) == nominated


async def test_room_held_for_a_nominated_gang_is_not_taken_by_a_lower_priority_pod(
    sched: Harness, api: FakeApi
) -> None:
    victims_pool = low_pods({"n1": 2})
    sched.list(nodes=[node("n1", cpu="2")], pods=[*victims_pool, *high_gang(2)])
    await sched.run()
    assert len(deletes(api)) == 2
    for victim in victims_pool:
        sched.intake.on_pod_delete(victim.uid)
    # A medium-priority pod arrives before the gang is tried again: it finds no room.
    sched.add(pod("medium", priority=50))
    sched.step(1)
    await sched.settle()
    assert ("medium", "n1") not in api.binds()
    retry(sched)
    await sched.run()
    assert sorted(name for name, _ in api.binds()) == ["hi-0", "hi-1"]


async def test_extra_members_beyond_the_minimum_never_cause_evictions(
    sched: Harness, api: FakeApi
) -> None:
    # min 1 of 3, NonStrict: one member fits without evicting, the two extra ones do not.
    members = [
        pod(p.name, annotations=dict(p.annotations), priority=HIGH)
        for p in gang("hi", 3, 1, mode="NonStrict")
    ]
    sched.list(nodes=[node("n1", cpu="2")], pods=[*low_pods({"n1": 1}), *members])
    await sched.run()
    assert deletes(api) == []
    assert len(api.binds()) == 1


async def test_policy_never_equal_priority_and_the_label_evict_nothing(
    make_scheduler: MakeScheduler,
) -> None:
    cases = {
        "never": (pod("p", priority=HIGH, preemption_policy="Never"), {}),
        "equal": (pod("p", priority=LOW), {}),
        "label": (
            pod("p", priority=HIGH),
            {"scheduling.koordinator.sh/disable-preemptible": "true"},
        ),
    }
    expected = {
        "never": "preemptionPolicy is Never",
        "equal": "preemption is not helpful: no pod of lower priority to evict",
        "label": "preemption is not helpful: the lower-priority pods there may not be evicted "
        "(label scheduling.koordinator.sh/disable-preemptible=true, DaemonSet or static pods)",
    }
    for case, (preemptor, labels) in cases.items():
        sched = make_scheduler()
        victim = bound(pod("low", priority=LOW, scheduler="other", labels=labels), "n1")
        sched.list(nodes=[node("n1", cpu="1")], pods=[victim, preemptor])
        await sched.run()
        assert deletes(sched.api) == [], case
        message = sched.api.conditions("p")[-1]["message"]
        assert message.endswith(expected[case]), (case, message)
        await sched.close()


async def test_a_gang_member_is_spared_for_a_lone_pod_of_the_same_priority(
    sched: Harness, api: FakeApi
) -> None:
    # n1 runs a member of a running gang (min = its size: evicting it breaks the gang);
    # n2 runs a lone pod of the same priority. One 1-cpu pod of high priority arrives.
    running = [
        bound(p, "n1" if p.name.endswith("0") else "n3")
        for p in (
            pod(q.name, annotations=dict(q.annotations), priority=LOW) for q in gang("run", 2, 2)
        )
    ]
    lone = bound(pod("lone", priority=LOW, scheduler="other"), "n2")
    sched.list(
        nodes=[node("n1", cpu="1"), node("n2", cpu="1"), node("n3", cpu="1")],
        pods=[*running, lone, pod("p", priority=HIGH)],
    )
    await sched.run()
    assert deletes(api) == ["lone"]


async def test_members_bind_as_soon_as_the_last_victim_is_gone(
    sched: Harness, api: FakeApi
) -> None:
    victims_pool = low_pods({"n1": 2})
    sched.list(nodes=[node("n1", cpu="2")], pods=[*victims_pool, *high_gang(2)])
    await sched.run()
    assert len(deletes(api)) == 2
    sched.intake.on_pod_delete(victims_pool[0].uid)
    await sched.run()
    assert api.binds() == []  # one victim is still there
    # No time passes: the members are not waiting out a backoff.
    sched.intake.on_pod_delete(victims_pool[1].uid)
    await sched.run()
    assert sorted(api.binds()) == [("hi-0", "n1"), ("hi-1", "n1")]


async def test_a_restarted_scheduler_holds_the_room_of_nominated_pods(
    sched: Harness, api: FakeApi
) -> None:
    # As listed after a restart: a pod nominated to n1, where a lower-priority pod is leaving.
    nominated = replace(pod("hi", priority=HIGH, cpu="2"), nominated_node_name="n1")
    sched.list(nodes=[node("n1", cpu="2")], pods=[nominated])
    # Before it is tried again, the room on n1 counts as taken.
    assert sched.cache.node_of(nominated.uid) == "n1"
    listed = sched.cache.pod(nominated.uid)
    assert listed is not None and sched.scheduler.pending.is_pending(listed)
    sched.add(pod("medium", priority=50, cpu="1"))
    sched.step(1)
    await sched.settle()
    assert ("medium", "n1") not in api.binds()


async def test_a_higher_priority_pod_takes_over_room_being_made_and_evicts_nothing_more(
    sched: Harness, api: FakeApi
) -> None:
    victims_pool = low_pods({"n1": 2})
    sched.list(
        nodes=[node("n1", cpu="2")], pods=[*victims_pool, pod("medium", priority=50, cpu="2")]
    )
    await sched.run()
    assert len(deletes(api)) == 2
    # Before the victims are gone, a pod of higher priority arrives: the victims already going
    # count as gone, the medium pod's nomination is taken over; nothing more is evicted.
    sched.add(pod("top", priority=HIGH, cpu="2"))
    await sched.run()
    assert len(deletes(api)) == 2
    assert status_patches(api, "top")[-1]["nominatedNodeName"] == "n1"
    assert status_patches(api, "medium")[-1]["nominatedNodeName"] is None
    for victim in victims_pool:
        sched.intake.on_pod_delete(victim.uid)
    await sched.run()
    assert api.binds() == [("top", "n1")]


SPINE = "network.topology.nvidia.com/spine"
TOPOLOGY = {
    "metadata": {"name": "default"},
    "spec": {
        "networkTopologySpec": [
            {"topologyLayer": "SpineLayer", "labelKey": [SPINE]},
            {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "SpineLayer"},
        ]
    },
}


async def test_a_must_gather_job_makes_room_inside_one_domain_only(
    sched: Harness, api: FakeApi
) -> None:
    # Two spines of two full nodes; the victims in s2 are cheaper (lower priority).
    nodes = [
        node("a1", cpu="2", labels={SPINE: "s1"}),
        node("a2", cpu="2", labels={SPINE: "s1"}),
        node("b1", cpu="2", labels={SPINE: "s2"}),
        node("b2", cpu="2", labels={SPINE: "s2"}),
    ]
    running = [
        bound(
            pod(f"{n.name}-low-{i}", priority=10 if n.name < "b" else 5, scheduler="other"), n.name
        )
        for n in nodes
        for i in range(2)
    ]
    rules = '{"gatherStrategy": [{"layer": "SpineLayer", "strategy": "MustGather"}]}'
    members = [
        pod(p.name, priority=HIGH, annotations={**p.annotations, NETWORK_TOPOLOGY_SPEC_KEY: rules})
        for p in gang("hi", 3, 3)
    ]
    sched.list(nodes=nodes, pods=[*running, *members])
    sched.intake.on_object("clusternetworktopologies.scheduling.koordinator.sh", "ADDED", TOPOLOGY)
    await sched.run()
    evicted = deletes(api)
    assert len(evicted) == 3
    assert all(name.startswith("b") for name in evicted), evicted
    for member in members:
        assert status_patches(api, member.name)[-1]["nominatedNodeName"] in ("b1", "b2")


def _marked_for(name: str, node_name: str, preemptor: str) -> Any:
    """A low-priority pod a preemption for ``preemptor`` marked before the scheduler died (its
    DisruptionTarget condition is there, its delete never came)."""
    body = pod_json(name, cpu="1", priority=LOW, scheduler="other")
    body["status"]["conditions"] = [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": (
                "koord-scheduler: preempting to accommodate higher priority pods, "
                f"preemptor: {preemptor}, triggerpod: ns/hi-0"
            ),
        }
    ]
    return bound(parse(body), node_name)


@pytest.mark.parametrize("marked_node", ["n1", "n2"])
async def test_a_restarted_scheduler_evicts_the_victims_already_marked_for_the_job(
    make_scheduler: MakeScheduler, api: FakeApi, marked_node: str
) -> None:
    # Two full nodes whose pods cost the same to evict: the pod needs one node's room; the
    # pods a preemption for it marked on one of them are the ones evicted, whichever it is.
    sched = make_scheduler()
    other = "n2" if marked_node == "n1" else "n1"
    marked = [_marked_for(f"low-{marked_node}-{i}", marked_node, "ns/hi-0") for i in range(2)]
    plain = low_pods({other: 2})
    sched.list(
        nodes=[node("n1", cpu="2"), node("n2", cpu="2")],
        pods=[*marked, *plain, pod("hi-0", cpu="2", priority=HIGH)],
    )
    await sched.run()
    assert sorted(deletes(api)) == sorted(p.name for p in marked)


def test_pods_marked_for_another_job_are_not_preferred() -> None:
    marked = _marked_for("low-x", "n1", "ns/someone-else")
    assert marked.preempted_by == "ns/someone-else"
    assert parse(pod_json("plain")).preempted_by == ""


def _sampling(sched: Harness, above: int) -> None:
    preemption = next(p for p in sched.framework.plugins if p.name == "Preemption")
    assert isinstance(preemption, Preemption)
    preemption._sample_above = above


async def test_on_many_candidate_nodes_a_share_of_them_is_looked_at_first(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    # Ten full nodes; the cheapest victims (priority 0) are on n9, the others run priority-5
    # pods. Looking at a share of 4 nodes at most (n0-n3, in name order), the room is made
    # there: a bounded look, not the cheapest of all.
    sched = make_scheduler()
    _sampling(sched, 4)
    names = [f"n{i}" for i in range(10)]
    pods = [
        bound(pod(f"low-{n}-{k}", cpu="1", priority=0 if n == "n9" else 5, scheduler="other"), n)
        for n in names
        for k in range(2)
    ]
    sched.list(
        nodes=[node(n, cpu="2") for n in names], pods=[*pods, pod("hi-0", cpu="2", priority=HIGH)]
    )
    await sched.run()
    evicted = deletes(api)
    assert len(evicted) == 2
    assert {name.rsplit("-", 1)[0].removeprefix("low-") for name in evicted} <= {
        "n0",
        "n1",
        "n2",
        "n3",
    }


async def test_when_the_share_cannot_make_room_every_candidate_is_looked_at(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    # A gang of 6 whole nodes cannot fit in a share of 4: all ten nodes are looked at.
    sched = make_scheduler()
    _sampling(sched, 4)
    names = [f"n{i}" for i in range(10)]
    pods = [
        bound(pod(f"low-{n}-{k}", cpu="1", priority=LOW, scheduler="other"), n)
        for n in names
        for k in range(2)
    ]
    members = [
        pod(p.name, cpu="2", annotations=dict(p.annotations), priority=HIGH)
        for p in gang("hi", 6, 6)
    ]
    sched.list(nodes=[node(n, cpu="2") for n in names], pods=[*pods, *members])
    await sched.run()
    assert len(deletes(api)) == 12
