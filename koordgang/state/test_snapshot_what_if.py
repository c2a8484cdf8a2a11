"""Snapshot as a what-if: copy-on-write forks, removals (victims), commits and staleness.

A fork sees its parent; the parent sees the fork only once it commits; anything dropped leaves no
trace, in the parent or in the cache. These tests compare whole views before and after, so that
a leak anywhere (usage, pod lists, indexes, versions, the change log) shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.state.cache import SchedulerCache
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Placement, Snapshot, StaleSnapshotError
from koordgang.testing.builders import node as make_node
from koordgang.testing.builders import pod as make_pod

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


def node(name: str, cpu: str = "4") -> NodeInfo:
    return parse_node(
        {
            "metadata": {"name": name},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "5"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def pod(
    name: str,
    node_name: str = "",
    *,
    cpu: str = "1",
    namespace: str = "ns",
    affinity: dict[str, Any] | None = None,
) -> PodInfo:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if affinity is not None:
        spec["affinity"] = affinity
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"},
        }
    )


#: Bound in the cache: r1 on a (with pod anti-affinity), r2 on b. ``waiter`` is known, pending.
R1 = pod("r1", "a", affinity=ANTI_AFFINITY)
R2 = pod("r2", "b", cpu="2")
WAITER = pod("waiter")
NAMES = ("r1", "r2", "waiter", "x", "y", "z", "p1", "p2", "p3", "p4")


def setup() -> tuple[SchedulerCache, Snapshot, NodeState, NodeState, NodeState]:
    cache = SchedulerCache()
    for name in ("a", "b", "c"):
        cache.upsert_node(node(name))
    for known in (R1, R2, WAITER):
        cache.upsert_pod(known)
    root = Snapshot(cache)
    a, b, c = root.nodes
    return cache, root, a, b, c


def view(snapshot: Snapshot) -> dict[str, Any]:
    """Everything a plugin can read of a snapshot (its log aside, see ``test_..._logs_...``)."""
    nodes = snapshot.nodes
    return {
        "free": {n.name: (snapshot.free(n, "cpu"), snapshot.used(n, "cpu")) for n in nodes},
        "pods": {n.name: snapshot.pod_count(n) for n in nodes},
        "pods_on": {n.name: sorted(p.name for p in snapshot.pods_on(n)) for n in nodes},
        "node_of": {name: snapshot.node_of(f"uid-{name}") for name in NAMES},
        "versions": {n.name: snapshot.version(n.name) for n in nodes},
        "touched": sorted(snapshot.touched()),
        "placements": snapshot.placements,
        "removals": snapshot.removals,
        "in_namespace": sorted((p.name, n) for p, n in snapshot.pods_in_namespace("ns")),
        "with_affinity": sorted((p.name, n) for p, n in snapshot.pods_with_pod_affinity()),
    }


def what_pods_see(snapshot: Snapshot) -> dict[str, Any]:
    """The view without versions and the list of touched nodes (which record history)."""
    seen = view(snapshot)
    del seen["versions"], seen["touched"]
    return seen


def cache_view(cache: SchedulerCache) -> dict[str, Any]:
    states = {name: cache.node(name) for name in ("a", "b", "c")}
    return {
        "nodes": {
            name: (dict(s.requested), s.pod_count, sorted(s.pods), s.version)
            for name, s in states.items()
            if s is not None
        },
        "position": cache.change_position,
        "node_of": {name: cache.node_of(f"uid-{name}") for name in NAMES},
        "assumed": [name for name in NAMES if cache.is_assumed(f"uid-{name}")],
        "pods": sorted(p.name for p in cache.pods()),
    }


# -- forks see their parent; parents see a fork once it commits --------------------------------


def test_a_fork_sees_what_its_parent_placed_and_removed() -> None:
    _, root, a, _, _ = setup()
    root.add(pod("x"), a)
    root.remove(R2)

    fork = root.fork()

    assert view(fork) == view(root)
    assert fork.node_of("uid-x") == "a"
    assert fork.node_of("uid-r2") is None
    assert fork.depth == 1
    assert fork.fork().depth == 2


def test_the_parent_sees_a_forks_changes_only_once_the_fork_commits() -> None:
    _, root, a, b, _ = setup()
    root.add(pod("x"), a)
    before = view(root)
    fork = root.fork()
    fork.add(pod("y", cpu="2"), b)
    fork.remove(R1)
    fork_view = view(fork)
    assert fork_view != before

    assert view(root) == before

    fork.commit()

    assert view(root) == fork_view
    assert root.free(b, "cpu") == 0
    assert root.removals == [Placement(R1, "a")]
    assert root.placements == [Placement(pod("x"), "a"), Placement(pod("y", cpu="2"), "b")]


def test_sibling_forks_do_not_see_each_other() -> None:
    _, root, a, _, _ = setup()
    left, right = root.fork(), root.fork()

    left.add(pod("x", cpu="3"), a)

    assert right.free(a, "cpu") == 3000
    assert right.node_of("uid-x") is None
    right.add(pod("y", cpu="3"), a)  # room that left took is still free here
    assert left.free(a, "cpu") == 0
    assert right.free(a, "cpu") == 0


ForkAction = Callable[[Snapshot, NodeState, NodeState, NodeState], object]


def _nested_commit(fork: Snapshot, a: NodeState, b: NodeState, c: NodeState) -> None:
    inner = fork.fork()
    inner.add(pod("z"), c)
    inner.remove(R1)
    inner.commit()


FORK_ACTIONS: list[tuple[str, ForkAction]] = [
    ("place a pod", lambda f, a, b, c: f.add(pod("y"), b)),
    ("place on a node the parent changed", lambda f, a, b, c: f.add(pod("y"), a)),
    ("remove a cache pod", lambda f, a, b, c: f.remove(R1)),
    ("remove the parent's placement", lambda f, a, b, c: f.remove(pod("x"))),
    ("bring back the parent's victim", lambda f, a, b, c: f.add(R2, b)),
    ("commit a nested fork into it", _nested_commit),
]


@pytest.mark.parametrize("action", [a for _, a in FORK_ACTIONS], ids=[i for i, _ in FORK_ACTIONS])
def test_dropping_a_fork_leaves_its_parent_and_the_cache_exactly_as_they_were(
    action: ForkAction,
) -> None:
    cache, root, a, b, c = setup()
    root.add(pod("x"), a)
    root.remove(R2)
    parent_before, cache_before = view(root), cache_view(cache)
    log_before = root.log_since(0)

    fork = root.fork()
    action(fork, a, b, c)
    assert view(fork) != parent_before  # the action did change the fork
    del fork

    assert view(root) == parent_before
    assert root.log_since(0) == log_before
    assert cache_view(cache) == cache_before
    # The parent was never changed, so it is still good to use.
    root.check()
    root.add(pod("z"), c)


def test_dropping_a_root_leaves_the_cache_exactly_as_it_was() -> None:
    cache, root, a, _, c = setup()
    before = cache_view(cache)

    root.add(pod("x"), a)
    root.remove(R2)
    fork = root.fork()
    fork.add(pod("y"), c)
    fork.remove(R1)
    fork.commit()
    del root, fork

    assert cache_view(cache) == before
    assert before["assumed"] == []
    assert what_pods_see(Snapshot(cache)) == what_pods_see(setup()[1])


# -- removals ----------------------------------------------------------------------------------


def test_removing_a_cache_pod_frees_its_room_and_hides_it_from_every_read() -> None:
    cache, root, a, _, _ = setup()
    assert ("r1", "a") in view(root)["with_affinity"]

    root.remove(R1)

    assert root.free(a, "cpu") == 4000
    assert root.used(a, "cpu") == 0
    assert root.pod_count(a) == 0
    assert list(root.pods_on(a)) == []
    assert root.node_of("uid-r1") is None
    seen = view(root)
    assert "r1" not in {name for name, _ in seen["in_namespace"]}
    assert seen["with_affinity"] == []
    assert root.removals == [Placement(R1, "a")]
    assert root.placements == []
    # The cache still counts it: victims go when the API server deletes them.
    assert cache.node_of("uid-r1") == "a"
    assert a.pod_count == 1


def test_removing_takes_the_requests_the_cache_counted_whatever_version_is_given() -> None:
    _, root, a, _, _ = setup()
    root.remove(pod("r1", "a", cpu="3"))  # a stale or newer copy with other requests
    assert root.free(a, "cpu") == 4000
    assert root.removals == [Placement(R1, "a")]


def test_adding_a_removed_pod_back_on_its_node_restores_it() -> None:
    _, root, a, _, _ = setup()
    before = what_pods_see(root)
    root.remove(R1)

    root.add(R1, a)

    assert what_pods_see(root) == before
    assert root.node_of("uid-r1") == "a"
    assert root.removals == []
    assert root.placements == []  # a reprieve, not a placement: nothing to commit


def test_a_fork_can_bring_back_what_its_parent_removed_and_commit_that() -> None:
    cache, root, _, b, _ = setup()
    root.remove(R2)
    fork = root.fork()

    fork.add(R2, b)
    fork.commit()

    assert root.removals == []
    assert root.node_of("uid-r2") == "b"
    assert root.commit() == []  # nothing removed is left: the root may commit
    assert cache.node_of("uid-r2") == "b"


def test_a_removed_pod_cannot_come_back_on_another_node() -> None:
    _, root, _, b, _ = setup()
    root.remove(R1)
    before = view(root)

    with pytest.raises(ValueError, match="ns/r1 was removed from a; it can only come back there"):
        root.add(R1, b)

    assert view(root) == before


@pytest.mark.parametrize(
    ("prepare", "target"),
    [
        (lambda s, a: None, R1),
        (lambda s, a: s.add(pod("x"), a), pod("x")),
        (lambda s, a: s.add(WAITER, a), WAITER),
    ],
    ids=["bound in the cache", "placed in the snapshot", "a pending cache pod placed"],
)
def test_adding_a_pod_that_is_already_on_a_node_raises(
    prepare: Callable[[Snapshot, NodeState], object], target: PodInfo
) -> None:
    _, root, a, _, c = setup()
    prepare(root, a)
    before = view(root)

    with pytest.raises(ValueError, match=f"{target.key} is already on a node"):
        root.add(target, c)

    assert view(root) == before


@pytest.mark.parametrize(
    ("prepare", "target"),
    [
        (lambda s: None, WAITER),
        (lambda s: None, pod("stranger")),
        (lambda s: s.remove(R1), R1),
    ],
    ids=["pending in the cache", "unknown", "already removed"],
)
def test_removing_a_pod_that_is_on_no_node_raises(
    prepare: Callable[[Snapshot], object], target: PodInfo
) -> None:
    _, root, _, _, _ = setup()
    prepare(root)
    before = view(root)

    with pytest.raises(ValueError, match=f"{target.key} is on no node in this snapshot"):
        root.remove(target)

    assert view(root) == before


def test_removing_a_placement_undoes_it_without_recording_a_victim() -> None:
    _, root, a, _, _ = setup()
    before = what_pods_see(root)
    root.add(pod("x"), a)

    root.remove(pod("x"))

    assert what_pods_see(root) == before
    assert root.removals == []


# -- commits -----------------------------------------------------------------------------------


def test_committing_a_root_with_removals_raises_and_assumes_nothing() -> None:
    cache, root, a, _, _ = setup()
    before = cache_view(cache)
    root.add(pod("x"), a)
    root.remove(R2)

    with pytest.raises(ValueError, match=r"removed pods cannot be committed \(ns/r2\)"):
        root.commit()

    assert cache_view(cache) == before
    assert not cache.is_assumed("uid-x")


def test_a_fork_with_removals_commits_them_into_its_parent() -> None:
    _, root, _, _, _ = setup()
    fork = root.fork()
    fork.remove(R2)

    assert fork.commit() == []

    assert root.removals == [Placement(R2, "b")]


def test_commit_hands_placements_over_in_the_order_they_were_made() -> None:
    cache, root, a, b, c = setup()
    p1, p2, p3, p4 = pod("p1"), pod("p2"), pod("p3"), pod("p4")
    root.add(p1, a)
    fork = root.fork()
    fork.add(p2, a)
    fork.add(p3, b)
    inner = fork.fork()
    inner.add(p4, c)
    inner.commit()
    # Undone and made again: it now comes last.
    fork.remove(p2)
    fork.add(p2, c)
    fork.commit()
    position = cache.change_position

    committed = root.commit()

    expected = [Placement(p1, "a"), Placement(p3, "b"), Placement(p4, "c"), Placement(p2, "c")]
    assert committed == expected
    assert [cache.node_of(p.pod.uid) for p in expected] == ["a", "b", "c", "c"]
    assert all(cache.is_assumed(p.pod.uid) for p in expected)
    assert cache.changes_since(position) == ["a", "b", "c", "c"]  # assumed in that order


def test_a_fork_commit_returns_every_placement_of_its_view_and_finishes_the_fork() -> None:
    _, root, a, b, _ = setup()
    root.add(pod("x"), a)
    fork = root.fork()
    fork.add(pod("y"), b)

    assert fork.commit() == [Placement(pod("x"), "a"), Placement(pod("y"), "b")]

    with pytest.raises(StaleSnapshotError, match="committed"):
        fork.add(pod("z"), b)
    root.check()  # the parent goes on
    root.add(pod("z"), b)


# -- staleness ---------------------------------------------------------------------------------

ParentChange = Callable[[Snapshot, NodeState], object]


def _sibling_commits(parent: Snapshot, a: NodeState) -> None:
    sibling = parent.fork()
    sibling.add(pod("z"), a)
    sibling.commit()


PARENT_CHANGES: list[tuple[str, ParentChange]] = [
    ("the parent placed a pod", lambda p, a: p.add(pod("z"), a)),
    ("the parent removed a pod", lambda p, a: p.remove(R2)),
    ("a sibling fork committed", _sibling_commits),
]
FORK_USES: list[tuple[str, Callable[[Snapshot, NodeState], object]]] = [
    ("check", lambda f, a: f.check()),
    ("add", lambda f, a: f.add(pod("y"), a)),
    ("remove", lambda f, a: f.remove(R1)),
    ("fork", lambda f, a: f.fork()),
    ("commit", lambda f, a: f.commit()),
]


@pytest.mark.parametrize("use", [u for _, u in FORK_USES], ids=[i for i, _ in FORK_USES])
@pytest.mark.parametrize(
    "change", [c for _, c in PARENT_CHANGES], ids=[i for i, _ in PARENT_CHANGES]
)
def test_a_fork_used_after_its_parent_changed_raises(
    change: ParentChange, use: Callable[[Snapshot, NodeState], object]
) -> None:
    _, root, a, _, _ = setup()
    fork = root.fork()
    change(root, a)

    with pytest.raises(StaleSnapshotError, match="parent snapshot changed"):
        use(fork, a)


def test_a_fork_whose_own_fork_committed_stays_usable() -> None:
    _, root, a, b, _ = setup()
    fork = root.fork()
    inner = fork.fork()
    inner.add(pod("x"), a)
    inner.commit()

    fork.add(pod("y"), b)  # its own child changed it: it is not stale
    fork.commit()

    assert [p.pod.name for p in root.placements] == ["x", "y"]


CacheChange = Callable[[SchedulerCache], object]
CACHE_CHANGES: list[Any] = [
    pytest.param(lambda c: c.upsert_pod(pod("new", "c")), id="a pod was bound"),
    pytest.param(lambda c: c.assume(WAITER, "c"), id="a pod was assumed"),
    pytest.param(lambda c: c.remove_pod("uid-r1"), id="a pod was deleted"),
    pytest.param(lambda c: c.upsert_pod(pod("r2", "b", cpu="3")), id="a pod was resized"),
    pytest.param(lambda c: c.upsert_node(node("a", cpu="8")), id="a node changed"),
    pytest.param(lambda c: c.remove_node("c"), id="a node was removed"),
    pytest.param(
        lambda c: c.upsert_node(node("d")),
        id="a node was added",
    ),
]


@pytest.mark.parametrize("change", CACHE_CHANGES)
def test_a_root_used_after_the_cache_changed_raises(change: CacheChange) -> None:
    cache, root, a, _, _ = setup()
    root.add(pod("x"), a)
    change(cache)

    with pytest.raises(StaleSnapshotError, match="cache changed"):
        root.check()
    with pytest.raises(StaleSnapshotError):
        root.add(pod("y"), a)
    with pytest.raises(StaleSnapshotError):
        root.commit()
    assert not cache.is_assumed("uid-x")


def test_a_root_whose_cache_only_learned_of_pending_pods_stays_usable() -> None:
    cache, root, a, _, _ = setup()
    cache.upsert_pod(pod("another-pending"))

    root.add(pod("x"), a)

    assert root.commit() == [Placement(pod("x"), "a")]


def test_a_fork_of_a_root_whose_cache_changed_raises() -> None:
    cache, root, a, _, _ = setup()
    fork = root.fork()
    cache.upsert_pod(pod("new", "a", cpu="3"))

    with pytest.raises(StaleSnapshotError):
        fork.add(pod("y", cpu="1"), a)


def test_a_fork_whose_grandparent_changed_raises() -> None:
    _, root, a, _, _ = setup()
    child = root.fork()
    grandchild = child.fork()
    root.add(pod("x", cpu="3"), a)

    with pytest.raises(StaleSnapshotError):
        grandchild.add(pod("y", cpu="3"), a)


def test_a_refused_commit_leaves_the_snapshot_usable() -> None:
    _, root, _, b, _ = setup()
    root.remove(R2)
    with pytest.raises(ValueError, match="removed pods"):
        root.commit()

    root.add(R2, b)  # bring the victim back, and commit what is left

    assert root.commit() == []


# -- versions and logs -------------------------------------------------------------------------


def test_versions_of_touched_nodes_differ_from_the_caches_and_from_each_other() -> None:
    _, root, a, b, c = setup()
    assert root.version("a") == a.version
    root.add(pod("x"), a)
    root.add(pod("y"), b)

    assert root.version("a") != a.version
    assert root.version("b") != b.version
    assert root.version("a") != root.version("b")
    assert root.version("c") == c.version  # untouched: the cache's
    assert root.version("never-seen") == 0

    left, right = root.fork(), root.fork()
    assert left.version("a") == root.version("a")  # same state, same version
    left.add(pod("z"), a)
    right.add(pod("z"), a)  # the same change, in another world
    seen = [a.version, root.version("a"), left.version("a"), right.version("a")]
    assert len(set(seen)) == 4
    assert left.version("b") == root.version("b")

    committed = left.version("a")
    left.commit()
    assert root.version("a") == committed


def test_a_change_undone_still_gives_a_new_version() -> None:
    _, root, a, _, _ = setup()
    root.add(pod("x"), a)
    placed = root.version("a")

    root.remove(pod("x"))

    assert root.free(a, "cpu") == a.free("cpu")
    assert root.version("a") not in (a.version, placed)


def test_a_snapshot_logs_the_nodes_it_changed_and_a_commit_extends_the_parents_log() -> None:
    _, root, a, b, _ = setup()
    root.add(pod("x"), a)
    assert (root.log_since(0), root.log_position) == (["a"], 1)

    fork = root.fork()
    assert (fork.log_since(0), fork.log_position) == ([], 0)
    fork.add(pod("y"), b)
    fork.remove(R1)
    assert fork.log_since(0) == ["b", "a"]
    assert fork.log_since(1) == ["a"]
    assert sorted(fork.touched()) == ["a", "b"]
    assert list(root.touched()) == ["a"]

    fork.commit()

    assert root.log_since(1) == ["b", "a"]
    assert root.log_position == 3
    assert sorted(root.touched()) == ["a", "b"]


# -- listings ----------------------------------------------------------------------------------


def test_pods_placed_in_a_snapshot_are_listed_once_with_their_node() -> None:
    _, root, _, b, c = setup()
    picky = pod("x", affinity=ANTI_AFFINITY)
    elsewhere = pod("y", namespace="other")
    root.add(picky, b)
    root.add(elsewhere, c)
    root.add(WAITER, c)  # known to the cache, pending there: counted once, here

    seen = view(root)

    assert seen["in_namespace"] == [("r1", "a"), ("r2", "b"), ("waiter", "c"), ("x", "b")]
    assert sorted((p.name, n) for p, n in root.pods_in_namespace("other")) == [("y", "c")]
    assert seen["with_affinity"] == [("r1", "a"), ("x", "b")]
    assert sorted(p.name for p in root.pods_on(c)) == ["waiter", "y"]


# -- room nominated to pods of other schedulers ------------------------------------------------


def _nominated_cache() -> tuple[SchedulerCache, NodeState, PodInfo]:
    cache = SchedulerCache(own_schedulers=("koord-scheduler",))
    cache.upsert_node(make_node("n1", cpu="4"))
    other = make_pod("kube", cpu="3", priority=5, scheduler="default-scheduler")
    cache.upsert_pod(replace(other, nominated_node_name="n1"))
    state = cache.node("n1")
    assert state is not None
    return cache, state, other


def test_room_nominated_by_another_scheduler_counts_until_cleared_or_bound() -> None:
    cache, state, other = _nominated_cache()
    assert Snapshot(cache).free(state, "cpu") == 1000
    cache.upsert_pod(replace(other, resource_version="2"))  # nomination cleared
    assert Snapshot(cache).free(state, "cpu") == 4000
    cache.upsert_pod(replace(other, nominated_node_name="n1", resource_version="3"))
    assert Snapshot(cache).free(state, "cpu") == 1000
    cache.upsert_pod(replace(other, node_name="n2", resource_version="4"))  # bound elsewhere
    assert Snapshot(cache).free(state, "cpu") == 4000
    assert list(cache.nominated_for_others()) == []


def test_a_nomination_of_our_own_scheduler_name_is_not_counted_as_another_s() -> None:
    cache, state, _ = _nominated_cache()
    mine = make_pod("mine", cpu="1")
    cache.upsert_pod(replace(mine, nominated_node_name="n1"))
    assert Snapshot(cache).free(state, "cpu") == 1000


def test_passing_over_lower_priority_nominations_lasts_as_long_as_the_view() -> None:
    cache, state, other = _nominated_cache()
    root = Snapshot(cache)
    root.pass_over(5)  # equal priority: still taken
    assert root.free(state, "cpu") == 1000
    fork = root.fork()
    fork.pass_over(6)
    assert fork.free(state, "cpu") == 4000
    assert fork.node_of(other.uid) is None
    assert other.uid not in {p.uid for p in fork.pods_on(state)}
    fork.commit()
    # The fork's passing is not handed to its parent.
    assert root.free(state, "cpu") == 1000
    assert root.node_of(other.uid) == "n1"
    root.pass_over(6)
    assert root.free(state, "cpu") == 4000
    assert root.commit() == []


def test_held_room_lent_to_a_group_is_free_in_the_fork_alone() -> None:
    """Room held for a pod of ours not bound yet (a nomination, assumed in the cache) is free
    in the view it was lent in; the parent sees it held again after the fork's commit, and
    what the fork placed on it stays."""
    cache = SchedulerCache(own_schedulers=("koord-scheduler",))
    cache.upsert_node(make_node("n1", cpu="4"))
    held = make_pod("held", cpu="3")
    cache.assume(held, "n1")
    state = cache.node("n1")
    assert state is not None
    root = Snapshot(cache)
    fork = root.fork()
    fork.pass_over_held([Placement(held, "n1"), Placement(held, "n2")])  # not on n2: ignored
    assert fork.free(state, "cpu") == 4000
    assert fork.node_of(held.uid) is None
    short = make_pod("short", cpu="2")
    fork.add(short, state)
    fork.commit()
    assert root.node_of(held.uid) == "n1"
    assert root.free(state, "cpu") == 4000 - 3000 - 2000
    assert [p.pod.name for p in root.commit()] == ["short"]
    assert cache.node_of(held.uid) == "n1" and cache.node_of(short.uid) == "n1"
