"""The start plan against a reference written here by brute force, sharing no code with it, on
small random clusters: every moment room grows is tried, every node looked at over every
moment of the job's run.

For jobs whose members are alike the plan is exact: the reference, given the runs the plan
made for the jobs ahead, finds the same start. For unlike members (first fit, largest first)
it may be later than an exhaustive search of where each member goes, never earlier. Every
start is possible: the members fit where the plan put them at every moment of their run.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import pytest

from koordgang.model.resources import Resources
from koordgang.state.start_plan import Estimate, Holder, Waiter, plan_starts

INF = float("inf")
KINDS = ("cpu", "memory")


@dataclass
class Use:
    node: str
    amount: dict[str, int]
    start: float
    end: float


def ends_at(job: Waiter, start: float) -> float:
    end = INF if job.runs_for is None else start + job.runs_for
    if job.ends_by is not None:
        end = max(start, min(end, job.ends_by))
    return end


class Reference:
    """Room over time, by brute force: what is free on a node at a moment is its allocatable
    less every pod still there and every planned use covering the moment."""

    def __init__(self, now: float, nodes: dict[str, dict[str, int]], pods: list[Holder]) -> None:
        self.now = now
        self.nodes = nodes
        self.uses = [
            Use(pod.node, dict(pod.requests.items()), now, INF if pod.free_by is None else until)
            for pod in pods
            for until in (pod.free_by or 0.0,)
            if pod.free_by is None or pod.free_by > now
        ]

    def free(self, node: str, moment: float) -> dict[str, int]:
        room = dict(self.nodes[node])
        for use in self.uses:
            if use.node == node and use.start <= moment < use.end:
                for kind, amount in use.amount.items():
                    room[kind] = room.get(kind, 0) - amount
        return room

    def moments(self) -> list[float]:
        found = {self.now}
        for use in self.uses:
            found.update(t for t in (use.start, use.end) if self.now <= t < INF)
        return sorted(found)

    def least_free(self, node: str, start: float, end: float) -> dict[str, int]:
        """Resource by resource, the least free at any moment of [start, end)."""
        inside = [start] + [t for t in self.moments() if start < t < end]
        lows: dict[str, int] = {}
        for moment in inside:
            for kind, amount in self.free(node, moment).items():
                lows[kind] = min(lows.get(kind, amount), amount)
        return lows

    def fits_everywhere(self, node: str, amount: dict[str, int], start: float, end: float) -> bool:
        inside = [start] + [t for t in self.moments() if start < t < end]
        return all(
            self.free(node, moment).get(kind, 0) >= need
            for moment in inside
            for kind, need in amount.items()
            if need  # a resource not asked for may be over-committed
        )

    def earliest(self, job: Waiter, names: list[str]) -> float | None:
        """The first moment some assignment of every member to a node fits (exhaustive)."""
        members = [dict(m.items()) for m in job.members]
        allowed = job.member_nodes or (None,) * len(members)
        for moment in self.moments():
            end = ends_at(job, moment)
            rooms = {n: self.least_free(n, moment, end) for n in names}
            for choice in itertools.product(names, repeat=len(members)):
                if any(a is not None and n not in a for n, a in zip(choice, allowed, strict=True)):
                    continue
                left = {n: dict(room) for n, room in rooms.items()}
                ok = True
                for node, member in zip(choice, members, strict=True):
                    for kind, need in member.items():
                        left[node][kind] = left[node].get(kind, 0) - need
                        ok = ok and left[node][kind] >= 0
                if ok:
                    return moment
        return None

    def take(self, job: Waiter, estimate: Estimate) -> None:
        """The plan's placement of a job whose members are alike becomes a use."""
        assert estimate.start is not None
        member = dict(job.members[0].items())
        end = ends_at(job, estimate.start)
        for node, count in estimate.nodes.items():
            amount = {kind: need * count for kind, need in member.items()}
            assert self.fits_everywhere(node, amount, estimate.start, end), (job.key, node)
            self.uses.append(Use(node, amount, estimate.start, end))


def random_cluster(rng: random.Random) -> tuple[dict[str, dict[str, int]], list[Holder]]:
    nodes = {
        f"n{i}": {"cpu": rng.choice((4, 8)), "memory": rng.choice((8, 16))}
        for i in range(rng.randint(1, 4))
    }
    pods = []
    for name, room in nodes.items():
        for j in range(rng.randint(0, 4)):
            free_by = None if rng.random() < 0.15 else float(rng.choice(range(-10, 120, 10)))
            amount = {"cpu": rng.randint(1, room["cpu"] // 2), "memory": rng.randint(0, 6)}
            pods.append(Holder(f"{name}-p{j}", name, Resources(amount), free_by))
    return nodes, pods


def random_job(
    rng: random.Random, key: str, names: list[str], *, alike: bool, count: int
) -> Waiter:
    def member() -> Resources:
        return Resources({"cpu": rng.randint(1, 4), "memory": rng.randint(0, 8)})

    first = member()
    members = tuple(first if alike else member() for _ in range(count))
    runs_for = None if rng.random() < 0.1 else float(rng.choice((5, 10, 20, 35, 60)))
    ends_by = float(rng.choice((30, 55, 90))) if rng.random() < 0.2 else None
    nodes = frozenset(rng.sample(names, rng.randint(1, len(names)))) if rng.random() < 0.3 else None
    member_nodes: tuple[frozenset[str] | None, ...] = ()
    if not alike and rng.random() < 0.4:
        member_nodes = tuple(
            frozenset(rng.sample(names, rng.randint(1, len(names)))) for _ in members
        )
    return Waiter(key, members, runs_for, nodes, ends_by, member_nodes)


def resources(nodes: dict[str, dict[str, int]]) -> dict[str, Resources]:
    return {name: Resources(room) for name, room in nodes.items()}


@pytest.mark.parametrize("seed", range(300))
def test_jobs_of_like_members_start_when_the_reference_says(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods = random_cluster(rng)
    names = sorted(nodes)
    queue = [
        random_job(rng, f"j{k}", names, alike=True, count=rng.randint(1, 3))
        for k in range(rng.randint(1, 5))
    ]
    estimates = plan_starts(0.0, resources(nodes), pods, queue)
    reference = Reference(0.0, nodes, pods)
    for job, estimate in zip(queue, estimates, strict=True):
        usable = [n for n in names if job.nodes is None or n in job.nodes]
        assert estimate.start == reference.earliest(job, usable), (seed, job, estimate)
        if estimate.start is not None:
            assert sum(estimate.nodes.values()) == len(job.members)
            assert set(estimate.nodes) <= set(usable)
            reference.take(job, estimate)


@pytest.mark.parametrize("seed", range(150))
def test_a_job_of_unlike_members_starts_no_earlier_than_possible(seed: int) -> None:
    rng = random.Random(1000 + seed)
    nodes, pods = random_cluster(rng)
    names = sorted(nodes)
    job = random_job(rng, "j", names, alike=False, count=rng.randint(2, 3))
    [estimate] = plan_starts(0.0, resources(nodes), pods, [job])
    usable = [n for n in names if job.nodes is None or n in job.nodes]
    earliest = Reference(0.0, nodes, pods).earliest(job, usable)
    if estimate.start is None:
        return
    assert earliest is not None and estimate.start >= earliest, (seed, job, estimate)
    # Some assignment of the members to the nodes the plan named fits at every moment.
    reference = Reference(0.0, nodes, pods)
    end = ends_at(job, estimate.start)
    allowed = job.member_nodes or (None,) * len(job.members)
    slots = [n for n, c in estimate.nodes.items() for _ in range(c)]

    def on(node: str, order: tuple[str, ...]) -> dict[str, int]:
        pairs = list(zip(job.members, order, strict=True))
        return {kind: sum(m.get(kind) for m, n in pairs if n == node) for kind in KINDS}

    assert any(
        all(a is None or n in a for n, a in zip(order, allowed, strict=True))
        and all(
            reference.fits_everywhere(node, on(node, order), estimate.start, end)
            for node in set(order)
        )
        for order in set(itertools.permutations(slots))
    ), (seed, job, estimate)
