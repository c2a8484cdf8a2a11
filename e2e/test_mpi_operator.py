"""The Kubeflow MPI operator v0.6.0, built from its release, runs MPIJobs with
``--gang-scheduling=koord-scheduler``: it writes a scheduling.x-k8s.io PodGroup (workers + the
launcher) and the pods, the launcher's through a batch Job. A job with room for all but one
of its members waits whole and says why; once room comes it binds whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.crds import install_crd_files
from harness.checks import check_then_delete
from harness.clients.mpi_operator import (
    JOB_NAME_LABEL,
    LOCK_NAMESPACE,
    MPIJOB,
    ROLE_LABEL,
    MPIOperator,
    mpijob_body,
    mpijob_crd,
)
from harness.clients.process import ClientProcess
from harness.daemon import Daemon
from harness.gangs import (
    X_K8S,
    X_K8S_LABEL,
    group_object,
    holds,
    wait_explained,
)
from harness.kube import SCHEDULER, Cluster, bound, wait_until


@pytest.fixture(scope="module")
def mpi_operator_ready(cluster: Cluster) -> None:
    install_crd_files(cluster.api_client, [mpijob_crd()], 60)
    cluster.ensure_namespace(LOCK_NAMESPACE)


@pytest.fixture
def mpijobs(cluster: Cluster, namespace: str) -> Iterator[None]:
    """Checks the invariants after the test, then deletes its MPIJobs and PodGroups."""
    yield
    check_then_delete(cluster, namespace, [MPIJOB, (*X_K8S, "podgroups")])


def job_pods(cluster: Cluster, namespace: str, job: str) -> list[Any]:
    """The job's pods: the workers (labelled by the operator) and the launcher (its Job's pod,
    labelled from the template the operator wrote)."""
    return [
        p
        for p in cluster.pods(namespace, f"{X_K8S_LABEL}={job}")
        if p.metadata.deletion_timestamp is None
    ]


def test_an_mpijob_waits_whole_for_room_then_binds_whole(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    tmp_path: Path,
    mpi_operator_ready: None,
    daemon: Daemon,
    clients: list[ClientProcess],
    mpijobs: None,
) -> None:
    cluster = clean_nodes
    operator = MPIOperator(kubeconfig, tmp_path / "mpi-operator.log")
    operator.start()
    clients.append(operator)
    # Room for three of the job's four members (a launcher and three workers of 2 cpu each).
    cluster.add_nodes(["mpi-1"], {"cpu": "6", "memory": "32Gi"})
    group, version, plural = MPIJOB
    body = mpijob_body("allreduce", workers=3, cpu="2", scheduler_name="default-scheduler")
    cluster.custom.create_namespaced_custom_object(group, version, namespace, plural, body)

    pods = wait_until(
        lambda: len(p := job_pods(cluster, namespace, "allreduce")) == 4 and p,
        timeout=60,
        what="the operator's three workers and the launcher Job's pod",
    )
    roles = sorted((p.metadata.labels or {}).get(ROLE_LABEL, "") for p in pods)
    assert roles == ["launcher", "worker", "worker", "worker"], roles
    assert all((p.metadata.labels or {}).get(JOB_NAME_LABEL) == "allreduce" for p in pods), (
        "the operator's job label"
    )
    # Gang mode overwrites the templates' schedulerName with ours.
    assert {p.spec.scheduler_name for p in pods} == {SCHEDULER}
    podgroup = group_object(cluster, X_K8S, namespace, "allreduce")
    assert podgroup is not None and podgroup["spec"]["minMember"] == 4
    messages = wait_explained(
        cluster, namespace, [p.metadata.name for p in pods], f"gang {namespace}/allreduce"
    )
    assert all("minResources do not fit" in m or "min 4" in m for m in messages.values())
    holds(lambda: not bound(job_pods(cluster, namespace, "allreduce")), 3, what="nothing bound")

    cluster.add_nodes(["mpi-2"], {"cpu": "6", "memory": "32Gi"})
    wait_until(
        lambda: len(bound(job_pods(cluster, namespace, "allreduce"))) == 4,
        timeout=60,
        what="all four members bound",
    )
    wait_until(
        lambda: (
            ((group_object(cluster, X_K8S, namespace, "allreduce") or {}).get("status") or {}).get(
                "phase"
            )
            in ("Scheduled", "Running", "Finished")
        ),
        timeout=30,
        what="PodGroup phase Scheduled or Running",
    )
    operator.check_alive()
