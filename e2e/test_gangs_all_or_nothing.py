"""All or nothing: a gang binds whole when it fits, not at all when it does not, and says why."""

from __future__ import annotations

from collections import Counter

from harness.daemon import Daemon
from harness.gangs import (
    GangBook,
    bound_count,
    holds,
    matching_events,
    podgroup_status,
    scheduled_event_counts,
    wait_bound,
    wait_explained,
)
from harness.kube import Cluster, scheduled_condition, wait_until


def test_gang_of_4_binds_all_4_when_there_is_room_for_exactly_4(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["exact-1", "exact-2"], {"cpu": "4", "memory": "16Gi"})
    gang = gang_book.gang("train", 4, way="podgroup", requests={"cpu": "2", "memory": "1Gi"})
    gang_book.create(gang)

    pods = wait_bound(cluster, gang, 4)
    assert Counter(p.spec.node_name for p in pods) == {"exact-1": 2, "exact-2": 2}

    # Each member was announced once.
    names = gang.pod_names()
    counts = wait_until(
        lambda: (
            (c := scheduled_event_counts(cluster, namespace))
            and all(c[n] >= 1 for n in names)
            and c
        ),
        timeout=30,
        what="a Scheduled event for every member",
    )
    assert {n: counts[n] for n in names} == dict.fromkeys(names, 1)

    # The PodGroup reports the gang as scheduled.
    status = wait_until(
        lambda: (
            (s := podgroup_status(cluster, namespace, gang.name)).get("phase")
            in ("Scheduled", "Running")
            and (s.get("scheduled") or 0) >= 4
            and s
        ),
        timeout=30,
        what="PodGroup status Scheduled/Running with 4 scheduled",
    )
    assert status.get("scheduleStartTime")


def test_gang_of_4_binds_none_when_there_is_room_for_3_and_says_why(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["three-1"], {"cpu": "3", "memory": "16Gi"})
    gang = gang_book.gang("short", 4, requests={"cpu": "1"})
    names = gang_book.create(gang)

    # Every member is explained with the gang's view, and gets FailedScheduling Events.
    wait_explained(cluster, namespace, names, "3/4 members placed, min 4")
    for name in names:
        condition = scheduled_condition(cluster.pod(namespace, name))
        assert condition is not None, f"{name} has no PodScheduled condition"
        assert (condition.status, condition.reason) == ("False", "Unschedulable")
    failed = wait_until(
        lambda: (
            (events := matching_events(cluster, namespace, names, "FailedScheduling"))
            and {e.involved_object.name for e in events} == set(names)
            and events
        ),
        timeout=30,
        what="FailedScheduling events on every member",
    )
    assert {e.type for e in failed} == {"Warning"}
    holds(lambda: bound_count(cluster, gang) == 0, 3, what="no member of the short gang bound")

    # Room for the fourth appears: the whole gang binds.
    cluster.add_nodes(["three-2"], {"cpu": "1", "memory": "16Gi"})
    wait_bound(cluster, gang, 4)


def test_gang_is_not_attempted_until_min_members_exist(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["roomy-1"], {"cpu": "8", "memory": "16Gi"})
    gang = gang_book.gang("few", 4, way="lite", requests={"cpu": "500m"})
    names = gang_book.create_pods(gang, range(3))

    wait_explained(cluster, namespace, names, "3/4 members created, min 4")
    holds(lambda: bound_count(cluster, gang) == 0, 2, what="no member of an incomplete gang bound")

    gang_book.create_pods(gang, [3])
    wait_bound(cluster, gang, 4)
