"""GangGroups: gangs in different namespaces that bind together or not at all."""

from __future__ import annotations

from functools import partial

from harness.daemon import Daemon
from harness.gangs import (
    GROUPS,
    Gang,
    GangBook,
    bound_count,
    explanation,
    groups_value,
    holds,
    podgroup_status,
    wait_bound,
    wait_explained,
)
from harness.kube import Cluster, wait_until


def test_gang_group_in_two_namespaces_binds_together_or_not_at_all(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    other = gang_book.extra_namespace()
    cluster.add_nodes(["group-1"], {"cpu": "4", "memory": "16Gi"})
    group = {GROUPS: groups_value(f"{namespace}/launcher", f"{other}/workers")}
    launcher = gang_book.gang("launcher", 2, options=group, requests={"cpu": "1"})
    workers = gang_book.gang("workers", 3, namespace=other, options=group, requests={"cpu": "1"})

    def nothing_bound() -> bool:
        return bound_count(cluster, launcher) == 0 and bound_count(cluster, workers) == 0

    # The launcher alone would fit, but its partner has no members yet.
    launcher_pods = gang_book.create(launcher)
    wait_explained(cluster, namespace, launcher_pods, f"waits for {workers.key}")
    holds(nothing_bound, 2, what="the launcher waits for its partner")

    # Both are complete, but the group needs 5 cpu and the cluster has 4: neither binds.
    worker_pods = gang_book.create(workers)

    def short_group_explained() -> bool:
        messages = [explanation(cluster.pod(namespace, n)) for n in launcher_pods] + [
            explanation(cluster.pod(other, n)) for n in worker_pods
        ]
        return all(messages) and any("members placed" in (m or "") for m in messages)

    wait_until(short_group_explained, timeout=45, what="the short group explained")
    holds(nothing_bound, 3, what="no gang of the short group bound")

    # Room for the fifth: both gangs bind.
    cluster.add_nodes(["group-2"], {"cpu": "1", "memory": "16Gi"})
    wait_bound(cluster, launcher, 2)
    wait_bound(cluster, workers, 3)


def test_gang_group_of_podgroups_waits_for_the_short_partner_then_binds_both(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    other = gang_book.extra_namespace()
    cluster.add_nodes(["pg-group-1"], {"cpu": "8", "memory": "16Gi"})
    group = {GROUPS: groups_value(f"{namespace}/driver", f"{other}/executors")}
    driver = gang_book.gang("driver", 1, way="podgroup", options=group, requests={"cpu": "1"})
    executors = gang_book.gang(
        "executors", 2, way="podgroup", namespace=other, options=group, requests={"cpu": "1"}
    )
    gang_book.create_podgroup(driver)
    gang_book.create_podgroup(executors)
    driver_pods = gang_book.create_pods(driver)
    executor_pods = gang_book.create_pods(executors, [0])

    wait_explained(cluster, namespace, driver_pods, f"waits for {executors.key}")
    wait_explained(cluster, other, executor_pods, "1/2 members created, min 2")
    holds(
        lambda: bound_count(cluster, driver) == 0 and bound_count(cluster, executors) == 0,
        2,
        what="nothing of the group bound while executors is short",
    )

    gang_book.create_pods(executors, [1])
    wait_bound(cluster, driver, 1)
    wait_bound(cluster, executors, 2)

    def scheduled_or_running(gang: Gang) -> bool:
        phase = podgroup_status(cluster, gang.namespace, gang.name).get("phase")
        return phase in ("Scheduled", "Running")

    for gang in (driver, executors):
        wait_until(
            partial(scheduled_or_running, gang),
            timeout=30,
            what=f"PodGroup {gang.key} reported Scheduled/Running",
        )
