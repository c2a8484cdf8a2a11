"""SchedulerCache: every live pod counts once, on the node it is bound to or assumed on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.model.ports import HostPort
from koordgang.state import cache as cache_module
from koordgang.state.cache import SchedulerCache

GPU = "nvidia.com/gpu"


def node_obj(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
    resource_version: str = "1",
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "metadata": {
            "name": name,
            "labels": labels or {},
            "resourceVersion": resource_version,
        },
        "spec": spec,
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def node(name: str, **kwargs: Any) -> NodeInfo:
    return parse_node(node_obj(name, **kwargs))


def pod(
    name: str,
    *,
    cpu: str | None = "500m",
    memory: str | None = None,
    node_name: str = "",
    phase: str = "Running",
    uid: str | None = None,
    extra: dict[str, str] | None = None,
) -> PodInfo:
    requests: dict[str, str] = dict(extra or {})
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    spec: dict[str, Any] = {
        "schedulerName": "koord-scheduler",
        "containers": [{"name": "c", "resources": {"requests": requests}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "team-a", "uid": uid or f"uid-{name}"},
            "spec": spec,
            "status": {"phase": phase},
        }
    )


def cpu_on(cache: SchedulerCache, node_name: str) -> int:
    state = cache.node(node_name)
    return 0 if state is None else state.requested.get("cpu", 0)


def pods_on(cache: SchedulerCache, node_name: str) -> int:
    state = cache.node(node_name)
    return 0 if state is None else state.pod_count


def two_node_cache() -> SchedulerCache:
    cache = SchedulerCache()
    cache.upsert_node(node("n1"))
    cache.upsert_node(node("n2"))
    return cache


# -- a pod counts once -----------------------------------------------------------------------

PENDING = pod("p", node_name="")
BOUND_N1 = pod("p", node_name="n1")

Step = Callable[[SchedulerCache], object]

_ORDERS: list[tuple[str, list[Step]]] = [
    ("bound only", [lambda c: c.upsert_pod(BOUND_N1)]),
    ("bound twice", [lambda c: c.upsert_pod(BOUND_N1), lambda c: c.upsert_pod(BOUND_N1)]),
    ("assumed only", [lambda c: c.assume(PENDING, "n1")]),
    ("assumed twice", [lambda c: c.assume(PENDING, "n1"), lambda c: c.assume(PENDING, "n1")]),
    (
        "seen pending, assumed, then bound",
        [
            lambda c: c.upsert_pod(PENDING),
            lambda c: c.assume(PENDING, "n1"),
            lambda c: c.upsert_pod(BOUND_N1),
        ],
    ),
    (
        "assumed before the informer saw it, then bound",
        [lambda c: c.assume(PENDING, "n1"), lambda c: c.upsert_pod(BOUND_N1)],
    ),
    (
        "bound, then assumed by a late cycle",
        [lambda c: c.upsert_pod(BOUND_N1), lambda c: c.assume(PENDING, "n1")],
    ),
    (
        "assumed, a pending update, then bound",
        [
            lambda c: c.assume(PENDING, "n1"),
            lambda c: c.upsert_pod(PENDING),
            lambda c: c.upsert_pod(BOUND_N1),
        ],
    ),
    (
        "bound, assumed, bound again, forgotten",
        [
            lambda c: c.upsert_pod(BOUND_N1),
            lambda c: c.assume(PENDING, "n1"),
            lambda c: c.upsert_pod(BOUND_N1),
            lambda c: c.forget("uid-p"),
        ],
    ),
]


@pytest.mark.parametrize("steps", [s for _, s in _ORDERS], ids=[i for i, _ in _ORDERS])
def test_a_pod_counts_once_whether_seen_bound_assumed_or_both(steps: list[Step]) -> None:
    cache = two_node_cache()
    for step in steps:
        step(cache)
    assert cpu_on(cache, "n1") == 500
    assert pods_on(cache, "n1") == 1
    assert cpu_on(cache, "n2") == 0
    assert cache.node_of("uid-p") == "n1"


def test_an_assumed_pod_shown_bound_elsewhere_counts_only_on_the_real_node() -> None:
    cache = two_node_cache()
    cache.upsert_pod(PENDING)
    cache.assume(PENDING, "n1")
    assert (cpu_on(cache, "n1"), cpu_on(cache, "n2")) == (500, 0)

    cache.upsert_pod(pod("p", node_name="n2"))

    assert (cpu_on(cache, "n1"), cpu_on(cache, "n2")) == (0, 500)
    assert (pods_on(cache, "n1"), pods_on(cache, "n2")) == (0, 1)
    assert not cache.is_assumed("uid-p")
    assert cache.node_of("uid-p") == "n2"


def test_a_pending_update_of_an_assumed_pod_keeps_the_assumption() -> None:
    cache = two_node_cache()
    cache.assume(PENDING, "n1")
    cache.upsert_pod(PENDING)
    assert cache.is_assumed("uid-p")
    assert cache.node_of("uid-p") == "n1"
    assert cpu_on(cache, "n1") == 500


def test_forget_releases_the_room_and_is_idempotent() -> None:
    cache = two_node_cache()
    cache.upsert_pod(PENDING)
    cache.assume(PENDING, "n1")
    cache.forget("uid-p")
    cache.forget("uid-p")
    cache.forget("uid-never-seen")
    assert cpu_on(cache, "n1") == 0
    assert pods_on(cache, "n1") == 0
    assert cache.node_of("uid-p") is None
    assert not cache.is_assumed("uid-p")
    assert cache.pod("uid-p") == PENDING


def test_forget_does_not_release_a_pod_the_api_server_shows_bound() -> None:
    cache = two_node_cache()
    cache.assume(PENDING, "n1")
    cache.upsert_pod(BOUND_N1)
    cache.forget("uid-p")
    assert cpu_on(cache, "n1") == 500


@pytest.mark.parametrize(
    ("phase", "counted_cpu", "counted_pods"),
    [
        ("Pending", 500, 1),
        ("Running", 500, 1),
        ("Unknown", 500, 1),
        ("Succeeded", 0, 0),
        ("Failed", 0, 0),
    ],
)
def test_only_non_terminal_bound_pods_take_room(
    phase: str, counted_cpu: int, counted_pods: int
) -> None:
    cache = two_node_cache()
    cache.upsert_pod(pod("p", node_name="n1", phase=phase))
    assert cpu_on(cache, "n1") == counted_cpu
    assert pods_on(cache, "n1") == counted_pods


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_pod_that_terminates_frees_its_room(phase: str) -> None:
    cache = two_node_cache()
    cache.upsert_pod(pod("p", node_name="n1"))
    cache.upsert_pod(pod("q", node_name="n1", cpu="1"))
    assert cpu_on(cache, "n1") == 1500

    cache.upsert_pod(pod("p", node_name="n1", phase=phase))

    assert cpu_on(cache, "n1") == 1000
    assert pods_on(cache, "n1") == 1
    assert cache.node_of("uid-p") is None
    assert cache.pod("uid-p") is not None  # still known, just not counted


def test_an_assumed_pod_that_fails_before_binding_takes_no_room() -> None:
    cache = two_node_cache()
    cache.assume(PENDING, "n1")
    cache.upsert_pod(pod("p", phase="Failed"))
    assert cpu_on(cache, "n1") == 0


def test_removing_a_pod_releases_its_room_and_its_assumption() -> None:
    cache = two_node_cache()
    cache.upsert_pod(BOUND_N1)
    cache.upsert_pod(pod("q"))
    cache.assume(pod("q"), "n2")

    assert cache.remove_pod("uid-p") == BOUND_N1
    assert cache.remove_pod("uid-q") == pod("q")
    assert cache.remove_pod("uid-q") is None

    assert (cpu_on(cache, "n1"), cpu_on(cache, "n2")) == (0, 0)
    assert not cache.is_assumed("uid-q")
    assert cache.pod_count() == 0


def test_a_resized_bound_pod_is_counted_with_its_new_requests() -> None:
    cache = two_node_cache()
    cache.upsert_pod(pod("p", node_name="n1", cpu="500m"))
    cache.upsert_pod(pod("p", node_name="n1", cpu="2"))
    assert cpu_on(cache, "n1") == 2000
    assert pods_on(cache, "n1") == 1


def test_upsert_pod_returns_the_previous_version() -> None:
    cache = two_node_cache()
    assert cache.upsert_pod(PENDING) is None
    assert cache.upsert_pod(BOUND_N1) == PENDING


# -- nodes -----------------------------------------------------------------------------------


def test_deleting_a_node_with_pods_keeps_their_usage_and_re_adding_restores_it() -> None:
    cache = two_node_cache()
    cache.upsert_pod(pod("p", node_name="n1", cpu="1"))
    cache.assume(pod("q"), "n1")

    cache.remove_node("n1")

    assert [s.name for s in cache.nodes()] == ["n2"]
    placeholder = cache.node("n1")
    assert placeholder is not None
    assert placeholder.info is None
    assert placeholder.requested == {"cpu": 1500}
    assert placeholder.pod_count == 2

    cache.upsert_node(node("n1"))

    assert [s.name for s in cache.nodes()] == ["n1", "n2"]
    restored = cache.node("n1")
    assert restored is not None and restored.info is not None
    assert restored.requested == {"cpu": 1500}
    assert restored.pod_count == 2


def test_deleting_an_empty_node_forgets_it() -> None:
    cache = two_node_cache()
    cache.remove_node("n1")
    cache.remove_node("n1")
    cache.remove_node("never-seen")
    assert cache.node("n1") is None
    assert [s.name for s in cache.nodes()] == ["n2"]


def test_a_placeholder_disappears_when_its_last_pod_goes() -> None:
    cache = two_node_cache()
    cache.upsert_pod(pod("p", node_name="n1"))
    cache.remove_node("n1")
    cache.remove_pod("uid-p")
    assert cache.node("n1") is None


def test_pods_bound_to_a_node_not_seen_yet_count_once_it_appears() -> None:
    cache = SchedulerCache()
    cache.upsert_pod(pod("p", node_name="late", cpu="3"))
    assert cache.nodes() == []

    cache.upsert_node(node("late"))

    [state] = cache.nodes()
    assert state.name == "late"
    assert state.requested == {"cpu": 3000}
    assert state.free("cpu") == 1000
    assert state.free("pods") == 109


def test_nodes_are_listed_by_name() -> None:
    cache = SchedulerCache()
    for name in ("c", "a", "b"):
        cache.upsert_node(node(name))
    assert [s.name for s in cache.nodes()] == ["a", "b", "c"]


def test_replace_nodes_removes_nodes_missing_from_the_list_but_keeps_pod_usage() -> None:
    cache = SchedulerCache()
    for name in ("a", "b", "c"):
        cache.upsert_node(node(name))
    cache.upsert_pod(pod("p", node_name="b"))

    cache.replace_nodes([node("c"), node("d")])

    assert [s.name for s in cache.nodes()] == ["c", "d"]
    assert cache.node("a") is None
    placeholder = cache.node("b")
    assert placeholder is not None and placeholder.info is None
    assert placeholder.requested == {"cpu": 500}


def test_replace_pods_removes_vanished_pods_and_their_usage() -> None:
    cache = two_node_cache()
    cache.upsert_pod(pod("stays", node_name="n1", cpu="1"))
    cache.upsert_pod(pod("goes", node_name="n1", cpu="2"))
    cache.upsert_pod(pod("goes-too", node_name="n2", cpu="1"))

    gone = cache.replace_pods([pod("stays", node_name="n1", cpu="1"), pod("new", node_name="n2")])

    assert sorted(p.name for p in gone) == ["goes", "goes-too"]
    assert sorted(p.name for p in cache.pods()) == ["new", "stays"]
    assert (cpu_on(cache, "n1"), cpu_on(cache, "n2")) == (1000, 500)
    assert (pods_on(cache, "n1"), pods_on(cache, "n2")) == (1, 1)


def test_replace_pods_applies_the_listed_versions() -> None:
    cache = two_node_cache()
    cache.upsert_pod(PENDING)
    cache.assume(PENDING, "n1")

    gone = cache.replace_pods([pod("p", node_name="n2")])

    assert gone == []
    assert (cpu_on(cache, "n1"), cpu_on(cache, "n2")) == (0, 500)
    assert not cache.is_assumed("uid-p")


# -- node_generation -------------------------------------------------------------------------

_BASE: dict[str, Any] = {"labels": {"zone": "a"}, "resource_version": "1"}


@pytest.mark.parametrize(
    ("change", "spec_changed"),
    [
        ({"resource_version": "2"}, False),
        ({}, False),
        ({"labels": {"zone": "b"}, "resource_version": "2"}, True),
        ({"labels": {"zone": "a", "gpu": "v100"}}, True),
        ({"cpu": "8"}, True),
        ({"pods": "10"}, True),
        ({"extra": {GPU: "8"}}, True),
        ({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}, True),
        ({"unschedulable": True}, True),
        ({"ready": False}, True),
    ],
    ids=[
        "resourceVersion only",
        "identical",
        "label value",
        "label added",
        "allocatable cpu",
        "allocatable pods",
        "extended resource",
        "taint",
        "cordoned",
        "not ready",
    ],
)
def test_node_generation_and_the_nodes_version_change_on_spec_changes_only(
    change: dict[str, Any], spec_changed: bool
) -> None:
    cache = SchedulerCache()
    cache.upsert_node(node("n1", **_BASE))
    before = cache.node_generation
    position = cache.change_position
    state = cache.node("n1")
    assert state is not None
    version = state.version

    updated = node("n1", **{**_BASE, **change})
    assert cache.upsert_node(updated) is spec_changed

    assert (cache.node_generation != before) is spec_changed
    assert (state.version != version) is spec_changed
    assert cache.changes_since(position) == (["n1"] if spec_changed else [])
    assert cache.node("n1") is state
    assert state.info == updated  # the newest version is kept either way


def test_node_generation_changes_when_a_node_appears_or_goes() -> None:
    cache = SchedulerCache()
    generations = [cache.node_generation]
    cache.upsert_node(node("n1"))
    generations.append(cache.node_generation)
    cache.remove_node("n1")
    generations.append(cache.node_generation)
    assert generations[0] < generations[1] < generations[2]


def test_a_placeholder_becoming_a_real_node_is_a_spec_change() -> None:
    cache = SchedulerCache()
    cache.upsert_pod(pod("p", node_name="n1"))
    before = cache.node_generation
    assert cache.upsert_node(node("n1")) is True
    assert cache.node_generation > before


def test_pod_events_do_not_change_node_generation() -> None:
    cache = two_node_cache()
    before = cache.node_generation
    cache.upsert_pod(pod("p", node_name="n1"))
    cache.assume(pod("q"), "n2")
    cache.forget("uid-q")
    cache.remove_pod("uid-p")
    assert cache.node_generation == before


def test_node_versions_are_unique_across_nodes_and_grow_with_every_change() -> None:
    cache = two_node_cache()
    n1, n2 = cache.node("n1"), cache.node("n2")
    assert n1 is not None and n2 is not None
    seen = [n1.version, n2.version]
    cache.upsert_pod(pod("p", node_name="n1"))
    seen.append(n1.version)
    cache.assume(pod("q"), "n2")
    seen.append(n2.version)
    cache.forget("uid-q")
    seen.append(n2.version)
    cache.upsert_node(node("n1", cpu="8"))
    seen.append(n1.version)
    assert len(set(seen)) == len(seen)
    assert seen[2:] == sorted(seen[2:])
    assert min(seen[2:]) > max(seen[:2])


@pytest.mark.parametrize(
    "step",
    [
        lambda c: c.upsert_pod(pod("p")),
        lambda c: c.upsert_pod(pod("b", node_name="n1")),
        lambda c: c.forget("uid-never-seen"),
        lambda c: c.remove_pod("uid-never-seen"),
        lambda c: c.upsert_node(node("n1", resource_version="2")),
    ],
    ids=[
        "a pending pod",
        "the same bound pod again",
        "forget of an unknown pod",
        "removal of an unknown pod",
        "a resourceVersion-only node update",
    ],
)
def test_events_that_change_no_usage_or_spec_leave_versions_alone(step: Step) -> None:
    cache = two_node_cache()
    cache.upsert_pod(pod("b", node_name="n1"))
    versions = {name: state.version for name in ("n1", "n2") if (state := cache.node(name))}
    position = cache.change_position

    step(cache)

    assert cache.change_position == position
    assert {n: s.version for n in ("n1", "n2") if (s := cache.node(n))} == versions


# -- the change log --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "changed"),
    [
        ([lambda c: c.upsert_pod(BOUND_N1)], ["n1"]),
        ([lambda c: c.assume(PENDING, "n2")], ["n2"]),
        ([lambda c: c.assume(PENDING, "n2"), lambda c: c.forget("uid-p")], ["n2", "n2"]),
        # Assumed on n2, seen bound on n1: it leaves n2, then counts on n1.
        ([lambda c: c.assume(PENDING, "n2"), lambda c: c.upsert_pod(BOUND_N1)], ["n2", "n2", "n1"]),
        ([lambda c: c.upsert_pod(BOUND_N1), lambda c: c.remove_pod("uid-p")], ["n1", "n1"]),
        (
            [
                lambda c: c.upsert_pod(BOUND_N1),
                lambda c: c.upsert_pod(pod("p", node_name="n1", phase="Succeeded")),
            ],
            ["n1", "n1"],
        ),
        ([lambda c: c.upsert_node(node("n2", cpu="16"))], ["n2"]),
        ([lambda c: c.remove_node("n1")], ["n1"]),
        # A pod bound to a node not known yet counts on a placeholder, and that is a change.
        ([lambda c: c.upsert_pod(pod("p", node_name="late"))], ["late"]),
    ],
    ids=[
        "bound",
        "assumed",
        "assumed then forgotten",
        "assumed then bound elsewhere",
        "bound then deleted",
        "bound then terminated",
        "node spec",
        "node removed",
        "placeholder",
    ],
)
def test_the_change_log_names_every_node_whose_usage_or_spec_changed_in_order(
    steps: list[Step], changed: list[str]
) -> None:
    cache = two_node_cache()
    position = cache.change_position

    for step in steps:
        step(cache)

    assert cache.changes_since(position) == changed
    assert cache.change_position == position + len(changed)
    assert cache.changes_since(cache.change_position) == []


def test_the_change_log_forgets_its_oldest_half_when_full_but_positions_keep_counting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cache_module, "_CHANGE_LOG_MAX", 10)
    cache = SchedulerCache()  # pods on nodes not seen yet: only the pods' changes are logged
    start = cache.change_position
    for index in range(6):
        cache.upsert_pod(pod(f"p{index}", node_name="n1"))
        cache.upsert_pod(pod(f"q{index}", node_name="n2"))
    # The 11th change overflowed the log of 10: it kept the newest 5, then took the 12th.

    assert cache.change_position == start + 12
    assert cache.changes_since(start) is None
    assert cache.changes_since(start + 5) is None
    assert cache.changes_since(start + 6) == ["n1", "n2", "n1", "n2", "n1", "n2"]
    assert cache.changes_since(start + 11) == ["n2"]


# -- indexes -----------------------------------------------------------------------------------

ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


def spread_pod(
    name: str, namespace: str, *, node_name: str = "", affinity: dict[str, Any] | None = None
) -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node_name:
        spec["nodeName"] = node_name
    if affinity is not None:
        spec["affinity"] = affinity
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"},
        }
    )


def names_in(cache: SchedulerCache, namespace: str) -> list[str]:
    return sorted(p.name for p in cache.pods_in_namespace(namespace))


def test_pods_are_indexed_by_namespace_whether_bound_pending_or_assumed() -> None:
    cache = two_node_cache()
    cache.upsert_pod(spread_pod("bound", "a", node_name="n1"))
    cache.upsert_pod(spread_pod("pending", "a"))
    cache.assume(spread_pod("assumed", "b"), "n2")

    assert names_in(cache, "a") == ["bound", "pending"]
    assert names_in(cache, "b") == ["assumed"]
    assert names_in(cache, "nobody") == []
    assert sorted(cache.namespaces()) == ["a", "b"]


def test_a_namespace_leaves_the_index_with_its_last_pod() -> None:
    cache = two_node_cache()
    cache.upsert_pod(spread_pod("x", "a"))
    cache.upsert_pod(spread_pod("y", "a", node_name="n1"))

    cache.remove_pod("uid-a-x")
    assert names_in(cache, "a") == ["y"]
    cache.replace_pods([])

    assert names_in(cache, "a") == []
    assert list(cache.namespaces()) == []


def test_only_pods_with_pod_affinity_terms_are_in_that_index_and_updates_move_them() -> None:
    cache = two_node_cache()
    cache.upsert_pod(spread_pod("plain", "a", node_name="n1"))
    cache.upsert_pod(spread_pod("picky", "a", node_name="n1", affinity=ANTI_AFFINITY))
    cache.upsert_pod(spread_pod("picky-too", "b", affinity=ANTI_AFFINITY))
    assert sorted(p.name for p in cache.pods_with_pod_affinity()) == ["picky", "picky-too"]

    cache.upsert_pod(spread_pod("picky", "a", node_name="n1"))  # its terms were dropped
    cache.upsert_pod(spread_pod("plain", "a", node_name="n1", affinity=ANTI_AFFINITY))
    cache.remove_pod("uid-b-picky-too")

    assert [p.name for p in cache.pods_with_pod_affinity()] == ["plain"]


# -- host ports ------------------------------------------------------------------------------


def test_host_ports_of_bound_and_assumed_pods_count_on_their_node() -> None:
    cache = two_node_cache()
    web = parse_pod(
        {
            "metadata": {"name": "web", "namespace": "a", "uid": "uid-web"},
            "spec": {
                "nodeName": "n1",
                "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
            },
            "status": {"phase": "Running"},
        }
    )
    cache.upsert_pod(web)
    n1 = cache.node("n1")
    assert n1 is not None
    assert n1.ports == {HostPort("TCP", "0.0.0.0", 8080): 1}

    cache.remove_pod("uid-web")

    assert n1.ports == {}


def test_the_lowest_priority_of_counted_pods_follows_binds_assumptions_and_removals() -> None:
    cache = SchedulerCache()
    cache.upsert_node(node("n1"))
    assert cache.lowest_priority() is None

    def with_priority(name: str, priority: int, node_name: str = "") -> PodInfo:
        spec: dict[str, Any] = {"priority": priority, "containers": [{"name": "c"}]}
        if node_name:
            spec["nodeName"] = node_name
        return parse_pod({"metadata": {"name": name, "uid": name}, "spec": spec})

    cache.upsert_pod(with_priority("high", 10, "n1"))
    cache.upsert_pod(with_priority("pending-low", 1))  # not on a node: does not count
    assert cache.lowest_priority() == 10
    cache.assume(with_priority("pending-low", 1), "n1")
    assert cache.lowest_priority() == 1
    cache.forget("pending-low")
    assert cache.lowest_priority() == 10
    cache.remove_pod("high")
    assert cache.lowest_priority() is None
