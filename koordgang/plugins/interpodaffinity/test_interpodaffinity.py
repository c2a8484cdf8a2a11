"""InterPodAffinity: required terms filter nodes, preferred terms score them, as kube-scheduler."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.runner import PodRunner
from koordgang.framework.status import Code, Status
from koordgang.model.namespace import NamespaceInfo
from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.interpodaffinity import InterPodAffinity
from koordgang.plugins.interpodaffinity.plugin import (
    AFFINITY_REASON,
    ANTI_AFFINITY_REASON,
    EXISTING_ANTI_AFFINITY_REASON,
)
from koordgang.plugins.noderesources import Fit
from koordgang.state.cache import SchedulerCache
from koordgang.state.namespaces import Namespaces
from koordgang.state.snapshot import Snapshot

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SKIP = "skip"

# -- builders ----------------------------------------------------------------------------------


def node(name: str, zone: str | None = None, *, cpu: str = "4") -> NodeInfo:
    labels = {HOST: name}
    if zone is not None:
        labels[ZONE] = zone
    return parse_node(
        {
            "metadata": {"name": name, "labels": labels},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def term(key: str = HOST, ns: Any = None, ns_selector: Any = None, **match: str) -> dict[str, Any]:
    """A pod affinity term selecting pods labelled ``match`` (None: ``labelSelector`` null)."""
    result: dict[str, Any] = {"topologyKey": key, "labelSelector": {"matchLabels": match}}
    if ns is not None:
        result["namespaces"] = ns
    if ns_selector is not None:
        result["namespaceSelector"] = ns_selector
    return result


def weighted(weight: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": item}


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    namespace: str = "ns",
    node_name: str = "",
    affinity: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
    preferred: Sequence[dict[str, Any]] = (),
    preferred_anti: Sequence[dict[str, Any]] = (),
    deleting: bool = False,
) -> PodInfo:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": list(affinity),
                "preferredDuringSchedulingIgnoredDuringExecution": list(preferred),
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": list(anti),
                "preferredDuringSchedulingIgnoredDuringExecution": list(preferred_anti),
            },
        },
    }
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "labels": labels or {},
    }
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if node_name:
        spec["nodeName"] = node_name
    phase = "Running" if node_name else "Pending"
    return parse_pod({"metadata": metadata, "spec": spec, "status": {"phase": phase}})


def web(name: str, node_name: str = "", **kwargs: Any) -> PodInfo:
    return pod(name, labels={"app": "web"}, node_name=node_name, **kwargs)


def world(
    nodes: Sequence[NodeInfo],
    pods: Sequence[PodInfo] = (),
    namespaces: dict[str, dict[str, str]] | None = None,
) -> Snapshot:
    cache = SchedulerCache()
    for info in nodes:
        cache.upsert_node(info)
    for existing in pods:
        cache.upsert_pod(existing)
    for name, labels in (namespaces or {}).items():
        NAMESPACES.upsert(NamespaceInfo(name, labels))
    return Snapshot(cache)


#: The namespaces' store the plugins of these tests read (namespaces differ by name).
NAMESPACES = Namespaces()


def feasible(incoming: PodInfo, snapshot: Snapshot) -> set[str] | str:
    """The nodes the filter lets the pod onto, or "skip" when PreFilter says SKIP."""
    plugin = InterPodAffinity(namespace_labels=NAMESPACES.labels)
    state = CycleState()
    if plugin.pre_filter(state, incoming, snapshot).code is Code.SKIP:
        return SKIP
    return {
        n.name for n in snapshot.nodes if plugin.filter(state, incoming, n, snapshot).is_success
    }


def verdict(incoming: PodInfo, snapshot: Snapshot, node_name: str) -> Status:
    plugin = InterPodAffinity()
    state = CycleState()
    assert plugin.pre_filter(state, incoming, snapshot).is_success
    target = snapshot.node(node_name)
    assert target is not None
    return plugin.filter(state, incoming, target, snapshot)


HOSTS = [node("n1", "a"), node("n2", "a"), node("n3", "b")]
NO_ZONE = node("n4")

# -- filter ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "pods", "incoming", "expected"),
    [
        pytest.param(HOSTS, [], pod("p"), SKIP, id="a plain pod with no pod around is skipped"),
        pytest.param(
            HOSTS,
            [web("w1", "n1", anti=[term(app="db")])],
            web("p"),
            SKIP,
            id="a pod that no existing anti-affinity term selects is skipped",
        ),
        pytest.param(
            HOSTS,
            [web("w1", "n1")],
            web("p", anti=[term(HOST, app="web")]),
            {"n2", "n3"},
            id="anti-affinity on hostname keeps two matching pods off one node",
        ),
        pytest.param(
            HOSTS,
            [web("w1", "n1")],
            web("p", anti=[term(ZONE, app="web")]),
            {"n3"},
            id="anti-affinity on zone keeps two matching pods out of one zone",
        ),
        pytest.param(
            [*HOSTS, NO_ZONE],
            [web("w1", "n4")],
            web("p", anti=[term(ZONE, app="web")]),
            {"n1", "n2", "n3", "n4"},
            id="a pod on a node without the key is in no domain and blocks nothing",
        ),
        pytest.param(
            [*HOSTS, NO_ZONE],
            [web("w1", "n1")],
            web("p", anti=[term(ZONE, app="web")]),
            {"n3", "n4"},
            id="anti-affinity lets the pod onto a node without the key",
        ),
        pytest.param(
            HOSTS,
            [pod("guard", node_name="n1", anti=[term(ZONE, app="web")])],
            web("p"),
            {"n3"},
            id="an existing pod's anti-affinity keeps matching pods out of its zone",
        ),
        pytest.param(
            HOSTS,
            [pod("guard", node_name="n1", anti=[term(ZONE, app="web")])],
            web("p", namespace="other"),
            SKIP,
            id="an existing pod's term without namespaces only looks at its own namespace",
        ),
        pytest.param(
            HOSTS,
            [web("w1", "n1", deleting=True)],
            web("p", anti=[term(HOST, app="web")]),
            {"n2", "n3"},
            id="a terminating pod still counts, as in kube-scheduler",
        ),
        pytest.param(
            HOSTS,
            [pod("db", labels={"app": "db"}, node_name="n3")],
            web("p", affinity=[term(ZONE, app="db")]),
            {"n3"},
            id="affinity sends the pod to the zone of a matching pod",
        ),
        pytest.param(
            HOSTS,
            [pod("db", labels={"app": "db"}, node_name="n1")],
            web("p", affinity=[term(ZONE, app="db"), term(HOST, app="db")]),
            {"n1"},
            id="every affinity term must hold on the node",
        ),
        pytest.param(
            HOSTS,
            [
                pod("db", labels={"app": "db"}, node_name="n1"),
                pod("cache", labels={"tier": "cache"}, node_name="n3"),
            ],
            web("p", affinity=[term(ZONE, app="db"), term(ZONE, tier="cache")]),
            set(),
            id="affinity counts only pods that match all the terms",
        ),
        pytest.param(
            [*HOSTS, NO_ZONE],
            [],
            pod("p", labels={"app": "db"}, affinity=[term(ZONE, app="db")]),
            {"n1", "n2", "n3"},
            id="the first pod of a group with affinity to itself goes to any node with the key",
        ),
        pytest.param(
            HOSTS,
            [],
            web("p", affinity=[term(ZONE, app="db")]),
            set(),
            id="affinity to pods that do not exist fits nowhere unless the pod matches itself",
        ),
        pytest.param(
            HOSTS,
            [pod("db", labels={"app": "db"}, node_name="n3")],
            pod("p", labels={"app": "db"}, affinity=[term(ZONE, app="db")]),
            {"n3"},
            id="once a pod of the group exists the others must join it",
        ),
        pytest.param(
            HOSTS,
            [],
            pod(
                "p",
                labels={"app": "db"},
                namespace="other",
                affinity=[term(ZONE, ["ns"], app="db")],
            ),
            set(),
            id="a pod outside its own term's namespaces is not the first of its group",
        ),
        pytest.param(
            HOSTS,
            [pod("db", labels={"app": "db"}, namespace="other", node_name="n3")],
            web("p", affinity=[term(ZONE, app="db")]),
            set(),
            id="a term without namespaces ignores pods of other namespaces",
        ),
        pytest.param(
            HOSTS,
            [pod("db", labels={"app": "db"}, namespace="other", node_name="n3")],
            web("p", affinity=[term(ZONE, ["other"], app="db")]),
            {"n3"},
            id="a term's namespaces name where to look",
        ),
        pytest.param(
            HOSTS,
            [pod("db", labels={"app": "db"}, namespace="other", node_name="n3")],
            web("p", affinity=[term(ZONE, ns_selector={}, app="db")]),
            {"n3"},
            id="an empty namespace selector looks in every namespace",
        ),
    ],
)
def test_the_filter_admits_exactly_the_nodes_kube_scheduler_would(
    nodes: list[NodeInfo], pods: list[PodInfo], incoming: PodInfo, expected: set[str] | str
) -> None:
    assert feasible(incoming, world(nodes, pods)) == expected


@pytest.mark.parametrize(
    ("team", "free_of_db", "near_db"),
    [
        pytest.param("a", {"n1", "n2"}, {"n3"}, id="it selects the namespace labelled team=a"),
        pytest.param("b", {"n3"}, {"n1", "n2"}, id="it selects the namespace labelled team=b"),
        pytest.param("c", {"n1", "n2", "n3"}, set(), id="it selects no namespace"),
    ],
)
def test_a_namespace_selector_selects_namespaces_by_their_labels(
    team: str, free_of_db: set[str], near_db: set[str]
) -> None:
    snapshot = world(
        HOSTS,
        [
            pod("db1", labels={"app": "db"}, namespace="team-a", node_name="n3"),
            pod("db2", labels={"app": "db"}, namespace="team-b", node_name="n1"),
        ],
        namespaces={"team-a": {"team": "a"}, "team-b": {"team": "b"}},
    )
    selector = {"matchLabels": {"team": team}}
    assert feasible(web("p", anti=[term(ZONE, ns_selector=selector, app="db")]), snapshot) == (
        free_of_db
    )
    assert feasible(web("q", affinity=[term(ZONE, ns_selector=selector, app="db")]), snapshot) == (
        near_db
    )


def test_pods_placed_in_the_snapshot_count_like_bound_ones() -> None:
    snapshot = world(HOSTS)
    target = snapshot.node("n1")
    assert target is not None
    snapshot.add(web("w1", anti=[term(HOST, app="web")]), target)

    assert feasible(web("p"), snapshot) == {"n2", "n3"}
    assert feasible(web("q", anti=[term(ZONE, app="web")]), snapshot) == {"n3"}


@pytest.mark.parametrize(
    ("incoming", "code", "reason"),
    [
        pytest.param(
            web("p", affinity=[term(ZONE, app="db")], anti=[term(HOST, app="web")]),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            AFFINITY_REASON,
            id="affinity is checked first and no preemption can fix it",
        ),
        pytest.param(
            web("p", anti=[term(HOST, app="web")]),
            Code.UNSCHEDULABLE,
            ANTI_AFFINITY_REASON,
            id="the pod's own anti-affinity comes next",
        ),
        pytest.param(
            web("p"),
            Code.UNSCHEDULABLE,
            EXISTING_ANTI_AFFINITY_REASON,
            id="the existing pods' anti-affinity comes last",
        ),
    ],
)
def test_rejections_carry_kube_schedulers_code_and_reason(
    incoming: PodInfo, code: Code, reason: str
) -> None:
    snapshot = world(
        [*HOSTS, node("n5", "c")],
        [
            web("w1", "n1", anti=[term(HOST, app="web")]),
            pod("db", labels={"app": "db"}, node_name="n5"),
        ],
    )
    status = verdict(incoming, snapshot, "n1")
    assert (status.code, status.reasons, status.plugin) == (code, (reason,), "InterPodAffinity")


def test_the_filter_works_out_what_it_needs_when_pre_filter_did_not_run() -> None:
    snapshot = world(HOSTS, [web("w1", "n1")])
    incoming = web("p", anti=[term(ZONE, app="web")])
    plugin = InterPodAffinity()
    state = CycleState()
    passed = {
        n.name for n in snapshot.nodes if plugin.filter(state, incoming, n, snapshot).is_success
    }
    assert passed == {"n3"}


# -- score -------------------------------------------------------------------------------------

ZONES = [node("n1", "a"), node("n2", "b"), node("n3", "c")]


def scores(
    incoming: PodInfo, pods: Sequence[PodInfo], nodes: Sequence[NodeInfo] = ZONES
) -> dict[str, int] | str:
    snapshot = world(nodes, pods)
    plugin = InterPodAffinity()
    state = CycleState()
    if plugin.pre_score(state, incoming, snapshot).code is Code.SKIP:
        return SKIP
    return plugin.score_nodes(state, incoming, snapshot.nodes, snapshot)


def db(name: str, node_name: str, **kwargs: Any) -> PodInfo:
    return pod(name, labels={"app": "db"}, node_name=node_name, **kwargs)


@pytest.mark.parametrize(
    ("incoming", "pods", "expected"),
    [
        pytest.param(web("p"), [db("d", "n1")], SKIP, id="a plain pod among plain pods is skipped"),
        pytest.param(
            web("p"),
            [db("d", "n1", preferred=[weighted(5, term(ZONE, app="cache"))])],
            SKIP,
            id="a pod that no existing term selects is skipped",
        ),
        pytest.param(
            web("p", preferred=[weighted(10, term(ZONE, app="db"))]),
            [db("d", "n1")],
            {"n1": 100, "n2": 0, "n3": 0},
            id="preferred affinity draws the pod to the matching pod's zone",
        ),
        pytest.param(
            web("p", preferred_anti=[weighted(10, term(ZONE, app="db"))]),
            [db("d", "n1")],
            {"n1": 0, "n2": 100, "n3": 100},
            id="preferred anti-affinity pushes it away",
        ),
        pytest.param(
            web("p", preferred=[weighted(10, term(ZONE, app="db"))]),
            [db("d1", "n1"), db("d2", "n1"), db("d3", "n2")],
            {"n1": 100, "n2": 50, "n3": 0},
            id="each matching pod adds the weight",
        ),
        pytest.param(
            web(
                "p",
                preferred=[weighted(10, term(ZONE, app="db"))],
                preferred_anti=[weighted(5, term(ZONE, app="cache"))],
            ),
            [db("d", "n1"), pod("c", labels={"app": "cache"}, node_name="n2")],
            {"n1": 100, "n2": 0, "n3": 33},
            id="scores are normalized between the lowest and the highest",
        ),
        pytest.param(
            web(
                "p",
                preferred=[weighted(100, term(ZONE, app="db")), weighted(29, term(ZONE, app="x"))],
            ),
            [db("d", "n1"), pod("x", labels={"app": "x"}, node_name="n2")],
            {"n1": 100, "n2": 28, "n3": 0},
            id="normalization truncates a floating point result as kube-scheduler does",
        ),
        pytest.param(
            web("p", preferred=[weighted(10, term(ZONE, app="db"))]),
            [db("d1", "n1"), db("d2", "n2"), db("d3", "n3")],
            {"n1": 0, "n2": 0, "n3": 0},
            id="equal raw scores all become 0",
        ),
        pytest.param(
            web("p"),
            [db("d", "n2", preferred=[weighted(7, term(ZONE, app="web"))])],
            {"n1": 0, "n2": 100, "n3": 0},
            id="an existing pod's preferred affinity draws matching pods to its zone",
        ),
        pytest.param(
            web("p"),
            [db("d", "n2", preferred_anti=[weighted(7, term(ZONE, app="web"))])],
            {"n1": 100, "n2": 0, "n3": 100},
            id="an existing pod's preferred anti-affinity pushes matching pods away",
        ),
        pytest.param(
            web("p"),
            [
                db("d", "n2", affinity=[term(ZONE, app="web")]),
                db("e", "n3", preferred=[weighted(2, term(ZONE, app="web"))]),
            ],
            {"n1": 0, "n2": 50, "n3": 100},
            id="an existing pod's required affinity counts with hardPodAffinityWeight 1",
        ),
    ],
)
def test_scores_follow_kube_schedulers_inter_pod_affinity_priority(
    incoming: PodInfo, pods: list[PodInfo], expected: dict[str, int] | str
) -> None:
    assert scores(incoming, pods) == expected


def test_a_pod_with_preferred_terms_is_scored_even_when_nothing_matches_yet() -> None:
    assert scores(web("p", preferred=[weighted(1, term(ZONE, app="db"))]), []) == {
        "n1": 0,
        "n2": 0,
        "n3": 0,
    }


def test_scoring_is_normalized_over_the_nodes_it_is_given() -> None:
    snapshot = world(ZONES, [db("d1", "n1"), db("d2", "n1"), db("d3", "n2")])
    incoming = web("p", preferred=[weighted(10, term(ZONE, app="db"))])
    plugin = InterPodAffinity()
    state = CycleState()
    assert plugin.pre_score(state, incoming, snapshot).is_success
    given = [n for n in snapshot.nodes if n.name != "n1"]
    assert plugin.score_nodes(state, incoming, given, snapshot) == {"n2": 100, "n3": 0}


def test_scores_see_pods_placed_after_pre_score() -> None:
    snapshot = world(ZONES, [db("d", "n2", preferred=[weighted(7, term(ZONE, app="web"))])])
    incoming = web("p")
    plugin = InterPodAffinity()
    state = CycleState()
    assert plugin.pre_score(state, incoming, snapshot).is_success
    target = snapshot.node("n3")
    assert target is not None
    snapshot.add(db("e", "", affinity=[term(ZONE, app="web")]), target)
    snapshot.add(db("f", "", affinity=[term(ZONE, app="web")]), target)
    assert plugin.score_nodes(state, incoming, snapshot.nodes, snapshot) == {
        "n1": 0,
        "n2": 100,
        "n3": 28,
    }


# -- through the runner ------------------------------------------------------------------------


def runner() -> PodRunner:
    plugin = InterPodAffinity()
    return PodRunner(
        pre_filters=[plugin],
        filters=[Fit(), plugin],
        pre_scores=[plugin],
        cluster_scores=[plugin],
        rng=random.Random(7),
    )


def test_the_runner_explains_anti_affinity_like_kube_scheduler() -> None:
    snapshot = world(HOSTS, [web("w1", "n1"), web("w2", "n2"), web("w3", "n3")])
    result = runner().place(web("p", anti=[term(HOST, app="web")]), snapshot)
    assert result.node is None
    assert result.message == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
    )


def zone_of(snapshot: Snapshot, name: str | None) -> str | None:
    target = snapshot.node(name or "")
    return None if target is None or target.info is None else target.info.labels[ZONE]


def test_the_runner_spreads_a_gang_with_anti_affinity_and_joins_one_with_affinity() -> None:
    snapshot = world([node(f"n{i}", "abc"[i % 3]) for i in range(6)])
    run = runner()
    spread = [web(f"s{i}", anti=[term(ZONE, app="web")]) for i in range(4)]
    zones = [zone_of(snapshot, run.place(member, snapshot).node) for member in spread]
    assert set(zones[:3]) == {"a", "b", "c"}
    assert zones[3] is None

    group = [pod(f"g{i}", labels={"app": "db"}, affinity=[term(ZONE, app="db")]) for i in range(5)]
    joined = Counter(zone_of(snapshot, run.place(member, snapshot).node) for member in group)
    assert list(joined.values()) == [5]
    assert None not in joined
