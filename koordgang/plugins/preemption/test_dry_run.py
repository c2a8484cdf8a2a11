"""The dry run and the cost model on hand-built snapshots: fewest and cheapest victims, the
reprieve keeps only what is needed, running gangs and budgets are spared, nothing leaks into
the snapshot it was given."""

from __future__ import annotations

from typing import Any

from koordgang.framework.jobs import Budget, JobRef
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.preemption.dry_run import plan_room
from koordgang.plugins.preemption.victims import (
    DISABLE_PREEMPTIBLE_LABEL,
    Cost,
    CostModel,
    not_a_victim,
)
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.snapshot import Snapshot


def node(name: str, cpu: str = "4") -> NodeInfo:
    return parse_node(
        {
            "metadata": {"name": name},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def pod(
    name: str,
    node_name: str = "",
    *,
    cpu: str = "1",
    priority: int = 0,
    labels: dict[str, str] | None = None,
    start: str = "2024-01-01T00:00:00Z",
) -> PodInfo:
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels or {}},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending", "startTime": start},
        }
    )


def world(nodes: list[NodeInfo], pods: list[PodInfo]) -> tuple[SchedulerCache, Any]:
    cache = SchedulerCache()
    cache.replace_nodes(nodes)
    cache.replace_pods(pods)
    framework = default_framework(Settings(), GangRegistry(600.0, resolve=Resolve(GANG_APIS)))
    return cache, framework.placer


def eligible(snapshot: Snapshot, model: CostModel, below: int) -> dict[str, list[PodInfo]]:
    found: dict[str, list[PodInfo]] = {}
    for state in snapshot.nodes:
        pods = [p for p in snapshot.pods_on(state) if not not_a_victim(p, below)]
        if pods:
            found[state.name] = sorted(pods, key=model.eviction_order)
    return found


def run(
    nodes: list[NodeInfo],
    pods: list[PodInfo],
    members: list[PodInfo],
    model: CostModel | None = None,
) -> Any:
    cache, placer = world(nodes, pods)
    snapshot = Snapshot(cache)
    model = model or CostModel(lambda pod: None)
    below = min(m.priority for m in members)
    result = plan_room(
        members,
        snapshot,
        placer,
        model,
        [n.name for n in snapshot.nodes],
        eligible(snapshot, model, below),
        lambda p: p.is_terminating,
    )
    # The snapshot it was given is untouched: the dry run works on a fork.
    assert snapshot.placements == [] and snapshot.removals == []
    return result


def test_the_reprieve_keeps_only_the_victims_needed() -> None:
    # One node of 4 cpu with four 1-cpu pods; a 1-cpu pod needs one victim, not four.
    low = [pod(f"low-{i}", "n1", priority=0) for i in range(4)]
    result = run([node("n1")], low, [pod("hi", priority=10)])
    assert len(result.victims) == 1
    assert result.nominations == {"hi": "n1"}


def test_lower_priorities_go_first_and_the_minimum_count_is_evicted() -> None:
    pods = [
        pod("mid", "n1", cpu="2", priority=5),
        pod("low", "n1", cpu="2", priority=1),
        pod("other-mid", "n2", cpu="2", priority=5),
        pod("other-mid2", "n2", cpu="2", priority=5),
    ]
    result = run([node("n1"), node("n2")], pods, [pod("hi", cpu="2", priority=10)])
    assert [p.pod.name for p in result.victims] == ["low"]
    assert result.nominations == {"hi": "n1"}


def test_one_larger_victim_is_taken_over_two_smaller_ones_that_came_first() -> None:
    # One priority: most recently started first puts the two 1-cpu pods before the 2-cpu one,
    # and their prefix makes the room; the 2-cpu pod alone makes it with one victim fewer.
    pods = [
        pod("small-a", "n1", priority=0, start="2024-06-01T00:00:00Z"),
        pod("small-b", "n1", priority=0, start="2024-05-01T00:00:00Z"),
        pod("mid", "n1", cpu="2", priority=0, start="2024-01-01T00:00:00Z"),
    ]
    result = run([node("n1")], pods, [pod("hi", cpu="2", priority=10)])
    assert [p.pod.name for p in result.victims] == ["mid"]
    assert result.nominations == {"hi": "n1"}


def test_a_member_of_a_job_disrupted_whole_is_not_taken_alone() -> None:
    # As above, but the 2-cpu pod belongs to a job disrupted whole (four members running):
    # taking it means taking all four, which its cost alone does not show.
    pods = [
        pod("small-a", "n1", priority=0, start="2024-06-01T00:00:00Z"),
        pod("small-b", "n1", priority=0, start="2024-05-01T00:00:00Z"),
        pod("w-0", "n1", cpu="2", priority=0, start="2024-01-01T00:00:00Z"),
    ]

    def job_of(p: PodInfo) -> JobRef | None:
        return JobRef("ns/w", running=4, whole=True) if p.name.startswith("w-") else None

    result = run([node("n1")], pods, [pod("hi", cpu="2", priority=10)], CostModel(job_of))
    assert sorted(p.pod.name for p in result.victims) == ["small-a", "small-b"]


def test_a_gang_member_alone_is_not_taken_over_lone_pods_that_make_the_room() -> None:
    # On each node two 1-cpu lone pods and a 2-cpu member of a running gang of 3 (minimum 2).
    # One member alone per node looks cheaper than two lone pods, but taking it on two nodes
    # breaks the gang: one member may go, not two.
    pods = [
        pod(name, f"n{n}", cpu=cpu)
        for n in range(3)
        for name, cpu in ((f"lone-{n}-a", "1"), (f"lone-{n}-b", "1"), (f"g-{n}", "2"))
    ]

    def job_of(p: PodInfo) -> JobRef | None:
        return JobRef("ns/g", minimum=2, running=3) if p.name.startswith("g-") else None

    members = [pod(f"hi-{i}", cpu="2", priority=10) for i in range(2)]
    result = run([node(f"n{n}") for n in range(3)], pods, members, CostModel(job_of))
    assert len([p for p in result.victims if p.pod.name.startswith("g-")]) <= 1
    assert result.cost.gangs_broken == 0
    assert set(result.nominations) == {"hi-0", "hi-1"}


def test_a_job_of_members_on_full_nodes_evicts_exactly_what_it_needs() -> None:
    pods = [pod(f"low-{n}-{i}", f"n{n}", priority=0) for n in range(4) for i in range(4)]
    members = [pod(f"hi-{i}", cpu="2", priority=10) for i in range(3)]
    result = run([node(f"n{n}") for n in range(4)], pods, members)
    assert len(result.victims) == 6
    assert set(result.nominations) == {"hi-0", "hi-1", "hi-2"}
    # Room per node for what was nominated there.
    per_node: dict[str, int] = {}
    for placement in result.victims:
        per_node[placement.node_name] = per_node.get(placement.node_name, 0) + 1
    for name in set(result.nominations.values()):
        assert per_node[name] == 2 * list(result.nominations.values()).count(name)


def test_a_member_of_a_running_gang_is_spared_for_a_lone_pod() -> None:
    pods = [pod("gang-0", "n1", priority=0), pod("lone", "n2", priority=0)]

    def job_of(p: PodInfo) -> JobRef | None:
        return JobRef("ns/gang", minimum=2, running=2) if p.name.startswith("gang") else None

    result = run(
        [node("n1", cpu="1"), node("n2", cpu="1")],
        pods,
        [pod("hi", priority=10)],
        CostModel(job_of),
    )
    assert [p.pod.name for p in result.victims] == ["lone"]


def test_a_pod_covered_by_an_exhausted_budget_is_spared() -> None:
    pods = [pod("guarded", "n1", priority=0), pod("free", "n2", priority=0)]

    def budgets_of(p: PodInfo) -> list[Budget]:
        return [Budget("ns/pdb", 0)] if p.name == "guarded" else []

    result = run(
        [node("n1", cpu="1"), node("n2", cpu="1")],
        pods,
        [pod("hi", priority=10)],
        CostModel(lambda p: None, budgets_of),
    )
    assert [p.pod.name for p in result.victims] == ["free"]


def test_no_room_even_without_victims_says_why() -> None:
    result = run([node("n1", cpu="1")], [pod("low", "n1")], [pod("hi", cpu="8", priority=10)])
    assert result.failure == "1 Insufficient cpu"
    assert result.victims == []


def test_who_may_not_be_a_victim() -> None:
    assert not_a_victim(pod("same", "n1", priority=10), 10) == "priority not lower"
    guarded = pod("g", "n1", labels={DISABLE_PREEMPTIBLE_LABEL: "true"})
    assert not_a_victim(guarded, 10) == "preemption disabled by label"
    assert not_a_victim(pod("ok", "n1"), 10) == ""


def test_costs_compare_gangs_then_budgets_then_priorities_then_counts() -> None:
    assert Cost(gangs_broken=0, pods=9) < Cost(gangs_broken=1, pods=1)
    assert Cost(budget_violations=0, top_priority=9) < Cost(budget_violations=1)
    assert Cost(top_priority=1, pods=5) < Cost(top_priority=2, pods=1)
    assert Cost(top_priority=1, priority_sum=2, pods=2) < Cost(top_priority=1, priority_sum=3)
    model = CostModel(lambda p: None)
    recent = pod("recent", "n1", start="2024-06-01T00:00:00Z")
    old = pod("old", "n1", start="2024-01-01T00:00:00Z")
    assert model.cost([recent]) < model.cost([old])
