"""The heaps of NodeIndex against a brute-force scorer, over random what-if sequences.

Exact means: the node the index returns scores the brute-force maximum over the feasible nodes
of the same view (ties may go to any of the tied nodes), and the index finds nothing exactly
when nothing fits. Sequences mix what makes a heap go stale in either direction: pods added and
removed in the cache between cycles (usage up and down), placements and removals (victims) in a
snapshot, forks that are committed or dropped, and searches limited to a subset of nodes.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.runner import PodRunner
from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.nodeaffinity import NodeAffinity
from koordgang.plugins.noderesources import Fit, ResourceScore
from koordgang.plugins.tainttoleration import TaintToleration
from koordgang.settings import ScoreStrategy
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot

CPUS = ("2", "4", "8")
MEMORIES = ("4Gi", "8Gi", "16Gi")
POD_CPUS = ("100m", "500m", "1", "2", "3")
POD_MEMORIES = ("256Mi", "1Gi", "2Gi", "6Gi")
ZONES = ("a", "b", "c")


def node(index: int, rng: random.Random) -> NodeInfo:
    taints = [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}] if rng.random() < 0.15 else []
    return parse_node(
        {
            "metadata": {"name": f"n{index:02}", "labels": {"zone": rng.choice(ZONES)}},
            "spec": {"taints": taints},
            "status": {
                "allocatable": {
                    "cpu": rng.choice(CPUS),
                    "memory": rng.choice(MEMORIES),
                    "pods": str(rng.choice((3, 5, 110))),
                },
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def pod(name: str, rng: random.Random, node_name: str = "") -> PodInfo:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "resources": {
                    "requests": {"cpu": rng.choice(POD_CPUS), "memory": rng.choice(POD_MEMORIES)}
                },
            }
        ]
    }
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"zone": rng.choice(ZONES)}
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "p", "uid": f"uid-{name}"},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"},
        }
    )


def runner(strategy: ScoreStrategy, seed: int) -> PodRunner:
    return PodRunner(
        filters=[NodeAffinity(), TaintToleration(), Fit()],
        scores=[ResourceScore(strategy)],
        rng=random.Random(seed),
    )


def brute_force(
    run: PodRunner, target: PodInfo, view: Snapshot, within: frozenset[str] | None
) -> dict[str, int]:
    """Every feasible node of ``view`` and its score, straight from the plugins."""
    state = CycleState()
    scores: dict[str, int] = {}
    verdict = run.static_verdict(target, view)
    for candidate in view.nodes:
        if within is not None and candidate.name not in within:
            continue
        if any(not f.filter(state, target, candidate, view).is_success for f in run.static_filters):
            continue
        if any(not f.filter(state, target, candidate, view).is_success for f in run.node_filters):
            continue
        total = verdict.scores.get(candidate.name, 0)
        for scorer in run.node_scores:
            total += scorer.weight * scorer.score(state, target, candidate, view)
        scores[candidate.name] = total
    return scores


class Trial:
    def __init__(self, seed: int, strategy: ScoreStrategy) -> None:
        self.rng = random.Random(seed)
        self.run = runner(strategy, seed)
        self.cache = SchedulerCache()
        for index in range(self.rng.randint(4, 14)):
            self.cache.upsert_node(node(index, self.rng))
        self.names = [n.name for n in self.cache.nodes()]
        self.counter = 0
        self.checks = 0
        for _ in range(self.rng.randint(0, 10)):
            self.cache.upsert_pod(pod(self.fresh(), self.rng, self.rng.choice(self.names)))

    def fresh(self) -> str:
        self.counter += 1
        return f"p{self.counter}"

    def check(self, target: PodInfo, view: Snapshot, within: frozenset[str] | None) -> None:
        expected = brute_force(self.run, target, view, within)
        found = self.run.find(target, view, within=within)
        self.checks += 1
        if not expected:
            assert found.node is None, f"index found {found.node}, brute force found nothing"
            return
        assert found.node is not None, f"index found nothing; brute force: {expected}"
        assert expected[found.node] == max(expected.values()), (
            f"index chose {found.node} ({expected.get(found.node)}), best is "
            f"{max(expected.values())}: {expected}"
        )

    def change_cache(self) -> None:
        """Between cycles: pods come and go, assumptions are made and dropped."""
        for _ in range(self.rng.randint(1, 4)):
            roll = self.rng.random()
            bound = [p for p in self.cache.pods() if self.cache.node_of(p.uid) is not None]
            if roll < 0.4 or not bound:
                self.cache.upsert_pod(pod(self.fresh(), self.rng, self.rng.choice(self.names)))
            elif roll < 0.75:
                self.cache.remove_pod(self.rng.choice(bound).uid)
            elif roll < 0.9:
                self.cache.assume(pod(self.fresh(), self.rng), self.rng.choice(self.names))
            else:
                assumed = [p for p in bound if self.cache.is_assumed(p.uid)]
                if assumed:
                    self.cache.forget(self.rng.choice(assumed).uid)

    def what_if(self, view: Snapshot, depth: int) -> None:
        """Random placements, removals and nested forks on ``view``, checked at every step."""
        for _ in range(self.rng.randint(1, 8)):
            roll = self.rng.random()
            target = pod(self.fresh(), self.rng)
            within = None
            if self.rng.random() < 0.3:
                within = frozenset(
                    self.rng.sample(self.names, self.rng.randint(1, len(self.names)))
                )
            self.check(target, view, within)
            if roll < 0.45:
                self.run.place(target, view, within=within)
            elif roll < 0.7:
                counted = [p for p in self.cache.pods() if view.node_of(p.uid) is not None] + [
                    p.pod for p in view.placements
                ]
                if counted:
                    view.remove(self.rng.choice(counted))
            elif depth < 3:
                child = view.fork()
                self.what_if(child, depth + 1)
                if self.rng.random() < 0.5:
                    child.commit()
            self.check(pod(self.fresh(), self.rng), view, None)


@pytest.mark.parametrize("strategy", list(ScoreStrategy))
@pytest.mark.parametrize("seed", range(40))
def test_the_index_finds_the_best_feasible_node_as_usage_goes_up_and_down(
    seed: int, strategy: ScoreStrategy
) -> None:
    trial = Trial(seed, strategy)
    for _ in range(12):
        root = Snapshot(trial.cache)
        trial.what_if(root, 0)
        if root.removals or trial.rng.random() < 0.5:
            pass  # dropped: the cache must look as if the cycle never happened
        else:
            root.commit()
        trial.change_cache()
    assert trial.checks > 50


def test_a_dropped_fork_leaves_the_shared_heaps_exact_for_the_next_cycle() -> None:
    rng = random.Random(7)
    run = runner(ScoreStrategy.LEAST_ALLOCATED, 7)
    cache = SchedulerCache()
    for index in range(6):
        cache.upsert_node(node(index, rng))
    busy = [pod(f"b{i}", rng, f"n{i:02}") for i in range(6)]
    for item in busy:
        cache.upsert_pod(item)
    probe = pod("probe", rng)
    root = Snapshot(cache)
    run.find(probe, root)  # the shared heap of this shape, built on the cache
    fork = root.fork()
    for item in busy:
        fork.remove(item)  # every node looks emptier in the fork...
    run.find(probe, fork)
    del fork  # ...and the fork is dropped
    view = Snapshot(cache)
    found = run.find(probe, view)
    expected = brute_force(run, probe, view, None)
    assert found.node is not None
    assert expected[found.node] == max(expected.values())
