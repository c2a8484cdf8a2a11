"""Pods of another scheduler not tried yet count on the node it is likely to give them, until they
bind, are tried, are nominated, go, or are older than ``othersInFlightFor``."""

from __future__ import annotations

from dataclasses import replace

from koordgang.model.node import NodeInfo
from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache
from koordgang.state.in_flight import InFlight, likely_node
from koordgang.testing.builders import bound, node, pod
from koordgang.testing.clock import FakeClock

CREATED = 1_704_067_200.0  # the builders' creation time, 2024-01-01T00:00:00Z
OURS = "koord-scheduler"


def theirs(name: str, cpu: str = "2", **kwargs: object) -> PodInfo:
    return pod(name, cpu=cpu, scheduler="default-scheduler", **kwargs)


def cache_with(
    *nodes: NodeInfo, seconds: float = 10.0, at: float = 1.0
) -> tuple[SchedulerCache, FakeClock]:
    """A cache of ours with these nodes; the wall clock ``at`` seconds after the pods' creation."""
    clock = FakeClock(start=0.0, wall0=CREATED + at)
    cache = SchedulerCache(own_schedulers=[OURS], in_flight=InFlight(seconds, clock.wall))
    for info in nodes:
        cache.upsert_node(info)
    return cache, clock


def used(cache: SchedulerCache, name: str) -> int:
    state = cache.node(name)
    assert state is not None
    return state.requested.get("cpu", 0)


def test_the_guess_is_the_least_allocated_node_that_holds_the_pod() -> None:
    cache, _ = cache_with(
        node("small", cpu="1"),
        node("cordoned", cpu="64", unschedulable=True),
        node("tainted", cpu="64", taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        node("other-zone", cpu="16", labels={"zone": "b"}),
        node("half", cpu="8", labels={"zone": "a"}),
        node("empty", cpu="4", labels={"zone": "a"}),
    )
    cache.upsert_pod(bound(pod("running", cpu="4"), "half"))
    guessed, _ = likely_node(theirs("x", node_selector={"zone": "a"}), cache.nodes(), 0)
    # half has 4 of 8 cpu left, empty all of its 4: empty is the less allocated.
    assert guessed == "empty"
    tolerant = theirs("y", cpu="32", tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert likely_node(tolerant, cache.nodes(), 0)[0] == "tainted"
    assert likely_node(theirs("z", cpu="100"), cache.nodes(), 0)[0] == ""


def test_a_pod_of_theirs_not_tried_yet_counts_where_it_is_likely_to_go() -> None:
    cache, _ = cache_with(node("n1", cpu="4"), node("n2", cpu="4"))
    cache.upsert_pod(theirs("a", cpu="3"))
    cache.upsert_pod(theirs("b", cpu="3"))
    # The second guess sees the first: they spread, as kube-scheduler's spreading score does.
    assert sorted([used(cache, "n1"), used(cache, "n2")]) == [3000, 3000]
    assert sorted(uid for uid in (p.uid for p, _ in cache.nominated_for_others())) == sorted(
        [theirs("a").uid, theirs("b").uid]
    )
    # Pods of ours never count before they are placed.
    cache.upsert_pod(pod("mine", cpu="1", scheduler=OURS))
    assert used(cache, "n1") + used(cache, "n2") == 6000


def test_it_counts_where_it_binds_once_bound() -> None:
    cache, _ = cache_with(node("n1", cpu="4"), node("n2", cpu="2"))
    waiting = theirs("a")
    cache.upsert_pod(waiting)
    assert (used(cache, "n1"), used(cache, "n2")) == (2000, 0)
    cache.upsert_pod(bound(waiting, "n2"))
    assert (used(cache, "n1"), used(cache, "n2")) == (0, 2000)
    assert list(cache.nominated_for_others()) == []


def test_once_its_scheduler_tried_it_the_room_is_free() -> None:
    cache, _ = cache_with(node("n1", cpu="4"))
    waiting = theirs("a")
    cache.upsert_pod(waiting)
    assert used(cache, "n1") == 2000
    refused = replace(waiting, conditions_pod_scheduled=("False", "Unschedulable", "no"))
    cache.upsert_pod(refused)
    assert used(cache, "n1") == 0
    # Tried again later (the condition stays): not guessed again.
    cache.upsert_pod(replace(refused, resource_version="3"))
    assert used(cache, "n1") == 0


def test_its_nomination_wins_over_the_guess() -> None:
    cache, _ = cache_with(node("n1", cpu="4"), node("n2", cpu="2"))
    waiting = theirs("a")
    cache.upsert_pod(waiting)
    cache.upsert_pod(replace(waiting, nominated_node_name="n2"))
    assert (used(cache, "n1"), used(cache, "n2")) == (0, 2000)


def test_gated_terminating_and_gone_pods_count_nowhere() -> None:
    cache, _ = cache_with(node("n1", cpu="8"))
    cache.upsert_pod(theirs("gated", gates=["wait"]))
    cache.upsert_pod(theirs("leaving", deleted="2024-01-01T00:00:01Z"))
    assert used(cache, "n1") == 0
    waiting = theirs("a")
    cache.upsert_pod(waiting)
    assert used(cache, "n1") == 2000
    cache.remove_pod(waiting.uid)
    assert used(cache, "n1") == 0


def test_its_time_runs_out_from_its_creation() -> None:
    cache, clock = cache_with(node("n1", cpu="4"), seconds=10.0, at=1.0)
    cache.upsert_pod(theirs("a"))
    clock.advance(8.0)  # 9 s old
    assert not cache.expire_in_flight()
    assert used(cache, "n1") == 2000
    clock.advance(1.0)  # 10 s old: its scheduler is not busy with it
    assert cache.expire_in_flight()
    assert used(cache, "n1") == 0
    cache.upsert_pod(replace(theirs("a"), resource_version="5"))
    assert used(cache, "n1") == 0


def test_a_pod_older_than_that_never_counts() -> None:
    cache, _ = cache_with(node("n1", cpu="4"), seconds=10.0, at=60.0)
    cache.upsert_pod(theirs("stuck"))
    assert used(cache, "n1") == 0


def test_a_creation_time_ahead_of_our_clock_counts_as_now() -> None:
    cache, clock = cache_with(node("n1", cpu="4"), seconds=10.0, at=-3600.0)
    cache.upsert_pod(theirs("a"))
    assert used(cache, "n1") == 2000
    clock.advance(10.0)
    assert cache.expire_in_flight()
    assert used(cache, "n1") == 0


def test_without_it_their_pods_count_only_once_bound() -> None:
    cache = SchedulerCache(own_schedulers=[OURS])
    cache.upsert_node(node("n1", cpu="4"))
    cache.upsert_pod(theirs("a"))
    assert used(cache, "n1") == 0
    assert not cache.expire_in_flight()


def test_a_pod_nothing_holds_now_is_not_guessed_later() -> None:
    cache, _ = cache_with(node("n1", cpu="2"))
    cache.upsert_pod(bound(pod("running", cpu="2"), "n1"))
    waiting = theirs("a", cpu="2")
    cache.upsert_pod(waiting)
    cache.remove_pod(pod("running").uid)
    cache.upsert_pod(replace(waiting, resource_version="3"))
    # Its scheduler found no room either; it tries again on its own and says where it goes.
    assert used(cache, "n1") == 0


def test_only_the_first_hundred_nodes_that_hold_it_are_compared() -> None:
    nodes = [node(f"n{i:03d}", cpu="8") for i in range(150)]
    cache, _ = cache_with(*nodes)
    for i in range(150):
        if i != 120:
            cache.upsert_pod(bound(pod(f"half-{i}", cpu="4"), f"n{i:03d}"))
    assert likely_node(theirs("a"), cache.nodes(), 0) == ("n000", 1)
    assert likely_node(theirs("a"), cache.nodes(), 100)[0] == "n120"
