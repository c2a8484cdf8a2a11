"""Kubeflow training-operator v1.7.0, built from its release, starts PyTorchJobs with
``--gang-scheduler-name=koord-scheduler`` (scheduler-plugins' PodGroups) and with
``--gang-scheduler-name=volcano`` (Volcano's PodGroups, pods only once the PodGroup is
enqueued). Either way a job that does not fit waits whole and says why, and binds whole once
room exists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.checks import check_then_delete
from harness.clients.training_operator import (
    PYTORCHJOB,
    VOLCANO_PODGROUP,
    XK8S_PODGROUP,
    TrainingOperator,
    install_crds,
    operator_crds,
    pytorchjob_body,
)
from harness.daemon import Daemon
from harness.gangs import group_object, holds, wait_explained
from harness.kube import SCHEDULER, Cluster, bound, wait_until

JOB_LABEL = "training.kubeflow.org/job-name"


@pytest.fixture(scope="module")
def operator_crds_installed(cluster: Cluster) -> None:
    install_crds(cluster.api_client, operator_crds(["pytorchjob"]))


@pytest.fixture
def operator_factory(
    kubeconfig: str, tmp_path: Path, operator_crds_installed: None, request: pytest.FixtureRequest
) -> Iterator[Any]:
    started: list[TrainingOperator] = []

    def start(gang_scheduler_name: str) -> TrainingOperator:
        operator = TrainingOperator(
            kubeconfig,
            tmp_path / f"training-operator-{gang_scheduler_name}.log",
            gang_scheduler_name=gang_scheduler_name,
        )
        operator.start()
        started.append(operator)
        return operator

    yield start
    for operator in started:
        operator.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for operator in started:
            print(f"--- training-operator log ---\n{operator.log_tail(8000)}")


@pytest.fixture
def jobs_check(cluster: Cluster, namespace: str) -> Iterator[None]:
    yield
    check_then_delete(cluster, namespace, [PYTORCHJOB, XK8S_PODGROUP, VOLCANO_PODGROUP])


def job_pods(cluster: Cluster, namespace: str, job: str) -> list[Any]:
    return cluster.pods(namespace, f"{JOB_LABEL}={job}")


def submit(cluster: Cluster, namespace: str, body: dict[str, Any]) -> None:
    group, version, plural = PYTORCHJOB
    cluster.custom.create_namespaced_custom_object(group, version, namespace, plural, body)


def test_a_pytorchjob_through_scheduler_plugins_podgroups_waits_whole_then_binds_whole(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    operator_factory: Any,
    jobs_check: None,
) -> None:
    cluster = clean_nodes
    operator_factory(SCHEDULER)
    # Room for three of the job's four pods (one master, three workers of 2 cpu each).
    cluster.add_nodes(["to-1"], {"cpu": "6", "memory": "32Gi"})
    submit(cluster, namespace, pytorchjob_body("bert", workers=3, cpu="2", memory="1Gi"))

    pods = wait_until(
        lambda: len(p := job_pods(cluster, namespace, "bert")) == 4 and p,
        timeout=60,
        what="the operator's four pods",
    )
    assert {p.spec.scheduler_name for p in pods} == {SCHEDULER}
    podgroup = group_object(cluster, XK8S_PODGROUP[:2], namespace, "bert")
    assert podgroup is not None and podgroup["spec"]["minMember"] == 4
    messages = wait_explained(
        cluster, namespace, [p.metadata.name for p in pods], f"gang {namespace}/bert"
    )
    assert all("minResources do not fit" in m or "min 4" in m for m in messages.values())
    holds(lambda: not bound(job_pods(cluster, namespace, "bert")), 2, what="nothing bound")

    cluster.add_nodes(["to-2"], {"cpu": "6", "memory": "32Gi"})
    wait_until(
        lambda: len(bound(job_pods(cluster, namespace, "bert"))) == 4,
        timeout=60,
        what="all four pods bound",
    )
    wait_until(
        lambda: (
            (
                (group_object(cluster, XK8S_PODGROUP[:2], namespace, "bert") or {}).get("status")
                or {}
            ).get("phase")
            in ("Scheduled", "Running", "Finished")
        ),
        timeout=30,
        what="PodGroup phase Scheduled or Running",
    )


def test_a_pytorchjob_through_volcano_podgroups_is_enqueued_then_binds_whole(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    operator_factory: Any,
    jobs_check: None,
) -> None:
    cluster = clean_nodes
    operator_factory("volcano")
    cluster.add_nodes(["tv-1"], {"cpu": "6", "memory": "32Gi"})
    # In Volcano mode the operator would name the pods' scheduler "volcano" unless the
    # template names one.
    body = pytorchjob_body("gpt", workers=3, cpu="2", memory="1Gi", scheduler_name=SCHEDULER)
    submit(cluster, namespace, body)

    def status() -> dict[str, Any]:
        obj = group_object(cluster, VOLCANO_PODGROUP[:2], namespace, "gpt") or {}
        found: dict[str, Any] = obj.get("status") or {}
        return found

    pending = wait_until(
        lambda: (s := status()).get("phase") == "Pending" and s.get("conditions") and s,
        timeout=60,
        what="the Volcano PodGroup Pending, with its reason",
    )
    assert "minResources do not fit the free room" in pending["conditions"][0]["message"]
    # Not enqueued: the operator makes no pod at all.
    holds(lambda: not job_pods(cluster, namespace, "gpt"), 3, what="no pod made")

    cluster.add_nodes(["tv-2"], {"cpu": "6", "memory": "32Gi"})
    wait_until(
        lambda: status().get("phase") in ("Inqueue", "Running"),
        timeout=30,
        what="the Volcano PodGroup Inqueue",
    )
    wait_until(
        lambda: len(bound(job_pods(cluster, namespace, "gpt"))) == 4,
        timeout=60,
        what="all four pods made and bound",
    )
    wait_until(
        lambda: status().get("phase") in ("Running", "Completed"),
        timeout=30,
        what="the Volcano PodGroup Running",
    )
