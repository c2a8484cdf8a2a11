"""The what-if on a fork of a running scheduler: the answer, and nothing of the daemon changed."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

import pytest

from koordgang.model.dra import parse_resource_slice
from koordgang.model.pod import PodInfo
from koordgang.plugins.preemption import Preemption
from koordgang.testing.builders import (
    bound,
    device_class,
    gang,
    gang_annotations,
    node,
    parse,
    pod,
    pod_json,
    resource_slice,
    shared_gpu_json,
)
from koordgang.testing.harness import Harness
from koordgang.whatif.fork import (
    BIND,
    PENDING,
    PREEMPT,
    what_if,
)
from koordgang.whatif.inputs import WhatIfError, read_input
from koordgang.whatif.render import render_text


def _job(count: int, cpu: str, *, priority: int = 0, name: str = "train") -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: ns}}
spec:
  parallelism: {count}
  completions: {count}
  completionMode: Indexed
  template:
    metadata:
      annotations:
        gang.scheduling.koordinator.sh/name: {name}
        gang.scheduling.koordinator.sh/min-available: "{count}"
    spec:
      schedulerName: koord-scheduler
      priority: {priority}
      containers: [{{name: main, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def _ask(sched: Harness, text: str, *, held_known: bool = True) -> dict[str, Any]:
    return what_if(
        sched.settings,
        sched.daemon_state(),
        read_input(text, "koord-scheduler"),
        clock=sched.clock,
        wall=sched.clock.wall,
        held_known=held_known,
    )


def _daemon_view(sched: Harness) -> dict[str, Any]:
    """Everything a what-if must leave alone."""
    cache = sched.cache
    preemption = next(p for p in sched.framework.plugins if p.name == "Preemption")
    assert isinstance(preemption, Preemption)
    return {
        "pods": sorted((p.uid, p.resource_version) for p in cache.pods()),
        "assumed": sorted(p.uid for p in cache.pods() if cache.is_assumed(p.uid)),
        "usage": {n.name: (n.version, dict(n.requested), n.pod_count) for n in cache.nodes()},
        "changes": cache.change_position,
        "queue": sorted((e.pod.uid, e.state.value, e.attempts) for e in sched.queue.entries()),
        "gangs": sorted(
            (g.key, len(g.members), g.satisfied, g.timed_out, g.first_attempt, g.last_message)
            for g in sched.gangs.gangs()
        ),
        "waiting": sorted(w.pod.uid for w in sched.waiting),
        "nominations": sorted(n.pod.uid for n in sched.framework.nominations),
        "attempts": dict(preemption._attempts),
        "touched": sched.gangs.touched,
        "calls": len(sched.api.calls),
        "reports": sched.scheduler.reporter.backlog,
        "metrics": sched.scheduler.metrics.render(),
    }


async def test_a_gang_that_fits_gets_its_nodes(sched: Harness) -> None:
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="4")])
    answer = _ask(sched, _job(4, "2"))
    assert answer["fits"] is True
    [group] = answer["groups"]
    assert group["outcome"] == BIND
    assert group["gangs"] == ["ns/train"]
    assert sorted(group["placements"]) == [f"ns/train-{i}" for i in range(4)]
    assert sorted(group["placements"].values()) == ["n1", "n1", "n2", "n2"]


async def test_a_gang_that_does_not_fit_says_what_is_short(sched: Harness) -> None:
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="4")])
    answer = _ask(sched, _job(5, "2"))
    assert answer["fits"] is False
    [group] = answer["groups"]
    assert group["outcome"] == PENDING
    assert group["short"] == {"cpu": "2"}
    assert any("Insufficient cpu" in note for note in group["notes"])
    assert set(group["unplaced"]) == {f"ns/train-{i}" for i in range(5)}


async def test_preemption_names_its_victims_in_eviction_order(sched: Harness) -> None:
    low = [bound(p, "n1") for p in gang("low", 2, 2, cpu="2")]
    loner = bound(pod("loner", cpu="2"), "n2")
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="4")], pods=[*low, loner])
    await sched.run()
    before = _daemon_view(sched)
    answer = _ask(sched, _job(3, "2", priority=100))
    [group] = answer["groups"]
    assert group["outcome"] == PREEMPT
    # A lone pod goes before a member of a running gang.
    assert group["evict"][0]["pod"] == "ns/loner"
    assert set(group["nominated"]) == {f"ns/train-{i}" for i in range(3)}
    assert group["reservation"] is None
    assert _daemon_view(sched) == before


async def test_a_what_if_changes_nothing_in_the_daemon(sched: Harness) -> None:
    # A daemon with history: a bound gang, a gang held short (NonStrict), a pending pod.
    done = [bound(p, "n1") for p in gang("done", 2, 2)]
    nodes = [node("n1", cpu="4"), node("n2", cpu="4"), node("n3", cpu="4")]
    sched.list(nodes=nodes, pods=done)
    sched.add(*gang("short", 3, 3, mode="NonStrict", cpu="3"))
    sched.add(pod("plain", cpu="64"))
    await sched.run()
    assert len(sched.waiting) == 2
    before = _daemon_view(sched)
    for text in (_job(2, "1"), _job(9, "1"), _job(1, "1", name="short"), _job(2, "9", priority=9)):
        _ask(sched, text)
    assert _daemon_view(sched) == before


async def test_a_what_if_joining_a_gang_short_of_members_completes_it(sched: Harness) -> None:
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="4")])
    sched.add(*gang("short", 2, 3, mode="NonStrict"))
    await sched.run()
    third = f"""
apiVersion: v1
kind: Pod
metadata:
  name: short-2
  namespace: ns
  annotations: {gang_annotations("short", 3, mode="NonStrict")}
spec:
  schedulerName: koord-scheduler
  containers: [{{name: main, image: x, resources: {{requests: {{cpu: "1"}}}}}}]
"""
    answer = _ask(sched, third)
    [group] = answer["groups"]
    assert group["outcome"] == BIND
    assert group["pods"] == ["ns/short-2"]
    assert sorted(group["others"]) == ["ns/short-0", "ns/short-1"]
    assert sorted(group["placements"]) == ["ns/short-0", "ns/short-1", "ns/short-2"]


async def test_a_job_kept_out_by_busy_nodes_hears_what_the_starvation_guard_would_hold(
    sched: Harness,
) -> None:
    """Nothing to evict (the pods in the way have the job's priority): the answer says which
    nodes the guard would hold once the job has waited, and which pods there it waits for."""
    busy = [bound(pod(f"small-{n}", cpu="2"), n) for n in ("n1", "n2", "n3")]
    sched.list(nodes=[node(n, cpu="8") for n in ("n1", "n2", "n3")], pods=busy)
    answer = _ask(sched, _job(3, "8"))
    group = answer["groups"][0]
    assert group["outcome"] == PENDING
    reservation = group["reservation"]
    assert reservation["afterSeconds"] == sched.settings.reserve_after
    assert sorted(reservation["nominated"].values()) == ["n1", "n2", "n3"]
    assert sorted(b["pod"] for b in reservation["waitingFor"]) == [p.key for p in busy]
    assert "wait for 3 pod(s) there to finish; nothing is evicted" in reservation["notes"][0]
    # Asking changed nothing: no reservation is held by the daemon.
    assert len(sched.framework.nominations) == 0


DRA_JOB = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: pair, namespace: ns}
spec:
  spec:
    devices:
      requests:
        - {name: gpus, exactly: {deviceClassName: gpu, count: 2}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ns}
spec:
  parallelism: COUNT
  completions: COUNT
  template:
    metadata:
      annotations:
        gang.scheduling.koordinator.sh/name: train
        gang.scheduling.koordinator.sh/min-available: "COUNT"
    spec:
      schedulerName: koord-scheduler
      resourceClaims: [{name: gpus, resourceClaimTemplateName: pair}]
      containers: [{name: main, image: x, resources: {requests: {cpu: "1"}}}]
"""


async def test_a_what_if_shows_the_devices_each_member_would_get_and_changes_nothing(
    sched: Harness,
) -> None:
    sched.list(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8")],
        resource_slices=[resource_slice("n1", 2), resource_slice("n2", 2)],
        device_classes=[device_class()],
    )
    before = _daemon_view(sched)
    answer = _ask(sched, DRA_JOB.replace("COUNT", "2"))
    [group] = answer["groups"]
    assert group["outcome"] == BIND
    devices = group["devices"]
    assert sorted(devices) == ["ns/train-whatif-0", "ns/train-whatif-1"]
    given = [entry for found in devices.values() for entry in found]
    assert len(given) == len(set(given)) == 4
    for member, found in devices.items():
        node_name = group["placements"][member]
        assert all(
            entry.startswith(f"{node_name}: gpu.example.com/{node_name}/") for entry in found
        )
    # Devices for 2 members only: 3 would not fit, and it says which request is short.
    answer = _ask(sched, DRA_JOB.replace("COUNT", "3"))
    [group] = answer["groups"]
    assert group["outcome"] == PENDING
    assert any('request "gpus" wants 2 devices' in note for note in group["notes"]), group
    assert _daemon_view(sched) == before
    assert sched.scheduler.stores.dra.counts()["in_flight"] == 0


async def test_a_what_if_shows_shares_of_a_shared_gpu_and_what_is_left(sched: Harness) -> None:
    sched.list(
        nodes=[node("n1", cpu="8")],
        resource_slices=[parse_resource_slice(shared_gpu_json("n1"))],
        device_classes=[device_class()],
    )
    job = DRA_JOB.replace("count: 2}", "count: 1, capacity: {requests: {memory: 20Gi}}}")
    answer = _ask(sched, job.replace("COUNT", "4"))
    [group] = answer["groups"]
    assert group["outcome"] == BIND
    given = [entry for found in group["devices"].values() for entry in found]
    assert given == ["n1: gpu.example.com/n1/gpu-0 (share: memory 20Gi)"] * 4
    answer = _ask(sched, job.replace("COUNT", "5"))
    [group] = answer["groups"]
    assert group["outcome"] == PENDING
    assert any("device gpu-0 has 0 of memory left" in note for note in group["notes"]), group


async def test_a_what_if_refuses_a_template_it_was_not_given(sched: Harness) -> None:
    sched.list(nodes=[node("n1")])
    text = DRA_JOB.replace("COUNT", "1").split("---", 1)[1]
    with pytest.raises(WhatIfError, match="ResourceClaimTemplate ns/pair is not in the file"):
        _ask(sched, text)


async def test_from_the_api_server_it_says_that_held_room_is_not_known(sched: Harness) -> None:
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="4")])
    sched.add(*gang("short", 2, 3, mode="NonStrict"))
    await sched.run()
    # Another job: the daemon's answer knows what it holds; a listed state does not.
    assert _ask(sched, _job(2, "1"))["warnings"] == []
    [warning] = _ask(sched, _job(2, "1"), held_known=False)["warnings"]
    assert warning.startswith(
        "not known from the API server: the daemon may hold room for the pending members of "
        "ns/short (NonStrict, short of their minimum)"
    )


# -- ties: where the daemon may choose otherwise among equal choices ---------------------------


def _replica(
    name: str,
    owner: str,
    node_name: str,
    *,
    cpu: str = "2",
    priority: int = 0,
    start: str = "2024-01-01T00:00:00Z",
    conditions: list[dict[str, str]] | None = None,
    claim: str = "",
) -> PodInfo:
    """A running replica of ReplicaSet ``ns/<owner>``: its job, as preemption weighs it; with
    ``conditions`` on its status, and ``claim``, a ResourceClaim it holds."""
    body = pod_json(name, cpu=cpu, node_name=node_name, phase="Running", priority=priority)
    body["status"]["startTime"] = start
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "controller": True}
    ]
    if conditions:
        body["status"]["conditions"] = conditions
    if claim:
        body["spec"]["resourceClaims"] = [{"name": "claim", "resourceClaimName": claim}]
    return parse(body)


def _hostname(name: str, **labels: str) -> dict[str, str]:
    return {"kubernetes.io/hostname": name, **labels}


async def test_alike_nodes_the_placements_touch_are_a_tie(sched: Harness) -> None:
    # n1 and n2 are alike but for the hostname label; n3, smaller, is alike to none.
    sched.list(
        nodes=[
            node("n1", cpu="4", labels=_hostname("n1", zone="a")),
            node("n2", cpu="4", labels=_hostname("n2", zone="a")),
            node("n3", cpu="2", labels=_hostname("n3", zone="a")),
        ]
    )
    answer = _ask(sched, _job(5, "2"))
    [group] = answer["groups"]
    assert group["outcome"] == BIND
    assert sorted(group["placements"].values()) == ["n1", "n1", "n2", "n2", "n3"]
    assert group["ties"] == [
        "nodes n1, n2 are alike (capacity, labels, taints and free room): which of them takes "
        "which members is a tie; the counts per node hold, not which node has which"
    ]
    text = render_text(answer)
    assert "  ties:\n    nodes n1, n2 are alike" in text


async def test_an_alike_node_left_empty_is_still_a_tie(sched: Harness) -> None:
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="4")])
    [group] = _ask(sched, _job(1, "2"))["groups"]
    assert len(set(group["placements"].values())) == 1
    [tie] = group["ties"]
    assert tie.startswith("nodes n1, n2 are alike")


async def test_a_tie_of_many_nodes_names_the_one_placed_on_and_counts_the_rest(
    sched: Harness,
) -> None:
    sched.list(nodes=[node(f"n{i:02}", cpu="4") for i in range(12)])
    [group] = _ask(sched, _job(1, "2"))["groups"]
    [chosen] = group["placements"].values()
    [tie] = group["ties"]
    named = tie.removeprefix("nodes ").split(" and 4 more are alike")[0].split(", ")
    assert len(named) == 8 and chosen in named and named == sorted(named), tie


@pytest.mark.parametrize(
    "second",
    [
        pytest.param({"cpu": "8"}, id="capacity"),
        pytest.param({"cpu": "4", "labels": {"zone": "b"}}, id="label"),
    ],
)
async def test_nodes_that_differ_are_no_tie(sched: Harness, second: dict[str, Any]) -> None:
    sched.list(nodes=[node("n1", cpu="4", labels={"zone": "a"}), node("n2", **second)])
    [group] = _ask(sched, _job(4, "2"))["groups"]
    assert group["outcome"] == BIND
    assert set(group["placements"].values()) == {"n1", "n2"}
    assert group["ties"] == []


async def test_nodes_alike_but_for_their_pods_are_no_tie(sched: Harness) -> None:
    busy = bound(pod("busy", cpu="1"), "n1")
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="4")], pods=[busy])
    [group] = _ask(sched, _job(2, "1"))["groups"]
    assert group["outcome"] == BIND
    assert group["ties"] == []


def _keeping_apart(name: str, topology_key: str, *, preferred: bool) -> PodInfo:
    """A running pod whose anti-affinity term selects every pod of its namespace."""
    body = pod_json(name, cpu="1", node_name="", phase="Running")
    term = {"labelSelector": {}, "topologyKey": topology_key}
    anti = (
        {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": term}
            ]
        }
        if preferred
        else {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    )
    body["spec"]["affinity"] = {"podAntiAffinity": anti}
    return parse(body)


async def test_a_node_whose_pod_keeps_others_off_it_is_no_tie(sched: Harness) -> None:
    # Each node runs one pod asking for 1 cpu; the one on n1 keeps every pod of its namespace
    # off its node, so n1 refuses the member and n2 alone could take it.
    apart = bound(_keeping_apart("apart", "kubernetes.io/hostname", preferred=False), "n1")
    plain = bound(pod("plain", cpu="1"), "n2")
    sched.list(
        nodes=[
            node("n1", cpu="4", labels=_hostname("n1")),
            node("n2", cpu="4", labels=_hostname("n2")),
        ],
        pods=[apart, plain],
    )
    [group] = _ask(sched, _job(1, "1"))["groups"]
    assert group["outcome"] == BIND
    assert list(group["placements"].values()) == ["n2"]
    assert group["ties"] == []


async def test_a_term_of_a_domain_both_nodes_share_leaves_them_alike(sched: Harness) -> None:
    # As above, but the term, preferred, is keyed on the zone both nodes are in: it weighs
    # alike on both, so which of them takes the member is still a tie.
    apart = bound(_keeping_apart("apart", "zone", preferred=True), "n1")
    plain = bound(pod("plain", cpu="1"), "n2")
    sched.list(
        nodes=[
            node("n1", cpu="4", labels=_hostname("n1", zone="a")),
            node("n2", cpu="4", labels=_hostname("n2", zone="a")),
        ],
        pods=[apart, plain],
    )
    [group] = _ask(sched, _job(1, "1"))["groups"]
    assert group["outcome"] == BIND
    [tie] = group["ties"]
    assert tie.startswith("nodes n1, n2 are alike")


async def test_one_of_two_alike_replicas_evicted_is_a_victim_tie(sched: Harness) -> None:
    replicas = [_replica(f"web-{i}", "web", "n1") for i in range(2)]
    sched.list(nodes=[node("n1", cpu="4")], pods=replicas)
    await sched.run()
    answer = _ask(sched, _job(1, "2", priority=100))
    [group] = answer["groups"]
    assert group["outcome"] == PREEMPT
    [victim] = group["evict"]
    assert victim["job"] == "ns/web"
    assert group["ties"] == [
        "victims: which of the alike pods of ns/web on n1 (priority 0) goes is a tie: 1 of 2"
    ]
    assert "  ties:\n    victims: which of the alike pods" in render_text(answer)


async def test_a_replica_marked_for_the_job_already_is_no_tie(sched: Harness) -> None:
    # An earlier attempt for ns/train marked web-1 (its eviction was refused, say): the
    # daemon takes a marked pod first, so which replica goes is decided.
    target = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "koord-scheduler: preemptor: ns/train",
    }
    replicas = [
        _replica("web-0", "web", "n1"),
        _replica("web-1", "web", "n1", conditions=[target]),
    ]
    sched.list(nodes=[node("n1", cpu="4")], pods=replicas)
    await sched.run()
    [group] = _ask(sched, _job(1, "2", priority=100))["groups"]
    assert group["outcome"] == PREEMPT
    assert [v["pod"] for v in group["evict"]] == ["ns/web-1"]
    assert group["ties"] == []


async def test_replicas_holding_claims_are_no_victim_tie(sched: Harness) -> None:
    # Each replica holds a claim of its own: what it frees besides its requests differs, so
    # the dry run may prefer one, and the answer does not call the choice a tie.
    replicas = [_replica(f"web-{i}", "web", "n1", claim=f"web-{i}-gpu") for i in range(2)]
    sched.list(nodes=[node("n1", cpu="4")], pods=replicas)
    await sched.run()
    [group] = _ask(sched, _job(1, "2", priority=100))["groups"]
    assert group["outcome"] == PREEMPT
    assert len(group["evict"]) == 1
    assert group["ties"] == []


async def test_a_victim_without_an_alike_pod_is_no_tie(sched: Harness) -> None:
    # Another replica of the same job, but on another node: no choice between them here.
    solo = [_replica("web-0", "web", "n1", cpu="4"), _replica("web-1", "web", "n2", cpu="4")]
    sched.list(nodes=[node("n1", cpu="4"), node("n2", cpu="8")], pods=solo)
    await sched.run()
    [group] = _ask(sched, _job(1, "8", priority=100))["groups"]
    assert group["outcome"] == PREEMPT
    assert [(v["pod"], v["node"]) for v in group["evict"]] == [("ns/web-1", "n2")]
    assert group["ties"] == []


@pytest.mark.parametrize(
    ("owner", "priority"),
    [pytest.param("web", 50, id="other-priority"), pytest.param("db", 0, id="other-job")],
)
async def test_a_victim_beside_pods_not_alike_is_no_tie(
    sched: Harness, owner: str, priority: int
) -> None:
    # Beside the victim, two pods that differ from it in priority or job: too small to make
    # the room, they stay, and were no alike choice.
    pods = [
        _replica("web-0", "web", "n1", cpu="4"),
        _replica("keep-0", owner, "n1", cpu="1", priority=priority),
        _replica("keep-1", owner, "n1", cpu="1", priority=priority),
    ]
    sched.list(nodes=[node("n1", cpu="6")], pods=pods)
    await sched.run()
    [group] = _ask(sched, _job(1, "4", priority=100))["groups"]
    assert group["outcome"] == PREEMPT
    assert [v["pod"] for v in group["evict"]] == ["ns/web-0"]
    assert group["ties"] == []


async def test_alike_replicas_started_apart_are_no_tie(sched: Harness) -> None:
    # The most recently started goes first: the order decides, and the answer says which.
    replicas = [
        _replica("web-old", "web", "n1", start="2024-01-01T00:00:00Z"),
        _replica("web-new", "web", "n1", start="2024-06-01T00:00:00Z"),
    ]
    sched.list(nodes=[node("n1", cpu="4")], pods=replicas)
    await sched.run()
    [group] = _ask(sched, _job(1, "2", priority=100))["groups"]
    assert [v["pod"] for v in group["evict"]] == ["ns/web-new"]
    assert group["ties"] == []


async def test_alike_nodes_are_no_tie_for_members_that_name_a_node(sched: Harness) -> None:
    sched.list(
        nodes=[
            node("n1", cpu="4", labels=_hostname("n1")),
            node("n2", cpu="4", labels=_hostname("n2")),
        ]
    )
    job = _job(1, "2").replace(
        "schedulerName: koord-scheduler",
        "schedulerName: koord-scheduler\n      nodeSelector: {kubernetes.io/hostname: n1}",
    )
    [group] = _ask(sched, job)["groups"]
    assert list(group["placements"].values()) == ["n1"]
    assert group["ties"] == []


async def test_every_answer_has_ties(sched: Harness) -> None:
    sched.list(nodes=[node("n1", cpu="4")])
    gated = """
apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: ns}
spec:
  schedulerName: koord-scheduler
  schedulingGates: [{name: example.com/later}]
  containers: [{name: main, image: x}]
"""
    for text in (gated, _job(5, "2")):
        [group] = _ask(sched, text)["groups"]
        assert group["ties"] == []


TIMED_POD = """
apiVersion: v1
kind: Pod
metadata: {name: w, namespace: ns}
spec:
  schedulerName: koord-scheduler
  activeDeadlineSeconds: 60
  containers: [{name: main, image: x, resources: {requests: {cpu: "2"}}}]
"""


async def test_a_what_if_says_when_a_job_waiting_for_room_would_start(sched: Harness) -> None:
    """The pods on its node end by their time limits: the answer says when the file's pod
    would start, as the daemon would tell it."""
    wall = sched.clock.wall()
    holder = replace(
        bound(pod("r", cpu="4"), "n1"),
        phase="Running",
        start_time=wall,
        active_deadline_seconds=600,
    )
    sched.list(nodes=[node("n1", cpu="4")], pods=[holder])
    await sched.run()
    [group] = _ask(sched, TIMED_POD)["groups"]
    assert group["outcome"] == PENDING
    clock = time.strftime("%H:%M UTC", time.gmtime(math.ceil((wall + 600 + 30 + 10) / 60) * 60))
    assert any(
        f"expected to start by {clock} (an estimate): 1 pod on n1 reaches its time limit" in note
        for note in group["notes"]
    ), group["notes"]


async def test_a_what_if_plans_its_job_behind_the_jobs_the_daemon_has_waiting(
    sched: Harness,
) -> None:
    """The daemon has a more important job waiting for n1 (it runs 1000 s once there): the
    file's pod starts after it, not when n1's pod ends."""
    wall = sched.clock.wall()
    holder = replace(
        bound(pod("r", cpu="4"), "n1"),
        phase="Running",
        start_time=wall,
        active_deadline_seconds=600,
    )
    ahead = replace(
        pod("first", cpu="4", priority=10, preemption_policy="Never"), active_deadline_seconds=1000
    )
    sched.list(nodes=[node("n1", cpu="4")], pods=[holder, ahead])
    await sched.run()
    [group] = _ask(sched, TIMED_POD.replace('cpu: "2"', 'cpu: "4"'))["groups"]
    after = wall + 600 + 40 + 1000 + 40
    clock = time.strftime("%H:%M UTC", time.gmtime(math.ceil(after / 60) * 60))
    assert any(f"expected to start by {clock}" in note for note in group["notes"]), group["notes"]
