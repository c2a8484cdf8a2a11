"""KubeRay's ray-operator v1.5.0, built from its release, with
``--batch-scheduler=scheduler-plugins``: it writes a scheduling.x-k8s.io PodGroup for a
RayCluster labelled for gang scheduling and hard-codes ``scheduler-plugins-scheduler`` on every
pod. One koordgang answering to both ``koord-scheduler`` and that name takes the cluster: with
room for all but one member it waits whole and says why; once room comes it binds whole, and
what it tells users names the pods' own scheduler."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.crds import install_crd_files
from harness.checks import check_then_delete
from harness.clients.process import ClientProcess
from harness.clients.ray_operator import (
    CLUSTER_LABEL,
    HARD_CODED_SCHEDULER,
    NODE_TYPE_LABEL,
    RAYCLUSTER,
    RayOperator,
    ray_crds,
    raycluster_body,
)
from harness.gangs import (
    X_K8S,
    X_K8S_LABEL,
    group_object,
    holds,
    wait_explained,
)
from harness.kube import SCHEDULER, Cluster, bound, pod_body, scheduled_by, wait_until


@pytest.fixture(scope="module")
def ray_crds_installed(cluster: Cluster) -> None:
    install_crd_files(cluster.api_client, ray_crds(), 60)


@pytest.fixture
def rayclusters(cluster: Cluster, namespace: str) -> Iterator[None]:
    """Checks the invariants after the test, then deletes its RayClusters and PodGroups."""
    yield
    check_then_delete(cluster, namespace, [RAYCLUSTER, (*X_K8S, "podgroups")])


def ray_pods(cluster: Cluster, namespace: str, name: str) -> list[Any]:
    return [
        p
        for p in cluster.pods(namespace, f"{CLUSTER_LABEL}={name}")
        if p.metadata.deletion_timestamp is None
    ]


def test_a_raycluster_waits_whole_then_binds_whole_under_the_name_kuberay_hard_codes(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    tmp_path: Path,
    ray_crds_installed: None,
    daemon_factory: Any,
    clients: list[ClientProcess],
    rayclusters: None,
) -> None:
    cluster = clean_nodes
    daemon = daemon_factory("--scheduler-name", SCHEDULER, "--scheduler-name", HARD_CODED_SCHEDULER)
    daemon.start()
    operator = RayOperator(kubeconfig, tmp_path / "ray-operator.log")
    operator.start()
    clients.append(operator)
    # Room for three of the cluster's four members (a head and three workers of 2 cpu each),
    # and a pod of our own name beside it.
    cluster.add_nodes(["ray-1"], {"cpu": "7", "memory": "32Gi"})
    cluster.create_pod(namespace, pod_body("ours", requests={"cpu": "1"}))
    group, version, plural = RAYCLUSTER
    body = raycluster_body("llm", workers=3, cpu="2")
    cluster.custom.create_namespaced_custom_object(group, version, namespace, plural, body)

    pods = wait_until(
        lambda: len(p := ray_pods(cluster, namespace, "llm")) == 4 and p,
        timeout=60,
        what="the operator's head and three workers",
    )
    types = sorted((p.metadata.labels or {}).get(NODE_TYPE_LABEL, "") for p in pods)
    assert types == ["head", "worker", "worker", "worker"], types
    assert {p.spec.scheduler_name for p in pods} == {HARD_CODED_SCHEDULER}
    assert {(p.metadata.labels or {}).get(X_K8S_LABEL) for p in pods} == {"llm"}
    podgroup = group_object(cluster, X_K8S, namespace, "llm")
    assert podgroup is not None and podgroup["spec"]["minMember"] == 4
    wait_until(lambda: bound([cluster.pod(namespace, "ours")]), what="our own pod bound")
    assert scheduled_by(cluster, namespace, "ours") == {SCHEDULER}
    messages = wait_explained(
        cluster, namespace, [p.metadata.name for p in pods], f"gang {namespace}/llm"
    )
    assert all("minResources do not fit" in m or "min 4" in m for m in messages.values())
    holds(lambda: not bound(ray_pods(cluster, namespace, "llm")), 3, what="nothing bound")

    cluster.add_nodes(["ray-2"], {"cpu": "6", "memory": "32Gi"})
    pods = wait_until(
        lambda: len(b := bound(ray_pods(cluster, namespace, "llm"))) == 4 and b,
        timeout=60,
        what="all four members bound",
    )
    for pod in pods:
        assert scheduled_by(cluster, namespace, pod.metadata.name) == {HARD_CODED_SCHEDULER}
    wait_until(
        lambda: (
            ((group_object(cluster, X_K8S, namespace, "llm") or {}).get("status") or {}).get(
                "phase"
            )
            in ("Scheduled", "Running", "Finished")
        ),
        timeout=30,
        what="PodGroup phase Scheduled or Running",
    )
    operator.check_alive()
