"""PodRunner: PreFilter, filters and scores by scope, the best node, and why none fits."""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from collections.abc import Sequence

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import Scope
from koordgang.framework.runner import PodRunner
from koordgang.framework.status import SKIP, SUCCESS, Code, Status
from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot, StaleSnapshotError
from koordgang.testing.builders import cache_of, node, pod, uid_of
from koordgang.testing.plugins import (
    CountingFit,
    CountingTaintFilter,
    FixedPreFilter,
    FreeCpuScore,
    LabelScore,
    OnePerNode,
    runner,
)

# -- fake plugins of this file's own (koordgang.testing.plugins has the shared ones) ---------


class CountingSelectorFilter:
    """STATIC: the pod's nodeSelector must match the node's labels."""

    name = "Selector"
    scope = Scope.STATIC

    def __init__(self) -> None:
        self.calls = 0

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        self.calls += 1
        assert node.info is not None
        if all(node.info.labels.get(k) == v for k, v in pod.node_selector.items()):
            return SUCCESS
        return Status.unresolvable(self.name, "node(s) didn't match Pod's node affinity/selector")


class NormalizedLabelScore(LabelScore):
    """STATIC, normalized: the highest label among the feasible nodes scores 100."""

    def __init__(self, key: str = "a", weight: int = 1) -> None:
        super().__init__(key, weight)
        self.normalized: list[dict[str, int]] = []

    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        self.normalized.append(dict(scores))
        top = max(scores.values(), default=0) or 1
        for name in scores:
            scores[name] = scores[name] * 100 // top


class SkippableRejecter:
    """PreFilter and a NODE Filter of one plugin: the Filter rejects every node, unless the
    PreFilter said SKIP for the pod (pods labelled ``skip``)."""

    name = "Rejecter"
    scope = Scope.NODE

    def __init__(self) -> None:
        self.calls = 0

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        return SKIP if "skip" in pod.labels else SUCCESS

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        self.calls += 1
        return Status.unschedulable(self.name, "rejected")


class SkippablePenalty:
    """PreScore and a NODE Score of one plugin: penalizes the node labelled ``penalty``,
    unless PreScore said SKIP (pods labelled ``no-score``)."""

    name = "Penalty"
    weight = 10
    scope = Scope.NODE
    rises_with_usage = False

    def __init__(self) -> None:
        self.calls = 0

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        return SKIP if "no-score" in pod.labels else SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        self.calls += 1
        assert node.info is not None
        return -100 if "penalty" in node.info.labels else 0


class FavouriteNode:
    """A cluster score: 100 for the node named by the pod's ``favourite`` label."""

    name = "Favourite"
    weight = 1

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeState], snapshot: Snapshot
    ) -> dict[str, int]:
        self.seen.append([n.name for n in nodes])
        favourite = pod.labels.get("favourite")
        return {n.name: 100 if n.name == favourite else 0 for n in nodes}


def placed_on(pods: PodRunner, p: PodInfo, snapshot: Snapshot) -> str:
    """The node ``p`` is placed on in ``snapshot`` (it must fit)."""
    node_name = pods.place(p, snapshot).node
    assert node_name is not None, f"{p.name} fits nowhere"
    return node_name


def find(pods: PodRunner, cache: SchedulerCache, p: PodInfo) -> tuple[str | None, str]:
    """Where ``p`` would go in a fresh snapshot of ``cache``, and if nowhere, why."""
    result = pods.find(p, Snapshot(cache))
    return result.node, result.message


GPU_TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]

# -- diagnosis through a whole attempt -------------------------------------------------------


def test_a_pod_that_fits_nowhere_gets_kube_scheduler_style_counts_and_codes() -> None:
    cache = cache_of(node("n1", taints=GPU_TAINT), node("n2", cpu="1"), node("n3", cpu="1"))
    pods = runner(filters=(CountingTaintFilter(), CountingFit()))

    result = pods.find(pod("big", cpu="2"), Snapshot(cache))

    expected = (
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
        "2 Insufficient cpu."
    )
    assert result.node is None
    assert result.status.code is Code.UNSCHEDULABLE
    assert result.status.message() == expected
    assert result.message == expected
    assert result.diagnosis is not None
    assert result.diagnosis.message() == expected
    assert result.diagnosis.node_codes == {
        "n1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "n2": Code.UNSCHEDULABLE,
        "n3": Code.UNSCHEDULABLE,
    }
    assert result.monotone is True


def test_a_pod_rejected_by_static_filters_only_is_explained_by_them() -> None:
    cache = cache_of(node("n1", taints=GPU_TAINT), node("n2", labels={"zone": "a"}))
    pods = runner(filters=(CountingSelectorFilter(), CountingTaintFilter()))
    assert find(pods, cache, pod("p", node_selector={"zone": "b"})) == (
        None,
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
    )


def test_an_empty_cluster_has_no_nodes_available() -> None:
    pods = runner(filters=(CountingTaintFilter(), CountingFit()))
    assert find(pods, SchedulerCache(), pod("p")) == (None, "no nodes available to schedule pods.")


def test_a_failing_prefilter_stops_the_attempt_with_its_own_reason() -> None:
    gate = FixedPreFilter(Status.unschedulable("Gang", "gang ns/train waiting: 1/4 members"))
    taints, fit = CountingTaintFilter(), CountingFit()
    pods = runner(pre_filters=(gate,), filters=(taints, fit))
    cache = cache_of(node("n1"))

    result = pods.find(pod("p"), Snapshot(cache))

    assert result.node is None
    assert result.status == gate.status
    assert result.message == "gang ns/train waiting: 1/4 members"
    assert result.diagnosis is not None
    assert result.diagnosis.message() == "gang ns/train waiting: 1/4 members"
    assert (taints.calls, fit.calls) == (0, 0)


@pytest.mark.parametrize("code", [Code.SUCCESS, Code.SKIP])
def test_a_prefilter_that_succeeds_or_skips_lets_the_attempt_go_on(code: Code) -> None:
    pods = runner(pre_filters=(FixedPreFilter(Status(code)),))
    assert find(pods, cache_of(node("n1")), pod("p"))[0] == "n1"


@pytest.mark.parametrize(
    ("labels", "placed", "run"),
    [({}, None, True), ({"skip": "yes"}, "n1", False)],
    ids=["checked", "skipped"],
)
def test_a_filter_whose_prefilter_said_skip_is_not_run(
    labels: dict[str, str], placed: str | None, run: bool
) -> None:
    rejecter = SkippableRejecter()
    pods = runner(pre_filters=(rejecter,), filters=(rejecter,))

    assert find(pods, cache_of(node("n1")), pod("p", labels=labels))[0] == placed
    assert (rejecter.calls > 0) is run


@pytest.mark.parametrize(
    ("labels", "best"),
    [({}, "plain"), ({"no-score": "yes"}, "penalized")],
    ids=["scored", "skipped"],
)
def test_a_score_whose_prescore_said_skip_is_not_run(labels: dict[str, str], best: str) -> None:
    cache = cache_of(
        node("penalized", labels={"penalty": "yes", "score-a": "5"}),
        node("plain", labels={"score-a": "1"}),
    )
    penalty = SkippablePenalty()
    pods = runner(pre_scores=(penalty,), scores=(LabelScore(), penalty))

    assert find(pods, cache, pod("p", labels=labels))[0] == best
    assert (penalty.calls > 0) is not bool(labels)


# -- the static verdict cache ----------------------------------------------------------------


def test_static_verdicts_are_reused_for_pods_of_the_same_shape() -> None:
    taints, selector = CountingTaintFilter(), CountingSelectorFilter()
    pods = runner(filters=(taints, selector))
    cache = cache_of(node("n1"), node("n2"), node("n3"))

    find(pods, cache, pod("worker-0", labels={"rank": "0"}))
    assert (taints.calls, selector.calls) == (3, 3)
    # Another replica of the same job: labels and name differ, the shape does not.
    find(pods, cache, pod("worker-1", labels={"rank": "1"}))
    assert (taints.calls, selector.calls) == (3, 3)


def test_the_static_verdict_lists_feasible_and_rejected_nodes_with_static_scores() -> None:
    cache = cache_of(
        node("n1", taints=GPU_TAINT, labels={"score-a": "9"}),
        node("n2", labels={"score-a": "3"}),
        node("n3", labels={"score-a": "5"}),
    )
    label = LabelScore(weight=2)
    pods = runner(filters=(CountingTaintFilter(),), scores=(label,))

    verdict = pods.static_verdict(pod("p"), Snapshot(cache))

    assert [n.name for n in verdict.feasible] == ["n2", "n3"]
    assert list(verdict.rejected) == ["n1"]
    assert verdict.rejected["n1"].code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert verdict.scores == {"n2": 6, "n3": 10}  # weighted, feasible nodes only
    assert verdict.generation == cache.node_generation
    assert pods.static_verdict(pod("q"), Snapshot(cache)) is verdict
    assert label.calls == 2


@pytest.mark.parametrize(
    "other",
    [
        pod("x", cpu="2"),
        pod("x", node_selector={"zone": "a"}),
        pod("x", tolerations=[{"key": "dedicated", "operator": "Exists"}]),
    ],
    ids=["requests", "nodeSelector", "tolerations"],
)
def test_static_verdicts_are_computed_for_each_new_shape(other: PodInfo) -> None:
    taints = CountingTaintFilter()
    pods = runner(filters=(taints,))
    cache = cache_of(node("n1"), node("n2"))
    find(pods, cache, pod("p"))
    find(pods, cache, other)
    assert taints.calls == 4


def test_static_verdicts_are_recomputed_when_a_node_spec_changes() -> None:
    taints = CountingTaintFilter()
    pods = runner(filters=(taints,))
    cache = cache_of(node("n1"), node("n2"))
    assert find(pods, cache, pod("p"))[0] in ("n1", "n2")

    cache.upsert_node(node("n1", taints=GPU_TAINT, resource_version="2"))
    cache.upsert_node(node("n2", taints=GPU_TAINT, resource_version="2"))

    assert find(pods, cache, pod("p")) == (
        None,
        "0/2 nodes are available: 2 node(s) had untolerated taint {dedicated: gpu}.",
    )
    assert taints.calls == 4


def test_static_verdicts_survive_a_resource_version_only_node_update() -> None:
    taints = CountingTaintFilter()
    pods = runner(filters=(taints,))
    cache = cache_of(node("n1"), node("n2"))
    find(pods, cache, pod("p"))
    cache.upsert_node(node("n1", resource_version="99"))
    find(pods, cache, pod("p"))
    assert taints.calls == 2


@pytest.mark.parametrize("change", ["added", "removed"])
def test_static_verdicts_follow_nodes_that_come_and_go(change: str) -> None:
    pods = runner(filters=(CountingTaintFilter(),))
    cache = cache_of(node("n1", taints=GPU_TAINT), node("n2"))
    assert find(pods, cache, pod("p"))[0] == "n2"
    if change == "added":
        cache.upsert_node(node("n3"))
        cache.remove_node("n2")
        expected = "n3"
    else:
        cache.remove_node("n2")
        expected = None
    assert find(pods, cache, pod("p"))[0] == expected


def test_pod_churn_reuses_static_verdicts_but_the_fit_sees_the_new_usage() -> None:
    taints, fit = CountingTaintFilter(), CountingFit()
    pods = runner(filters=(taints, fit))
    cache = cache_of(node("n1", cpu="2"))
    assert find(pods, cache, pod("a", cpu="2"))[0] == "n1"

    cache.upsert_pod(pod("bound", cpu="1", node_name="n1"))

    assert find(pods, cache, pod("b", cpu="2")) == (
        None,
        "0/1 nodes are available: 1 Insufficient cpu.",
    )
    assert taints.calls == 1


def test_the_static_cache_forgets_the_least_recently_used_shape_beyond_512() -> None:
    taints = CountingTaintFilter()
    pods = runner(filters=(taints,))
    cache = cache_of(node("n1"))
    for millis in range(1, 514):  # 513 shapes
        find(pods, cache, pod("p", cpu=f"{millis}m"))
    assert taints.calls == 513
    find(pods, cache, pod("p", cpu="513m"))  # the newest is still cached
    assert taints.calls == 513
    find(pods, cache, pod("p", cpu="1m"))  # the oldest was evicted
    assert taints.calls == 514


def test_static_scores_are_computed_once_per_shape_and_normalized_over_feasible_nodes() -> None:
    cache = cache_of(
        node("n1", labels={"score-a": "50"}),
        node("n2", labels={"score-a": "20"}),
        node("tainted", taints=GPU_TAINT, labels={"score-a": "1000"}),
    )
    label = NormalizedLabelScore()
    pods = runner(filters=(CountingTaintFilter(),), scores=(label,))

    assert find(pods, cache, pod("p"))[0] == "n1"
    assert find(pods, cache, pod("q"))[0] == "n1"

    assert label.normalized == [{"n1": 50, "n2": 20}]
    assert pods.static_verdict(pod("p"), Snapshot(cache)).scores == {"n1": 100, "n2": 40}


# -- scores and the best node ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "best"),
    [
        ({"n1": 10, "n2": 90, "n3": 50}, "n2"),
        ({"n1": 100, "n2": 0, "n3": 99}, "n1"),
        ({"n1": 0, "n2": 0, "n3": 1}, "n3"),
    ],
)
def test_find_picks_the_node_with_the_best_score(scores: dict[str, int], best: str) -> None:
    cache = cache_of(*(node(n, labels={"score-a": str(s)}) for n, s in scores.items()))
    pods = runner(scores=(LabelScore(),))
    assert find(pods, cache, pod("p"))[0] == best


def test_scores_of_several_plugins_add_up_by_weight() -> None:
    cache = cache_of(
        node("n1", labels={"score-a": "90", "score-b": "10"}),  # 90 + 3*10 = 120
        node("n2", labels={"score-a": "20", "score-b": "40"}),  # 20 + 3*40 = 140
        node("n3", labels={"score-a": "100", "score-b": "0"}),  # 100
    )
    pods = runner(scores=(LabelScore("a", weight=1), LabelScore("b", weight=3)))
    assert find(pods, cache, pod("p"))[0] == "n2"


def test_static_and_node_scores_add_up() -> None:
    # n1: label 5000 + 1000 free after; n2: label 0 + 7000 free after.
    cache = cache_of(node("n1", cpu="2", labels={"score-a": "5000"}), node("n2", cpu="8"))
    pods = runner(filters=(CountingFit(),), scores=(LabelScore(), FreeCpuScore()))
    assert find(pods, cache, pod("p"))[0] == "n2"
    cache.upsert_node(node("n1", cpu="4", labels={"score-a": "5000"}))  # 5000 + 3000
    assert find(pods, cache, pod("p"))[0] == "n1"


def test_only_feasible_nodes_are_scored() -> None:
    cache = cache_of(
        node("small", cpu="1", labels={"score-a": "100"}),
        node("big", cpu="8", labels={"score-a": "1"}),
    )
    pods = runner(filters=(CountingFit(),), scores=(LabelScore(),))
    assert find(pods, cache, pod("p", cpu="2"))[0] == "big"


@pytest.mark.parametrize(
    ("scores", "tied_best"),
    [
        ([50, 80, 80, 30, 80], {"n1", "n2", "n4"}),
        # Ties below the best never win, before or after it.
        ([70, 70, 90, 70], {"n2"}),
        ([70, 90, 70, 90, 60], {"n1", "n3"}),
        ([10, 10, 10, 20, 20], {"n3", "n4"}),
        # No tie: always the best.
        ([1, 2, 3], {"n2"}),
    ],
)
def test_ties_are_broken_at_random_among_the_tied_nodes_only(
    scores: list[int], tied_best: set[str]
) -> None:
    cache = cache_of(*(node(f"n{i}", labels={"score-a": str(s)}) for i, s in enumerate(scores)))
    chosen = {
        find(runner(scores=(LabelScore(),), rng=random.Random(seed)), cache, pod("p"))[0]
        for seed in range(200)
    }
    assert chosen == tied_best


def test_tie_breaking_is_fair_among_tied_nodes() -> None:
    scores = [50, 80, 80, 30, 80]
    cache = cache_of(*(node(f"n{i}", labels={"score-a": str(s)}) for i, s in enumerate(scores)))
    counts = Counter(
        find(runner(scores=(LabelScore(),), rng=random.Random(seed)), cache, pod("p"))[0]
        for seed in range(3000)
    )
    assert set(counts) == {"n1", "n2", "n4"}
    for name in ("n1", "n2", "n4"):
        assert 850 <= counts[name] <= 1150, counts


def test_without_score_plugins_any_feasible_node_may_be_taken() -> None:
    cache = cache_of(node("n1", taints=GPU_TAINT), node("n2"), node("n3"))
    chosen = {
        find(runner(filters=(CountingTaintFilter(),), rng=random.Random(seed)), cache, pod("p"))[0]
        for seed in range(50)
    }
    assert chosen == {"n2", "n3"}


# -- placing, and the index keeping up -------------------------------------------------------


def spreading() -> PodRunner:
    return runner(filters=(CountingFit(),), scores=(FreeCpuScore(),))


def test_find_does_not_place_the_pod() -> None:
    cache = cache_of(node("n1", cpu="1"))
    pods = runner(filters=(CountingFit(),))
    snapshot = Snapshot(cache)
    result = pods.find(pod("p", cpu="1"), snapshot)
    assert result.node == "n1" and result.status.is_success
    assert snapshot.placements == []
    assert cache.node_of(uid_of("p")) is None
    # The same pod still fits: nothing was taken.
    assert pods.find(pod("q", cpu="1"), snapshot).node == "n1"


def test_place_adds_the_pod_to_the_snapshot_only() -> None:
    cache = cache_of(node("n1", cpu="1"))
    pods = runner(filters=(CountingFit(),))
    snapshot = Snapshot(cache)

    result = pods.place(pod("p", cpu="1"), snapshot)

    assert result.node == "n1"
    assert snapshot.node_of(uid_of("p")) == "n1"
    assert cache.node_of(uid_of("p")) is None
    assert pods.place(pod("q", cpu="1"), snapshot).node is None
    assert snapshot.node_of(uid_of("q")) is None


def test_the_best_node_is_found_again_after_each_commit() -> None:
    # Spreading three 1-cpu pods over three 2-cpu nodes: one on each, whatever the order.
    cache = cache_of(node("n1", cpu="2"), node("n2", cpu="2"), node("n3", cpu="2"))
    pods = spreading()
    placed = []
    for name in ("a", "b", "c"):
        snapshot = Snapshot(cache)
        result = pods.place(pod(name, cpu="1"), snapshot)
        assert result.node is not None
        snapshot.commit()
        placed.append(result.node)
    assert sorted(placed) == ["n1", "n2", "n3"]


def test_the_best_node_follows_placements_within_one_snapshot() -> None:
    cache = cache_of(node("n1", cpu="2"), node("n2", cpu="2"), node("n3", cpu="2"))
    pods = spreading()
    snapshot = Snapshot(cache)

    placed = [placed_on(pods, pod(name, cpu="1"), snapshot) for name in ("a", "b", "c")]
    fourth = [placed_on(pods, pod(name, cpu="1"), snapshot) for name in ("d", "e", "f")]

    assert sorted(placed) == ["n1", "n2", "n3"]  # one on each before any gets a second
    assert sorted(fourth) == ["n1", "n2", "n3"]
    assert pods.place(pod("g", cpu="1"), snapshot).node is None


def test_a_fork_finds_room_its_parent_freed_and_the_parent_ignores_the_forks_placements() -> None:
    cache = cache_of(node("n1", cpu="2"), node("n2", cpu="2"))
    cache.upsert_pod(pod("old", cpu="2", node_name="n1"))
    pods = spreading()
    root = Snapshot(cache)
    assert pods.place(pod("a", cpu="2"), root).node == "n2"
    assert pods.find(pod("b", cpu="2"), root).node is None

    fork = root.fork()
    fork.remove(pod("old", cpu="2", node_name="n1"))
    assert pods.place(pod("b", cpu="2"), fork).node == "n1"

    assert pods.find(pod("c", cpu="2"), root).node is None  # the fork's removal is its own
    assert pods.find(pod("c", cpu="2"), fork).node is None
    fork.commit()
    assert root.node_of(uid_of("b")) == "n1"
    assert pods.find(pod("c", cpu="2"), root).node is None


def test_room_freed_on_a_node_makes_it_the_best_again() -> None:
    cache = cache_of(node("n1", cpu="4"), node("n2", cpu="4"))
    cache.upsert_pod(pod("old", cpu="3", node_name="n1"))
    pods = spreading()
    assert find(pods, cache, pod("p", cpu="1"))[0] == "n2"
    cache.upsert_pod(pod("busy", cpu="3", node_name="n2"))
    cache.remove_pod(uid_of("old"))
    assert find(pods, cache, pod("q", cpu="1"))[0] == "n1"


def test_a_dropped_snapshot_gives_its_room_back() -> None:
    cache = cache_of(node("n1", cpu="2"))
    pods = spreading()
    snapshot = Snapshot(cache)
    for name in ("a", "b"):
        assert pods.place(pod(name, cpu="1"), snapshot).node == "n1"
    assert pods.find(pod("c", cpu="1"), snapshot).node is None
    del snapshot
    assert find(pods, cache, pod("c", cpu="1"))[0] == "n1"


def test_within_limits_the_search_and_explains_the_nodes_outside() -> None:
    cache = cache_of(
        node("n1", labels={"score-a": "100"}),
        node("n2", labels={"score-a": "10"}),
        node("n3", cpu="1", labels={"score-a": "5"}),
    )
    pods = runner(filters=(CountingFit(),), scores=(LabelScore(),))
    snapshot = Snapshot(cache)

    assert pods.find(pod("p"), snapshot, within=frozenset({"n2", "n3"})).node == "n2"
    result = pods.find(pod("big", cpu="2"), snapshot, within=frozenset({"n3"}))

    assert result.node is None
    assert result.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) were outside the chosen domain."
    )
    assert result.diagnosis is not None
    codes = result.diagnosis.node_codes
    assert [n for n, code in codes.items() if code is Code.UNSCHEDULABLE] == ["n3"]


def test_explain_says_why_each_statically_feasible_node_refused() -> None:
    cache = cache_of(node("n1", taints=GPU_TAINT), node("n2", cpu="1"), node("n3", cpu="8"))
    pods = runner(filters=(CountingTaintFilter(), CountingFit()))
    snapshot = Snapshot(cache)
    big = pod("big", cpu="2")
    verdict = pods.static_verdict(big, snapshot)
    state = CycleState()
    active = pods._active(state, big, snapshot, ())

    diagnosis = pods.explain(state, big, snapshot, verdict, active)

    # n3 fits: it is not counted as a rejection.
    assert diagnosis.node_codes == {
        "n2": Code.UNSCHEDULABLE,
        "n1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    }
    assert diagnosis.total_nodes == 3


# -- cluster-wide plugins --------------------------------------------------------------------


def test_a_cluster_filter_is_run_over_every_node_and_its_answer_is_not_monotone() -> None:
    cache = cache_of(node("n1"), node("n2"))
    cache.upsert_pod(pod("db-0", node_name="n1", labels={"app": "db"}))
    pods = runner(filters=(CountingFit(), OnePerNode()))
    snapshot = Snapshot(cache)

    first = pods.place(pod("db-1", labels={"app": "db"}), snapshot)
    second = pods.place(pod("db-2", labels={"app": "db"}), snapshot)

    assert first.node == "n2"
    assert first.monotone is False
    assert second.node is None
    assert second.monotone is False
    assert second.message == "0/2 nodes are available: 2 node(s) already run this app."
    # Pods it does not concern are placed as usual.
    assert pods.find(pod("web", labels={"app": "web"}), snapshot).node in ("n1", "n2")


def test_cluster_scores_are_given_the_feasible_nodes_and_add_to_the_others() -> None:
    cache = cache_of(
        node("n1", labels={"score-a": "60"}),
        node("n2", labels={"score-a": "50"}),
        node("full", cpu="0", labels={"score-a": "1000"}),
    )
    favourite = FavouriteNode()
    pods = runner(filters=(CountingFit(),), scores=(LabelScore(),), cluster_scores=(favourite,))

    assert find(pods, cache, pod("p", labels={"favourite": "n2"}))[0] == "n2"  # 50 + 100
    assert favourite.seen == [["n1", "n2"]]
    assert find(pods, cache, pod("q", labels={"favourite": "full"}))[0] == "n1"


def test_a_snapshot_older_than_a_new_node_does_not_hide_that_node_from_later_ones() -> None:
    pods = runner(filters=(CountingTaintFilter(),))
    cache = cache_of(node("n1", taints=GPU_TAINT))
    old = Snapshot(cache)
    cache.upsert_node(node("n2"))

    with contextlib.suppress(StaleSnapshotError):  # refusing the old snapshot is the fix
        pods.find(pod("p"), old)

    assert pods.find(pod("q"), Snapshot(cache)).node == "n2"
