"""Strict and NonStrict gangs: who holds room, for how long, and what a timeout leaves behind;
two big Strict gangs competing for one cluster."""

from __future__ import annotations

import time
from collections import Counter

from controlplane import delete_nodes
from harness.daemon import Daemon
from harness.gangs import (
    TIMEOUT,
    Gang,
    GangBook,
    bound_count,
    holds,
    matching_events,
    members,
    options,
    wait_bound,
    wait_explained,
)
from harness.kube import Cluster, pod_body, scheduled_condition, wait_until


def _wait_timed_out(cluster: Cluster, gang: Gang, names: list[str], timeout: float) -> None:
    """Every member annotated timeout=true and given a GangTimeout Event."""

    def annotated() -> bool:
        pods = members(cluster, gang)
        return len(pods) == len(names) and all(
            (p.metadata.annotations or {}).get(TIMEOUT) == "true" for p in pods
        )

    wait_until(annotated, timeout=timeout, what=f"every member of {gang.key} annotated {TIMEOUT}")
    wait_until(
        lambda: (
            {
                e.involved_object.name
                for e in matching_events(cluster, gang.namespace, names, "GangTimeout")
            }
            == set(names)
        ),
        timeout=30,
        what=f"a GangTimeout event on every member of {gang.key}",
    )


def test_strict_gang_holds_nothing_after_a_failed_attempt(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["strict-1"], {"cpu": "3", "memory": "16Gi"})
    gang = gang_book.gang("strict", 4, options=options(mode="Strict"), requests={"cpu": "1"})
    names = gang_book.create(gang)
    wait_explained(cluster, namespace, names, "3/4 members placed, min 4")

    # The failed attempt released everything: a plain pod submitted now takes the room.
    cluster.create_pod(namespace, pod_body("plain", requests={"cpu": "1"}))
    wait_until(
        lambda: cluster.pod(namespace, "plain").spec.node_name == "strict-1",
        timeout=30,
        what="the plain pod bound into the room the Strict gang tried",
    )
    holds(lambda: bound_count(cluster, gang) == 0, 2, what="the Strict gang still unbound")


def test_nonstrict_gang_keeps_its_reservations_and_binds_when_room_appears(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["hold-a"], {"cpu": "3", "memory": "16Gi"}, labels={"pool": "a"})
    gang = gang_book.gang(
        "patient",
        4,
        options=options(mode="NonStrict", waiting_time="120s"),
        requests={"cpu": "1"},
    )
    names = gang_book.create(gang)
    wait_explained(cluster, namespace, names, "3/4 members placed, min 4")

    # The three placed members hold pool a: a plain pod that may only go there waits.
    cluster.create_pod(
        namespace, pod_body("squatter", requests={"cpu": "1"}, node_selector={"pool": "a"})
    )
    wait_explained(cluster, namespace, ["squatter"], "Insufficient cpu")
    holds(
        lambda: (
            bound_count(cluster, gang) == 0
            and not cluster.pod(namespace, "squatter").spec.node_name
        ),
        2,
        what="the reservations held, nothing bound",
    )

    # Room for the fourth member appears elsewhere: the gang completes and binds whole.
    cluster.add_nodes(["hold-b"], {"cpu": "1", "memory": "16Gi"}, labels={"pool": "b"})
    pods = wait_bound(cluster, gang, 4)
    assert Counter(p.spec.node_name for p in pods) == {"hold-a": 3, "hold-b": 1}
    assert not cluster.pod(namespace, "squatter").spec.node_name


def test_nonstrict_gang_times_out_marks_every_member_and_releases_its_room(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["expire-1"], {"cpu": "3", "memory": "16Gi"})
    gang = gang_book.gang(
        "expiring",
        4,
        options=options(mode="NonStrict", waiting_time="10s"),
        requests={"cpu": "1"},
    )
    created = time.monotonic()
    names = gang_book.create(gang)
    wait_explained(cluster, namespace, names, "3/4 members placed, min 4")

    # While the gang waits, its room is held.
    cluster.create_pod(namespace, pod_body("after", requests={"cpu": "2"}))
    wait_explained(cluster, namespace, ["after"], "Insufficient cpu")

    _wait_timed_out(cluster, gang, names, timeout=40)
    assert time.monotonic() - created >= 9, "timed out well before its 10 s waiting time"

    # Every reservation was released: the plain pod binds into that room.
    wait_until(
        lambda: cluster.pod(namespace, "after").spec.node_name == "expire-1",
        timeout=20,
        what="the plain pod bound into the released room",
    )
    # Timed-out members are never scheduled again, even when room appears.
    cluster.add_nodes(["expire-2"], {"cpu": "8", "memory": "16Gi"})
    holds(lambda: bound_count(cluster, gang) == 0, 4, what="timed-out members stay unbound")


def test_pod_waiting_time_overrides_the_podgroups(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["override-1"], {"cpu": "2", "memory": "16Gi"})
    # NonStrict comes from the PodGroup's annotations (a Strict gang holds nothing and never
    # times out); the pods' 8 s waiting time overrides the PodGroup's 600 s.
    gang = gang_book.gang(
        "overridden",
        3,
        way="podgroup",
        timeout_seconds=600,
        options=options(mode="NonStrict", waiting_time="600s"),
        pod_annotations=options(waiting_time="8s"),
        requests={"cpu": "1"},
    )
    names = gang_book.create(gang)
    wait_explained(cluster, namespace, names, "2/3 members placed, min 3")
    _wait_timed_out(cluster, gang, names, timeout=40)
    assert bound_count(cluster, gang) == 0


def test_two_strict_gangs_needing_60_percent_each_bind_one_after_the_other(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes([f"sixty-{i}" for i in range(5)], {"cpu": "4", "memory": "16Gi"})
    # 20 cpu in all; each gang needs 12.
    red = gang_book.gang("red", 12, way="podgroup", requests={"cpu": "1"})
    blue = gang_book.gang("blue", 12, requests={"cpu": "1"})
    gang_book.create_podgroup(red)
    for index in range(12):
        gang_book.create_pods(red, [index])
        gang_book.create_pods(blue, [index])

    def one_whole() -> tuple[int, int] | None:
        counts = bound_count(cluster, red), bound_count(cluster, blue)
        assert 0 in counts, f"both gangs have bound members (red, blue) = {counts}"
        return counts if 12 in counts else None

    red_bound, _ = wait_until(one_whole, timeout=45, interval=0.1, what="one gang bound whole")
    winner, loser = (red, blue) if red_bound == 12 else (blue, red)

    # The other one is short of room (8 cpu left) and says so; nothing of it is bound.
    wait_explained(cluster, namespace, loser.pod_names(), "8/12 members placed, min 12")
    holds(lambda: one_whole() is not None, 2, what="the loser stays wholly unbound")

    # The winner finishes: the other binds whole.
    winner.satisfied_once = True
    for name in winner.pod_names():
        cluster.force_delete(namespace, name)
    wait_until(
        lambda: bound_count(cluster, loser) == 12 and bound_count(cluster, winner) == 0,
        timeout=45,
        what=f"{loser.key} bound whole after {winner.key} left",
    )


def test_reservations_on_a_node_that_disappears_are_planned_again(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["doomed"], {"cpu": "3", "memory": "8Gi"})
    annotations = {
        "gang.scheduling.koordinator.sh/name": "moving",
        "gang.scheduling.koordinator.sh/min-available": "4",
        "gang.scheduling.koordinator.sh/mode": "NonStrict",
        "gang.scheduling.koordinator.sh/waiting-time": "120s",
    }
    for i in range(4):
        cluster.create_pod(
            namespace, pod_body(f"moving-{i}", requests={"cpu": "1"}, annotations=annotations)
        )
    wait_until(
        lambda: all(
            "holding 3 reservation(s)" in (((c := scheduled_condition(p)) and c.message) or "")
            for p in cluster.pods(namespace)
        ),
        timeout=30,
        what="three reservations held on the doomed node",
    )
    delete_nodes(cluster.core, ["doomed"])
    cluster.add_nodes(["refuge"], {"cpu": "4", "memory": "8Gi"})
    pods = wait_until(
        lambda: (ps := cluster.pods(namespace)) and all(p.spec.node_name for p in ps) and ps,
        timeout=30,
        what="the gang bound whole on the new node",
    )
    assert {p.spec.node_name for p in pods} == {"refuge"}
