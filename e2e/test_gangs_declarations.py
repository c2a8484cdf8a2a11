"""The three ways of declaring a gang, total-number, and pods that come before their PodGroup."""

from __future__ import annotations

from typing import Any

import pytest

from harness.daemon import Daemon
from harness.gangs import (
    WAYS,
    Gang,
    GangBook,
    Way,
    bound_count,
    explanation,
    holds,
    options,
    podgroup_status,
    wait_bound,
    wait_explained,
)
from harness.kube import Cluster, pending, wait_until


def _podgroup_reports_scheduled(cluster: Cluster, gang: Gang) -> dict[str, Any]:
    status: dict[str, Any] = wait_until(
        lambda: (
            (s := podgroup_status(cluster, gang.namespace, gang.name)).get("phase")
            in ("Scheduled", "Running")
            and (s.get("scheduled") or 0) >= gang.min_member
            and s.get("scheduleStartTime")
            and s
        ),
        timeout=30,
        what=f"PodGroup {gang.key} reported Scheduled/Running with its minimum scheduled",
    )
    return status


@pytest.mark.parametrize("way", WAYS)
def test_each_declaration_way_makes_a_gang(
    way: Way,
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    # Room for 2 of 3: plain pods would bind two; a gang binds none.
    cluster.add_nodes(["decl-1"], {"cpu": "2", "memory": "16Gi"})
    gang = gang_book.gang(f"by-{way}", 3, way=way, requests={"cpu": "1"})
    names = gang_book.create(gang)

    wait_explained(cluster, namespace, names, "2/3 members placed, min 3")
    holds(lambda: bound_count(cluster, gang) == 0, 2, what=f"{gang.key} not bound while short")

    cluster.add_nodes(["decl-2"], {"cpu": "1", "memory": "16Gi"})
    wait_bound(cluster, gang, 3)
    if way == "podgroup":
        _podgroup_reports_scheduled(cluster, gang)


def test_total_number_above_min_binds_at_least_min_then_as_many_as_fit(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["total-1"], {"cpu": "4", "memory": "16Gi"})
    gang = gang_book.gang(
        "wide", 3, size=6, options=options(total_number="6"), requests={"cpu": "1"}
    )
    # The minimum is there: the gang starts without waiting for its total.
    gang_book.create_pods(gang, range(3))
    wait_bound(cluster, gang, 3)
    gang.satisfied_once = True

    # The rest come later: the satisfied gang's members bind as they fit (room for one more).
    rest = gang_book.create_pods(gang, range(3, 6))
    wait_bound(cluster, gang, 4)

    def leftovers_explained() -> bool:
        messages = [explanation(p) for p in pending(cluster.pods(namespace, gang.selector))]
        return len(messages) == 2 and all(m and "Insufficient cpu" in m for m in messages)

    wait_until(leftovers_explained, timeout=30, what="the two members that do not fit explained")
    assert {p.metadata.name for p in pending(cluster.pods(namespace, gang.selector))} <= set(rest)
    holds(lambda: bound_count(cluster, gang) == 4, 2, what="exactly the four that fit bound")


def test_pods_created_before_their_podgroup_wait_then_bind_once_it_exists(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["early-1"], {"cpu": "4", "memory": "16Gi"})
    gang = gang_book.gang("early", 3, way="podgroup", requests={"cpu": "1"})
    names = gang_book.create_pods(gang)

    wait_explained(cluster, namespace, names, f"waiting for PodGroup {gang.key}")
    holds(lambda: bound_count(cluster, gang) == 0, 2, what="no member bound without its PodGroup")

    gang_book.create_podgroup(gang)
    wait_bound(cluster, gang, 3)
    _podgroup_reports_scheduled(cluster, gang)
