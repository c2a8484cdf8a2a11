"""Beside another scheduler, on the real API server: room that scheduler nominated to its own
pod (``status.nominatedNodeName``, as kube-scheduler writes it while it preempts) is not taken
by a gang of koordgang's, and is free again once the nomination is cleared; room its pod not
tried yet is likely to take is left alone while it may still come."""

from __future__ import annotations

from kubernetes import client

from harness.daemon import Daemon
from harness.gangs import Gang, GangBook, holds, members, wait_bound
from harness.kube import KEEP_RUNNING, Cluster, job_body, pod_body


def _gang_job(
    gang_book: GangBook, batch: client.BatchV1Api, namespace: str, name: str, size: int, cpu: str
) -> Gang:
    """A Job of ``size`` pods of ``cpu`` that keep running, gang-scheduled by a PodGroup."""
    gang = gang_book.gang(name, size, way="podgroup")
    gang_book.create_podgroup(gang)
    pod = gang.pod(0, requests={"cpu": cpu})
    pod["metadata"].setdefault("annotations", {}).update(KEEP_RUNNING)
    batch.create_namespaced_job(namespace, client.V1Job.model_validate(job_body(name, size, pod)))
    return gang


def test_a_gang_leaves_alone_the_room_another_scheduler_nominated(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    batch: client.BatchV1Api,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    """Two nodes of 4 cpu; another scheduler's pod (3 cpu, same priority) is nominated to the
    first: a gang of 3 pods of 1 cpu, which would spread over both, all go to the second; once
    the nomination is cleared, a second gang uses the first."""
    cluster = clean_nodes
    first, second = cluster.add_nodes(["co-0", "co-1"], {"cpu": "4", "memory": "16Gi"})
    other = pod_body("theirs", requests={"cpu": "3"}, scheduler="other-scheduler")
    cluster.create_pod(namespace, other)
    cluster.core.patch_namespaced_pod_status(
        "theirs", namespace, {"status": {"nominatedNodeName": first}}
    )

    def job(name: str) -> Gang:
        return _gang_job(gang_book, batch, namespace, name, 3, "1")

    before = job("before")
    placed = wait_bound(cluster, before, 3, timeout=60)
    assert {p.spec.node_name for p in placed} == {second}, [p.spec.node_name for p in placed]

    cluster.core.patch_namespaced_pod_status(
        "theirs", namespace, {"status": {"nominatedNodeName": None}}
    )
    after = job("after")
    placed = wait_bound(cluster, after, 3, timeout=60)
    # co-1 has 1 cpu left: at least two members of the second gang are on co-0.
    assert sum(1 for p in placed if p.spec.node_name == first) >= 2
    holds(
        lambda: all(p.spec.node_name for p in members(cluster, before)),
        1,
        what="the first gang stays bound",
    )
    for name in ("before", "after"):
        batch.delete_namespaced_job(name, namespace, propagation_policy="Background")


def test_a_gang_leaves_alone_the_room_another_schedulers_untried_pod_is_likely_to_take(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    batch: client.BatchV1Api,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    """Nodes of 8 and 3 cpu; another scheduler's pod of 7 cpu, not tried yet, fits only on the
    first: a gang of 2 pods of 1 cpu, which would go there (the emptier node), goes to the
    second. Nobody runs that scheduler: once the pod is older than othersInFlightFor (10 s),
    its room is free, and a gang of 3 pods of 2 cpu that only the first node holds binds
    there."""
    cluster = clean_nodes
    [first] = cluster.add_nodes(["fl-0"], {"cpu": "8", "memory": "16Gi"})
    [second] = cluster.add_nodes(["fl-1"], {"cpu": "3", "memory": "16Gi"})
    cluster.create_pod(
        namespace, pod_body("theirs", requests={"cpu": "7"}, scheduler="other-scheduler")
    )

    def job(name: str, size: int, cpu: str) -> Gang:
        return _gang_job(gang_book, batch, namespace, name, size, cpu)

    before = job("before", 2, "1")
    placed = wait_bound(cluster, before, 2, timeout=60)
    assert [p.spec.node_name for p in placed] == [second, second]

    after = job("after", 3, "2")
    placed = wait_bound(cluster, after, 3, timeout=90)
    assert {p.spec.node_name for p in placed} == {first}
    theirs = cluster.pod(namespace, "theirs")
    assert theirs.spec.node_name is None and not theirs.status.conditions
    for name in ("before", "after"):
        batch.delete_namespaced_job(name, namespace, propagation_policy="Background")
