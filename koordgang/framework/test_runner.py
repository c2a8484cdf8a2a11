"""Framework: prefilter, static filters cached per pod shape, sampled dynamic filters, score."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.runner import Framework
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.model.taints import first_untolerated
from koordgang.state.cache import SchedulerCache
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

# -- objects ---------------------------------------------------------------------------------


def node(
    name: str,
    *,
    cpu: str = "4",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    resource_version: str = "1",
) -> NodeInfo:
    return parse_node(
        {
            "metadata": {
                "name": name,
                "labels": labels or {},
                "resourceVersion": resource_version,
            },
            "spec": {"taints": taints or []},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def pod(
    name: str,
    *,
    cpu: str = "1",
    node_name: str = "",
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    labels: dict[str, str] | None = None,
) -> PodInfo:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        "nodeSelector": node_selector or {},
        "tolerations": tolerations or [],
    }
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"},
        }
    )


def cluster(*nodes: NodeInfo) -> SchedulerCache:
    cache = SchedulerCache()
    for info in nodes:
        cache.upsert_node(info)
    return cache


# -- fake plugins (the real ones live in a layer above) --------------------------------------


class NameSort:
    name = "NameSort"

    def sort_key(self, pod: PodInfo) -> tuple[Any, ...]:
        return (pod.name,)


class CountingTaintFilter:
    """Static: rejects nodes with an untolerated NoSchedule/NoExecute taint."""

    name = "Taints"
    static = True

    def __init__(self) -> None:
        self.calls = 0

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        self.calls += 1
        assert node.info is not None
        taint = first_untolerated(node.info.taints, pod.tolerations)
        if taint is None:
            return SUCCESS
        return Status.unresolvable(
            self.name, f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
        )


class CountingSelectorFilter:
    """Static: the pod's nodeSelector must match the node's labels."""

    name = "Selector"
    static = True

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


class CountingFit:
    """Dynamic: room for the pod's requests, tentative placements included."""

    name = "Fit"
    static = False

    def __init__(self) -> None:
        self.calls = 0

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        self.calls += 1
        short = snapshot.insufficient(node, pod.requests)
        return (
            SUCCESS
            if not short
            else Status.unschedulable(self.name, *(f"Insufficient {n}" for n in short))
        )


class LabelScore:
    """Scores a node by its label ``score-<key>`` (0 when absent)."""

    name = "LabelScore"

    def __init__(self, key: str = "a", weight: int = 1) -> None:
        self.key = key
        self.weight = weight

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        assert node.info is not None
        return int(node.info.labels.get(f"score-{self.key}", "0"))


class FreeCpuScore:
    """Prefers the node with the most free cpu (after placing), like LeastAllocated."""

    name = "FreeCpuScore"
    weight = 1

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        return snapshot.free(node, "cpu") - pod.requests.get("cpu")


class FixedPreFilter:
    name = "Gate"

    def __init__(self, status: Status) -> None:
        self.status = status
        self.calls = 0

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        self.calls += 1
        return self.status


def framework(
    *,
    static: tuple[Any, ...] = (),
    dynamic: tuple[Any, ...] = (),
    scores: tuple[Any, ...] = (),
    pre_filters: tuple[Any, ...] = (),
    rng: random.Random | None = None,
) -> Framework:
    return Framework(
        NameSort(),
        pre_filters=pre_filters,
        filters=(*static, *dynamic),
        scores=scores,
        rng=rng or random.Random(7),
    )


def schedule(fw: Framework, cache: SchedulerCache, p: PodInfo) -> tuple[str | None, str, int]:
    result = fw.schedule_pod(CycleState(), p, Snapshot(cache))
    return (
        None if result.node is None else result.node.name,
        result.diagnosis.message() if result.node is None else "",
        result.evaluated,
    )


GPU_TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]

# -- diagnosis through a whole attempt -------------------------------------------------------


def test_a_pod_that_fits_nowhere_gets_kube_scheduler_style_counts() -> None:
    cache = cluster(node("n1", taints=GPU_TAINT), node("n2", cpu="1"), node("n3", cpu="1"))
    fw = framework(static=(CountingTaintFilter(),), dynamic=(CountingFit(),))

    result = fw.schedule_pod(CycleState(), pod("big", cpu="2"), Snapshot(cache))

    expected = (
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
        "2 Insufficient cpu."
    )
    assert result.node is None
    assert result.status.code is Code.UNSCHEDULABLE
    assert result.status.message() == expected
    assert result.diagnosis.message() == expected
    assert result.evaluated == 2


def test_a_pod_rejected_by_static_filters_only_is_explained_by_them() -> None:
    cache = cluster(node("n1", taints=GPU_TAINT), node("n2", labels={"zone": "a"}))
    fw = framework(static=(CountingSelectorFilter(), CountingTaintFilter()))
    assert schedule(fw, cache, pod("p", node_selector={"zone": "b"})) == (
        None,
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
        0,
    )


def test_an_empty_cluster_has_no_nodes_available() -> None:
    fw = framework(static=(CountingTaintFilter(),), dynamic=(CountingFit(),))
    assert schedule(fw, SchedulerCache(), pod("p")) == (
        None,
        "no nodes available to schedule pods.",
        0,
    )


def test_a_failing_prefilter_stops_the_attempt_with_its_own_reason() -> None:
    gate = FixedPreFilter(Status.unschedulable("Gang", "gang ns/train waiting: 1/4 members"))
    taints = CountingTaintFilter()
    fw = framework(pre_filters=(gate,), static=(taints,))
    cache = cluster(node("n1"))

    result = fw.schedule_pod(CycleState(), pod("p"), Snapshot(cache))

    assert result.node is None
    assert result.status == gate.status
    assert result.diagnosis.message() == "gang ns/train waiting: 1/4 members"
    assert taints.calls == 0


@pytest.mark.parametrize("code", [Code.SUCCESS, Code.SKIP])
def test_a_prefilter_that_succeeds_or_skips_lets_the_attempt_go_on(code: Code) -> None:
    fw = framework(pre_filters=(FixedPreFilter(Status(code)),))
    assert schedule(fw, cluster(node("n1")), pod("p"))[0] == "n1"


# -- the static verdict cache ----------------------------------------------------------------


def test_static_verdicts_are_reused_for_pods_of_the_same_shape() -> None:
    taints, selector = CountingTaintFilter(), CountingSelectorFilter()
    fw = framework(static=(taints, selector))
    cache = cluster(node("n1"), node("n2"), node("n3"))

    schedule(fw, cache, pod("worker-0", labels={"rank": "0"}))
    assert (taints.calls, selector.calls) == (3, 3)
    # Another replica of the same job: labels and name differ, the shape does not.
    schedule(fw, cache, pod("worker-1", labels={"rank": "1"}))
    assert (taints.calls, selector.calls) == (3, 3)


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
    fw = framework(static=(taints,))
    cache = cluster(node("n1"), node("n2"))
    schedule(fw, cache, pod("p"))
    schedule(fw, cache, other)
    assert taints.calls == 4


def test_static_verdicts_are_recomputed_when_a_node_spec_changes() -> None:
    taints = CountingTaintFilter()
    fw = framework(static=(taints,))
    cache = cluster(node("n1"), node("n2"))
    assert schedule(fw, cache, pod("p"))[0] in ("n1", "n2")

    cache.upsert_node(node("n1", taints=GPU_TAINT, resource_version="2"))
    cache.upsert_node(node("n2", taints=GPU_TAINT, resource_version="2"))

    assert schedule(fw, cache, pod("p")) == (
        None,
        "0/2 nodes are available: 2 node(s) had untolerated taint {dedicated: gpu}.",
        0,
    )
    assert taints.calls == 4


def test_static_verdicts_survive_a_resource_version_only_node_update() -> None:
    taints = CountingTaintFilter()
    fw = framework(static=(taints,))
    cache = cluster(node("n1"), node("n2"))
    schedule(fw, cache, pod("p"))
    cache.upsert_node(node("n1", resource_version="99"))
    schedule(fw, cache, pod("p"))
    assert taints.calls == 2


def test_static_verdicts_include_a_node_that_was_added() -> None:
    fw = framework(static=(CountingTaintFilter(),))
    cache = cluster(node("n1", taints=GPU_TAINT))
    assert schedule(fw, cache, pod("p"))[0] is None
    cache.upsert_node(node("n2"))
    assert schedule(fw, cache, pod("p"))[0] == "n2"


def test_pod_churn_reuses_static_verdicts_but_the_fit_sees_the_new_usage() -> None:
    taints, fit = CountingTaintFilter(), CountingFit()
    fw = framework(static=(taints,), dynamic=(fit,))
    cache = cluster(node("n1", cpu="2"))
    assert schedule(fw, cache, pod("a", cpu="2"))[0] == "n1"

    cache.upsert_pod(pod("bound", cpu="1", node_name="n1"))

    assert schedule(fw, cache, pod("b", cpu="2")) == (
        None,
        "0/1 nodes are available: 1 Insufficient cpu.",
        1,
    )
    assert taints.calls == 1


def test_the_static_cache_forgets_the_least_recently_used_shape_beyond_512() -> None:
    taints = CountingTaintFilter()
    fw = framework(static=(taints,))
    cache = cluster(node("n1"))
    for millis in range(1, 514):  # 513 shapes
        schedule(fw, cache, pod("p", cpu=f"{millis}m"))
    assert taints.calls == 513
    schedule(fw, cache, pod("p", cpu="513m"))  # the newest is still cached
    assert taints.calls == 513
    schedule(fw, cache, pod("p", cpu="1m"))  # the oldest was evicted
    assert taints.calls == 514


@pytest.mark.parametrize(
    ("scores", "best"),
    [
        ({"n1": 10, "n2": 90, "n3": 50}, "n2"),
        ({"n1": 100, "n2": 0, "n3": 99}, "n1"),
        ({"n1": 0, "n2": 0, "n3": 1}, "n3"),
    ],
)
def test_schedule_pod_picks_the_node_with_the_best_score(scores: dict[str, int], best: str) -> None:
    cache = cluster(*(node(n, labels={"score-a": str(s)}) for n, s in scores.items()))
    fw = framework(scores=(LabelScore(),))
    assert schedule(fw, cache, pod("p"))[0] == best


def test_scores_of_several_plugins_add_up_by_weight() -> None:
    cache = cluster(
        node("n1", labels={"score-a": "90", "score-b": "10"}),  # 90 + 3*10 = 120
        node("n2", labels={"score-a": "20", "score-b": "40"}),  # 20 + 3*40 = 140
        node("n3", labels={"score-a": "100", "score-b": "0"}),  # 100
    )
    fw = framework(scores=(LabelScore("a", weight=1), LabelScore("b", weight=3)))
    assert schedule(fw, cache, pod("p"))[0] == "n2"


def test_only_feasible_nodes_are_scored() -> None:
    cache = cluster(
        node("small", cpu="1", labels={"score-a": "100"}),
        node("big", cpu="8", labels={"score-a": "1"}),
    )
    fw = framework(dynamic=(CountingFit(),), scores=(LabelScore(),))
    assert schedule(fw, cache, pod("p", cpu="2"))[0] == "big"


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
    cache = cluster(*(node(f"n{i}", labels={"score-a": str(s)}) for i, s in enumerate(scores)))
    chosen = {
        schedule(framework(scores=(LabelScore(),), rng=random.Random(seed)), cache, pod("p"))[0]
        for seed in range(200)
    }
    assert chosen == tied_best


def test_tie_breaking_is_fair_among_tied_nodes() -> None:
    scores = [50, 80, 80, 30, 80]
    cache = cluster(*(node(f"n{i}", labels={"score-a": str(s)}) for i, s in enumerate(scores)))
    counts = Counter(
        schedule(framework(scores=(LabelScore(),), rng=random.Random(seed)), cache, pod("p"))[0]
        for seed in range(3000)
    )
    assert set(counts) == {"n1", "n2", "n4"}
    for name in ("n1", "n2", "n4"):
        assert 850 <= counts[name] <= 1150, counts


def test_without_score_plugins_any_feasible_node_may_be_taken() -> None:
    cache = cluster(node("n1", taints=GPU_TAINT), node("n2"), node("n3"))
    chosen = {
        schedule(
            framework(static=(CountingTaintFilter(),), rng=random.Random(seed)), cache, pod("p")
        )[0]
        for seed in range(50)
    }
    assert chosen == {"n2", "n3"}


def test_the_best_node_is_found_again_after_each_placement() -> None:
    # Spreading three 1-cpu pods over three 2-cpu nodes: one on each, whatever the order.
    cache = cluster(node("n1", cpu="2"), node("n2", cpu="2"), node("n3", cpu="2"))
    fw = framework(dynamic=(CountingFit(),), scores=(FreeCpuScore(),))
    placed = []
    for name in ("a", "b", "c"):
        snapshot = Snapshot(cache)
        result = fw.schedule_pod(CycleState(), pod(name, cpu="1"), snapshot)
        assert result.node is not None
        snapshot.place(pod(name, cpu="1"), result.node)
        snapshot.commit()
        placed.append(result.node.name)
    assert sorted(placed) == ["n1", "n2", "n3"]


def test_room_freed_on_a_node_makes_it_the_best_again() -> None:
    cache = cluster(node("n1", cpu="4"), node("n2", cpu="4"))
    cache.upsert_pod(pod("old", cpu="3", node_name="n1"))
    fw = framework(dynamic=(CountingFit(),), scores=(FreeCpuScore(),))
    assert schedule(fw, cache, pod("p", cpu="1"))[0] == "n2"
    cache.upsert_pod(pod("busy", cpu="3", node_name="n2"))
    cache.remove_pod("uid-old")
    assert schedule(fw, cache, pod("q", cpu="1"))[0] == "n1"


def test_a_dropped_plan_gives_its_room_back() -> None:
    cache = cluster(node("n1", cpu="2"))
    fw = framework(dynamic=(CountingFit(),), scores=(FreeCpuScore(),))
    snapshot = Snapshot(cache)
    for name in ("a", "b"):
        result = fw.schedule_pod(CycleState(), pod(name, cpu="1"), snapshot)
        assert result.node is not None
        snapshot.place(pod(name, cpu="1"), result.node)
    assert fw.schedule_pod(CycleState(), pod("c", cpu="1"), snapshot).node is None
    snapshot.unplace_all()
    assert schedule(fw, cache, pod("c", cpu="1"))[0] == "n1"


def test_schedule_pod_does_not_place_the_pod() -> None:
    cache = cluster(node("n1", cpu="1"))
    fw = framework(dynamic=(CountingFit(),))
    snapshot = Snapshot(cache)
    result = fw.schedule_pod(CycleState(), pod("p", cpu="1"), snapshot)
    assert result.node is not None and result.status.is_success
    assert snapshot.placements == []
    assert cache.node_of("uid-p") is None
    # The same pod still fits: nothing was reserved.
    assert fw.schedule_pod(CycleState(), pod("q", cpu="1"), snapshot).node is not None
