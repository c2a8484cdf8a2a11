"""Correctness after a scenario, from the API server's final state: no gang bound below its
minimum, no node holding more than it can. A pod's gang is taken from the workload (which pods
make each gang), not from the pod: each gang API names it differently."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench.cluster import BenchCluster
from bench.workload import CompositePlan
from harness.invariants import overcommitted


def bound_per_gang(
    pods: Iterable[Mapping[str, Any]], members: Mapping[str, Sequence[str]]
) -> Counter[str]:
    """Bound pods per gang, ``members`` being each gang's pod names."""
    gang_of = {pod: gang for gang, names in members.items() for pod in names}
    counts: Counter[str] = Counter()
    for pod in pods:
        gang = gang_of.get((pod.get("metadata") or {}).get("name", ""))
        if gang and (pod.get("spec") or {}).get("nodeName"):
            counts[gang] += 1
    return counts


def partial_gangs(bound: Mapping[str, int], gangs: Mapping[str, int]) -> dict[str, str]:
    """Gangs with some members bound but fewer than their minimum: ``name -> "3/8"``."""
    return {
        name: f"{bound[name]}/{minimum}"
        for name, minimum in gangs.items()
        if 0 < bound.get(name, 0) < minimum
    }


def composite_problems(
    pods: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, Any]],
    members: Mapping[str, Sequence[str]],
    composites: Sequence[CompositePlan],
) -> list[str]:
    """Gangs of gangs as their CompositePodGroup asks: at least ``min_groups`` children bound
    whole, all of them on nodes of one ``key`` value, each child on one ``child_key`` value."""
    labels = {
        (n.get("metadata") or {}).get("name", ""): (n.get("metadata") or {}).get("labels") or {}
        for n in nodes
    }
    node_of = {
        (p.get("metadata") or {}).get("name", ""): (p.get("spec") or {}).get("nodeName") or ""
        for p in pods
    }
    problems = []
    for plan in composites:
        whole = []
        outer: set[str] = set()
        for child in plan.children:
            placed = [node_of.get(name, "") for name in members.get(child, ())]
            bound = [n for n in placed if n]
            if not bound:
                continue
            if len(bound) == len(placed):
                whole.append(child)
            if plan.child_key:
                values = {labels.get(n, {}).get(plan.child_key, "") for n in bound}
                if len(values) > 1:
                    problems.append(f"{child} spans {plan.child_key} {sorted(values)}")
            if plan.key:
                outer |= {labels.get(n, {}).get(plan.key, "") for n in bound}
        if whole and len(whole) < plan.min_groups:
            problems.append(f"{plan.name}: {len(whole)} children whole, min {plan.min_groups}")
        if len(outer) > 1:
            problems.append(f"{plan.name} spans {plan.key} {sorted(outer)}")
    return problems


async def check_cluster(
    cluster: BenchCluster,
    namespace: str,
    members: Mapping[str, Sequence[str]],
    gangs: Mapping[str, int],
    composites: Sequence[CompositePlan] = (),
) -> tuple[list[str], list[dict[str, Any]]]:
    """Problems found (empty when all is well), and the namespace's pods as they ended."""
    ours, _ = await cluster.list_all(f"/api/v1/namespaces/{namespace}/pods")
    everything, _ = await cluster.list_all("/api/v1/pods")
    nodes, _ = await cluster.list_all("/api/v1/nodes")
    problems: list[str] = []
    partial = partial_gangs(bound_per_gang(ours, members), gangs)
    if partial:
        sample = ", ".join(f"{k} {v}" for k, v in sorted(partial.items())[:10])
        problems.append(f"{len(partial)} gangs partially bound (bound/min): {sample}")
    problems += composite_problems(ours, nodes, members, composites)
    over = overcommitted(nodes, everything)
    if over:
        sample = ", ".join(f"{k} {v}" for k, v in sorted(over.items())[:10])
        problems.append(f"{len(over)} nodes over-committed: {sample}")
    return problems, ours
