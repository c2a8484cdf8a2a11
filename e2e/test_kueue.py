"""Kueue v0.17.0, built from its release, in front of koordgang: its webhooks suspend queued
Jobs and gate queued pods; its admission (quota) releases them; koordgang binds what Kueue
admitted, whole.

- Jobs ganged with a scheduling.x-k8s.io PodGroup: with quota for one job at a time, the
  second waits suspended (no pod at all) while the first runs; the first, admitted onto room
  for all but one member, waits whole and says why, then binds whole once room comes; the
  second is admitted when the first goes, and binds whole.
- Kueue's plain pod groups: every pod is gated by Kueue's webhook on creation; with quota for
  one group, the first is released and binds whole while the second stays gated, unbound;
  once the first goes, the second is released and binds whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controlplane.crds import install_crd_files
from harness.clients.kueue import (
    ADMISSION_GATE,
    API,
    GROUP_NAME_LABEL,
    GROUP_TOTAL_ANNOTATION,
    NAMESPACE,
    QUEUE_LABEL,
    Kueue,
    kueue_crds,
    queue_bodies,
    strip_finalizers,
    strip_object_finalizers,
)
from harness.daemon import Daemon
from harness.gangs import X_K8S, X_K8S_LABEL, assert_no_partial_gangs, holds, wait_explained
from harness.invariants import assert_invariants
from harness.kube import (
    KEEP_RUNNING,
    SCHEDULER,
    Cluster,
    bound,
    job_body,
    json_object,
    pod_body,
    wait_until,
)

QUEUE = "team-a"


@pytest.fixture(scope="module")
def kueue_crds_installed(cluster: Cluster) -> None:
    if os.environ.get("KOORDGANG_E2E_KUBECONFIG"):
        pytest.skip(
            "Kueue's webhooks are served on this machine, which the API server in a kind "
            "container cannot reach (its ExternalName Service names 127.0.0.1)"
        )
    install_crd_files(cluster.api_client, kueue_crds(), 60)
    cluster.ensure_namespace(NAMESPACE)


class KueueSetup:
    """Starts Kueue for the test's namespace and makes its queues; at the end deletes the
    namespace's Jobs and pods while Kueue still runs (it holds a finalizer on its pods), then
    the queues, then stops Kueue."""

    def __init__(self, cluster: Cluster, namespace: str, kubeconfig: str, log: Path) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.cluster_queue = f"cq-{namespace}"
        self.kueue = Kueue(kubeconfig, log, cluster.api_client, [namespace])
        self.queues: list[tuple[str, dict[str, Any]]] = []

    def start(self, quota: dict[str, str]) -> None:
        self.kueue.start()
        for plural, body in queue_bodies(self.cluster_queue, QUEUE, self.namespace, quota):
            try:
                if plural == "localqueues":
                    self.cluster.custom.create_namespaced_custom_object(
                        *API, self.namespace, plural, body
                    )
                else:
                    self.cluster.custom.create_cluster_custom_object(*API, plural, body)
            except ApiException as error:
                if error.status != 409:  # the flavor is shared by every test
                    raise
            self.queues.append((plural, body))

    def close(self) -> None:
        batch = client.BatchV1Api(self.cluster.api_client)
        try:
            batch.delete_collection_namespaced_job(self.namespace, propagation_policy="Background")
            self.cluster.core.delete_collection_namespaced_pod(
                self.namespace, grace_period_seconds=0
            )
            wait_until(
                lambda: not self.cluster.pods(self.namespace),
                timeout=30,
                what="the namespace's pods gone (Kueue removes its finalizer)",
            )
        finally:
            try:
                self._delete_queues()
                # Kueue keeps a finalizer on a ClusterQueue while Workloads use it.
                wait_until(
                    lambda: not self._left(),
                    timeout=30,
                    what="the queues and Workloads gone (Kueue removes their finalizers)",
                )
            finally:
                self.kueue.stop()
                strip_finalizers(self.cluster.core, self.namespace)
                for plural, namespace, name in self._left():
                    strip_object_finalizers(self.cluster.custom, plural, namespace, name)

    def _delete_queues(self) -> None:
        for plural, body in reversed(self.queues):
            name = body["metadata"]["name"]
            try:
                if plural == "localqueues":
                    self.cluster.custom.delete_namespaced_custom_object(
                        *API, self.namespace, plural, name
                    )
                elif plural == "clusterqueues":
                    self.cluster.custom.delete_cluster_custom_object(*API, plural, name)
            except ApiException as error:
                if error.status != 404:
                    raise

    def _left(self) -> list[tuple[str, str | None, str]]:
        """Kueue objects of the test still there: (plural, namespace, name)."""
        left: list[tuple[str, str | None, str]] = []
        for plural in ("workloads", "localqueues"):
            listed = json_object(
                self.cluster.custom.list_namespaced_custom_object(*API, self.namespace, plural)
            )
            left += [(plural, self.namespace, o["metadata"]["name"]) for o in listed["items"]]
        try:
            self.cluster.custom.get_cluster_custom_object(*API, "clusterqueues", self.cluster_queue)
            left.append(("clusterqueues", None, self.cluster_queue))
        except ApiException as error:
            if error.status != 404:
                raise
        return left


@pytest.fixture
def kueue_setup(
    cluster: Cluster,
    namespace: str,
    kubeconfig: str,
    tmp_path: Path,
    kueue_crds_installed: None,
    request: pytest.FixtureRequest,
) -> Iterator[KueueSetup]:
    setup = KueueSetup(cluster, namespace, kubeconfig, tmp_path / "kueue.log")
    yield setup
    try:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(f"--- kueue log ---\n{setup.kueue.log_tail(8000)}")
        elif report is not None:
            assert_invariants(cluster, namespace)
            assert_no_partial_gangs(cluster, [namespace])
    finally:
        setup.close()


def pods_of(cluster: Cluster, namespace: str, selector: str) -> list[Any]:
    return [p for p in cluster.pods(namespace, selector) if p.metadata.deletion_timestamp is None]


def suspended(cluster: Cluster, namespace: str, job: str) -> bool:
    found = client.BatchV1Api(cluster.api_client).read_namespaced_job(job, namespace)
    return found.spec is not None and bool(found.spec.suspend)


def queued_job(name: str, pods: int, cpu: str) -> dict[str, Any]:
    """A Job of ``pods`` pods in Kueue's queue, ganged by a scheduling.x-k8s.io PodGroup of the
    same name, its pods kept running."""
    pod = pod_body(
        "worker",
        requests={"cpu": cpu, "memory": "1Gi"},
        labels={X_K8S_LABEL: name},
        annotations=KEEP_RUNNING,
    )
    body = job_body(name, pods, pod)
    body["metadata"]["labels"] = {QUEUE_LABEL: QUEUE}
    return body


def create_podgroup(cluster: Cluster, namespace: str, name: str, min_member: int) -> None:
    cluster.custom.create_namespaced_custom_object(
        *X_K8S,
        namespace,
        "podgroups",
        {
            "apiVersion": f"{X_K8S[0]}/{X_K8S[1]}",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"minMember": min_member},
        },
    )


def test_kueue_admits_ganged_jobs_one_at_a_time_and_each_binds_whole(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, kueue_setup: KueueSetup
) -> None:
    cluster = clean_nodes
    # Quota for one job of four 2-cpu pods; room on the nodes for three of them.
    kueue_setup.start({"cpu": "8", "memory": "16Gi"})
    cluster.add_nodes(["kq-1"], {"cpu": "7", "memory": "32Gi"})
    batch = client.BatchV1Api(cluster.api_client)
    for name in ("train-a", "train-b"):
        create_podgroup(cluster, namespace, name, 4)
        batch.create_namespaced_job(
            namespace, client.V1Job.model_validate(queued_job(name, 4, "2"))
        )
        # Kueue's webhook suspends the Job as it is created.
        assert suspended(cluster, namespace, name), f"Kueue did not suspend {name}"
        if name == "train-a":
            wait_until(
                lambda: not suspended(cluster, namespace, "train-a"),
                timeout=30,
                what="train-a admitted (unsuspended)",
            )

    pods = wait_until(
        lambda: len(p := pods_of(cluster, namespace, f"{X_K8S_LABEL}=train-a")) == 4 and p,
        timeout=60,
        what="train-a's four pods",
    )
    assert {p.spec.scheduler_name for p in pods} == {SCHEDULER}
    wait_explained(cluster, namespace, [p.metadata.name for p in pods], f"gang {namespace}/train-a")
    holds(
        lambda: (
            not bound(pods_of(cluster, namespace, f"{X_K8S_LABEL}=train-a"))
            and suspended(cluster, namespace, "train-b")
            and not pods_of(cluster, namespace, f"{X_K8S_LABEL}=train-b")
        ),
        3,
        what="train-a unbound, train-b suspended without pods",
    )

    cluster.add_nodes(["kq-2"], {"cpu": "8", "memory": "32Gi"})
    wait_until(
        lambda: len(bound(pods_of(cluster, namespace, f"{X_K8S_LABEL}=train-a"))) == 4,
        timeout=60,
        what="train-a bound whole",
    )
    holds(
        lambda: suspended(cluster, namespace, "train-b"),
        3,
        what="train-b still waits for quota",
    )

    batch.delete_namespaced_job("train-a", namespace, propagation_policy="Background")
    wait_until(
        lambda: not suspended(cluster, namespace, "train-b"),
        timeout=60,
        what="train-b admitted once train-a is gone",
    )
    wait_until(
        lambda: len(bound(pods_of(cluster, namespace, f"{X_K8S_LABEL}=train-b"))) == 4,
        timeout=60,
        what="train-b bound whole",
    )
    kueue_setup.kueue.check_alive()


def group_pod(group: str, index: int) -> dict[str, Any]:
    """A plain pod of Kueue's pod group ``group`` (three pods), in the queue, naming us."""
    return pod_body(
        f"{group}-{index}",
        requests={"cpu": "1", "memory": "1Gi"},
        labels={QUEUE_LABEL: QUEUE, GROUP_NAME_LABEL: group},
        annotations={GROUP_TOTAL_ANNOTATION: "3"},
    )


def gated(pod: Any) -> bool:
    return any(g.name == ADMISSION_GATE for g in pod.spec.scheduling_gates or [])


def test_kueue_plain_pod_groups_are_gated_then_released_one_at_a_time_and_bind_whole(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, kueue_setup: KueueSetup
) -> None:
    cluster = clean_nodes
    # Quota for one group of three 1-cpu pods; room on the node for both groups.
    kueue_setup.start({"cpu": "3", "memory": "8Gi"})
    cluster.add_nodes(["kp-1"], {"cpu": "8", "memory": "32Gi"})
    for group in ("first", "second"):
        for index in range(3):
            created = cluster.create_pod(namespace, group_pod(group, index))
            assert gated(created), f"Kueue's webhook did not gate {created.metadata.name}"

    first = f"{GROUP_NAME_LABEL}=first"
    second = f"{GROUP_NAME_LABEL}=second"
    wait_until(
        lambda: len(bound(pods_of(cluster, namespace, first))) == 3,
        timeout=60,
        what="the first group released and bound whole",
    )

    def second_waits() -> bool:
        pods = pods_of(cluster, namespace, second)
        return len(pods) == 3 and all(gated(p) for p in pods) and not bound(pods)

    holds(second_waits, 3, what="the second group gated and unbound")

    cluster.core.delete_collection_namespaced_pod(
        namespace, label_selector=first, grace_period_seconds=0
    )
    wait_until(
        lambda: len(bound(pods_of(cluster, namespace, second))) == 3,
        timeout=60,
        what="the second group released and bound whole",
    )
    kueue_setup.kueue.check_alive()
