"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway ones score, as kube does."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.runner import PodRunner
from koordgang.framework.status import Code
from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.noderesources import Fit
from koordgang.plugins.podtopologyspread import PodTopologySpread
from koordgang.plugins.podtopologyspread.plugin import MISSING_LABEL_REASON, REASON, _round
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
RACK = "rack"
JOB = {"app": "job"}
SKIP = "skip"

# -- builders ----------------------------------------------------------------------------------


def node(
    name: str,
    zone: str | None = None,
    *,
    cpu: str = "4",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> NodeInfo:
    all_labels = {HOST: name, **(labels or {})}
    if zone is not None:
        all_labels[ZONE] = zone
    return parse_node(
        {
            "metadata": {"name": name, "labels": all_labels},
            "spec": {"taints": taints or []},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def spread(
    when: str = "DoNotSchedule",
    key: str = ZONE,
    max_skew: int = 1,
    selector: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A constraint over pods labelled app=job unless ``selector`` says otherwise."""
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": JOB} if selector is None else selector,
        **extra,
    }


def soft(key: str = ZONE, max_skew: int = 1) -> dict[str, Any]:
    return spread("ScheduleAnyway", key, max_skew)


_count = iter(range(1_000_000))


def pod(
    node_name: str = "",
    *,
    labels: dict[str, str] | None = None,
    namespace: str = "ns",
    constraints: Sequence[dict[str, Any]] = (),
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    deleting: bool = False,
    cpu: str = "1",
) -> PodInfo:
    name = f"p{next(_count)}"
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": JOB if labels is None else labels,
    }
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        "topologySpreadConstraints": list(constraints),
        "nodeSelector": node_selector or {},
        "tolerations": tolerations or [],
    }
    if node_name:
        spec["nodeName"] = node_name
    phase = "Running" if node_name else "Pending"
    return parse_pod({"metadata": metadata, "spec": spec, "status": {"phase": phase}})


def world(nodes: Sequence[NodeInfo], pods: Sequence[PodInfo] = ()) -> Snapshot:
    cache = SchedulerCache()
    for info in nodes:
        cache.upsert_node(info)
    for existing in pods:
        cache.upsert_pod(existing)
    return Snapshot(cache)


def on(*node_names: str, **kwargs: Any) -> list[PodInfo]:
    """One matching pod per name, bound there."""
    return [pod(name, **kwargs) for name in node_names]


def feasible(incoming: PodInfo, snapshot: Snapshot) -> set[str] | str:
    """The nodes the filter lets the pod onto, or "skip" when PreFilter says SKIP."""
    plugin = PodTopologySpread()
    state = CycleState()
    if plugin.pre_filter(state, incoming, snapshot).code is Code.SKIP:
        return SKIP
    return {
        n.name for n in snapshot.nodes if plugin.filter(state, incoming, n, snapshot).is_success
    }


THREE = [node("a1", "a"), node("b1", "b"), node("c1", "c")]
SSD = {"disk": "ssd"}
NO_SCHEDULE = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}

# -- filter ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "pods", "incoming", "expected"),
    [
        pytest.param(THREE, on("a1"), pod(), SKIP, id="a pod without constraints is skipped"),
        pytest.param(
            THREE, on("a1"), pod(constraints=[soft()]), SKIP, id="ScheduleAnyway alone is skipped"
        ),
        pytest.param(
            THREE,
            on("a1", "a1", "b1"),
            pod(constraints=[spread()]),
            {"c1"},
            id="maxSkew 1 sends the pod to the emptiest zone",
        ),
        pytest.param(
            THREE,
            on("a1", "a1", "b1"),
            pod(constraints=[spread(max_skew=2)]),
            {"b1", "c1"},
            id="maxSkew 2 tolerates one more",
        ),
        pytest.param(
            THREE,
            on("a1", "a1", "b1"),
            pod(labels={"app": "other"}, constraints=[spread()]),
            {"b1", "c1"},
            id="a pod its own selector does not match adds nothing to the skew",
        ),
        pytest.param(
            THREE,
            on("a1", "a1", namespace="elsewhere"),
            pod(constraints=[spread()]),
            {"a1", "b1", "c1"},
            id="pods of other namespaces do not count",
        ),
        pytest.param(
            THREE,
            on("a1", "a1", deleting=True),
            pod(constraints=[spread()]),
            {"a1", "b1", "c1"},
            id="terminating pods do not count",
        ),
        pytest.param(
            THREE,
            on("a1", "a1", labels={"app": "web"}),
            pod(constraints=[spread()]),
            {"a1", "b1", "c1"},
            id="pods the selector does not match do not count",
        ),
        pytest.param(
            THREE,
            on("a1", "a1", labels={"app": "web"}),
            pod(constraints=[spread(selector={})]),
            {"b1", "c1"},
            id="an empty selector counts every pod of the namespace",
        ),
        pytest.param(
            THREE,
            on("a1", "a1"),
            pod(constraints=[{**spread(), "labelSelector": None}]),
            {"a1", "b1", "c1"},
            id="no selector counts no pod",
        ),
        pytest.param(
            THREE,
            on("a1", "b1", "c1"),
            pod(constraints=[spread(minDomains=3)]),
            {"a1", "b1", "c1"},
            id="enough domains for minDomains keep the real minimum",
        ),
        pytest.param(
            THREE,
            on("a1", "b1", "c1"),
            pod(constraints=[spread(minDomains=4)]),
            set(),
            id="fewer domains than minDomains make the minimum 0",
        ),
        pytest.param(
            [node("a1", "a", labels=SSD), node("b1", "b", labels=SSD), node("c1", "c")],
            on("a1", "b1"),
            pod(node_selector=SSD, constraints=[spread()]),
            {"a1", "b1", "c1"},
            id="nodeAffinityPolicy Honor leaves out the domains the pod cannot go to",
        ),
        pytest.param(
            [node("a1", "a", labels=SSD), node("b1", "b", labels=SSD), node("c1", "c")],
            on("a1", "b1"),
            pod(node_selector=SSD, constraints=[spread(nodeAffinityPolicy="Ignore")]),
            {"c1"},
            id="nodeAffinityPolicy Ignore counts them",
        ),
        pytest.param(
            [node("a1", "a"), node("b1", "b"), node("c1", "c", taints=[NO_SCHEDULE])],
            on("a1", "b1"),
            pod(constraints=[spread()]),
            {"c1"},
            id="nodeTaintsPolicy Ignore, the default, counts tainted nodes",
        ),
        pytest.param(
            [node("a1", "a"), node("b1", "b"), node("c1", "c", taints=[NO_SCHEDULE])],
            on("a1", "b1"),
            pod(constraints=[spread(nodeTaintsPolicy="Honor")]),
            {"a1", "b1", "c1"},
            id="nodeTaintsPolicy Honor leaves out nodes with untolerated taints",
        ),
        pytest.param(
            [node("a1", "a"), node("b1", "b"), node("c1", "c", taints=[NO_SCHEDULE])],
            on("a1", "b1"),
            pod(
                tolerations=[{"key": "dedicated", "operator": "Exists"}],
                constraints=[spread(nodeTaintsPolicy="Honor")],
            ),
            {"c1"},
            id="nodeTaintsPolicy Honor counts nodes whose taints the pod tolerates",
        ),
        pytest.param(
            [*THREE, node("d1")],
            on("a1"),
            pod(constraints=[spread()]),
            {"b1", "c1"},
            id="a node without the key is rejected",
        ),
        pytest.param(
            [
                node("a1", "a", labels={RACK: "r1"}),
                node("b1", "b", labels={RACK: "r2"}),
                node("c1", "c"),
            ],
            on("a1", "b1"),
            pod(constraints=[spread(), spread(key=RACK, max_skew=10)]),
            {"a1", "b1"},
            id="a node without every constraint's key is no domain of any of them",
        ),
    ],
)
def test_the_filter_admits_exactly_the_nodes_kube_scheduler_would(
    nodes: list[NodeInfo], pods: list[PodInfo], incoming: PodInfo, expected: set[str] | str
) -> None:
    assert feasible(incoming, world(nodes, pods)) == expected


@pytest.mark.parametrize(
    ("node_name", "code", "reason"),
    [
        ("a1", Code.UNSCHEDULABLE, REASON),
        ("d1", Code.UNSCHEDULABLE_AND_UNRESOLVABLE, MISSING_LABEL_REASON),
    ],
    ids=["too much skew may change as pods go", "a missing label never will"],
)
def test_rejections_carry_kube_schedulers_code_and_reason(
    node_name: str, code: Code, reason: str
) -> None:
    snapshot = world([*THREE, node("d1")], on("a1"))
    incoming = pod(constraints=[spread()])
    plugin = PodTopologySpread()
    state = CycleState()
    assert plugin.pre_filter(state, incoming, snapshot).is_success
    target = snapshot.node(node_name)
    assert target is not None
    status = plugin.filter(state, incoming, target, snapshot)
    assert (status.code, status.reasons, status.plugin) == (code, (reason,), "PodTopologySpread")


def test_pods_added_one_after_another_keep_the_zones_within_max_skew() -> None:
    nodes = [node(f"{zone}{i}", zone) for zone in "abc" for i in (1, 2)]
    snapshot = world(nodes)
    plugin = PodTopologySpread()
    by_zone: Counter[str] = Counter()
    for _ in range(12):
        member = pod(constraints=[spread()])
        state = CycleState()
        assert plugin.pre_filter(state, member, snapshot).is_success
        # The first node in name order that fits: the filter alone must keep the balance.
        target = next(
            n for n in snapshot.nodes if plugin.filter(state, member, n, snapshot).is_success
        )
        snapshot.add(member, target)
        by_zone[target.name[0]] += 1
        assert max(by_zone.values()) - min(by_zone.get(z, 0) for z in "abc") <= 1
    assert by_zone == {"a": 4, "b": 4, "c": 4}


# -- score -------------------------------------------------------------------------------------


def scores(
    incoming: PodInfo,
    nodes: Sequence[NodeInfo],
    pods: Sequence[PodInfo],
    given: Sequence[str] | None = None,
) -> dict[str, int] | str:
    snapshot = world(nodes, pods)
    plugin = PodTopologySpread()
    state = CycleState()
    if plugin.pre_score(state, incoming, snapshot).code is Code.SKIP:
        return SKIP
    scored = [n for n in snapshot.nodes if given is None or n.name in given]
    return plugin.score_nodes(state, incoming, scored, snapshot)


@pytest.mark.parametrize(
    ("incoming", "nodes", "pods", "given", "expected"),
    [
        pytest.param(
            pod(constraints=[spread()]), THREE, [], None, SKIP, id="DoNotSchedule alone is skipped"
        ),
        pytest.param(
            pod(constraints=[soft()]),
            THREE,
            on("a1", "a1", "b1"),
            None,
            {"a1": 0, "b1": 33, "c1": 100},
            id="the emptier zone scores higher",
        ),
        pytest.param(
            pod(constraints=[soft(max_skew=3)]),
            THREE,
            on("a1", "a1", "b1"),
            None,
            {"a1": 40, "b1": 60, "c1": 100},
            id="a larger maxSkew waters the differences down",
        ),
        pytest.param(
            pod(constraints=[soft()]),
            THREE,
            on("a1", labels={"app": "web"}),
            None,
            {"a1": 100, "b1": 100, "c1": 100},
            id="with no matching pod anywhere every node scores the maximum",
        ),
        pytest.param(
            pod(constraints=[soft()]),
            [*THREE, node("d1")],
            on("a1"),
            None,
            {"a1": 0, "b1": 100, "c1": 100, "d1": 0},
            id="a node without the key scores 0",
        ),
        pytest.param(
            pod(constraints=[soft(HOST)]),
            [node("a1", "a"), node("a2", "a"), node("b1", "b")],
            on("a1", "a1", "a2"),
            None,
            {"a1": 0, "a2": 33, "b1": 100},
            id="spreading over hostnames counts each node's own pods",
        ),
        pytest.param(
            pod(constraints=[soft(HOST)]),
            [
                node("a1", "a", labels={HOST: "same"}),
                node("a2", "a", labels={HOST: "same"}),
                node("b1", "b"),
            ],
            on("a1", "a1"),
            None,
            {"a1": 0, "a2": 100, "b1": 100},
            id="spreading over hostnames goes by node even where the label repeats",
        ),
        pytest.param(
            pod(constraints=[soft()]),
            [node("a1", "a"), node("a2", "a"), node("b1", "b"), node("c1", "c")],
            on("a1", "a1", "a2", "b1"),
            ["a1", "b1"],
            {"a1": 25, "b1": 100},
            id="domains are those of the given nodes, counts those of every node",
        ),
    ],
)
def test_scores_follow_kube_schedulers_pod_topology_spread_priority(
    incoming: PodInfo,
    nodes: list[NodeInfo],
    pods: list[PodInfo],
    given: list[str] | None,
    expected: dict[str, int] | str,
) -> None:
    assert scores(incoming, nodes, pods, given) == expected


@pytest.mark.parametrize(("value", "rounded"), [(0.4, 0), (0.5, 1), (2.5, 3), (3.49, 3)])
def test_raw_scores_round_half_away_from_zero_as_go_does(value: float, rounded: int) -> None:
    assert _round(value) == rounded


# -- through the runner ------------------------------------------------------------------------


def runner() -> PodRunner:
    plugin = PodTopologySpread()
    return PodRunner(
        pre_filters=[plugin],
        filters=[Fit(), plugin],
        pre_scores=[plugin],
        cluster_scores=[plugin],
        rng=random.Random(3),
    )


def test_the_runner_lands_a_gang_of_twelve_four_per_zone() -> None:
    snapshot = world([node(f"{zone}{i}", zone) for zone in "abc" for i in (1, 2)])
    run = runner()
    placed = [run.place(pod(constraints=[spread()]), snapshot).node for _ in range(12)]
    assert Counter(name[0] for name in placed if name is not None) == {"a": 4, "b": 4, "c": 4}


def test_the_runner_explains_spreading_and_room_like_kube_scheduler() -> None:
    snapshot = world(
        [node("a1", "a"), node("b1", "b", cpu="1")],
        [*on("a1", "a1"), pod("b1", labels={"app": "filler"})],
    )
    result = runner().place(pod(constraints=[spread()]), snapshot)
    assert result.node is None
    assert result.message == (
        "0/2 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't match pod topology spread constraints."
    )


def test_the_runner_prefers_the_emptier_zone_for_schedule_anyway() -> None:
    snapshot = world([node("a1", "a"), node("b1", "b")], on("a1", "a1", "a1"))
    assert runner().place(pod(constraints=[soft()]), snapshot).node == "b1"
