"""The Kubeflow MPI operator v0.6.0 (cmd/mpi-operator) as a child process of an e2e test, its
MPIJob CRD installed from the release in the Go module cache, and MPIJob bodies.

    install_crd_files(api_client, [mpijob_crd()], 60)
    with MPIOperator(kubeconfig, tmp_path / "mpi-operator.log") as operator:
        group, version, plural = MPIJOB
        cluster.custom.create_namespaced_custom_object(group, version, "ns", plural, body)

What v0.6.0 does with ``--gang-scheduling=<name>`` (pkg/controller/podgroup.go in the release):

- ``volcano``: a ``scheduling.volcano.sh/v1beta1`` PodGroup;
- any other name (``koord-scheduler``): a ``scheduling.x-k8s.io/v1alpha1`` PodGroup named after
  the job, ``minMember`` = workers + 1 (the launcher) and ``minResources`` summed over those
  members unless the job's ``runPolicy.schedulingPolicy`` says otherwise. Every worker pod and
  the launcher's pod template get the label ``scheduling.x-k8s.io/pod-group: <job>`` and their
  schedulerName is overwritten with ``<name>`` (a warning is logged if the template named
  another).

The launcher is a batch Job (kube-controller-manager makes its pod), created at start-up by
default (``launcherCreationPolicy: AtStartup``). The operator always runs leader election, with
a Lease in ``--lock-namespace``, and serves its health check on port 8080 of every interface:
the port is not configurable, so two operators cannot run on one machine.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controlplane.progress import Reporter
from harness.clients.build import MPI_OPERATOR, release_file
from harness.clients.process import ClientFailed, ClientProcess, http_ok, without

#: (group, version, plural) of MPIJobs, for CustomObjectsApi calls.
MPIJOB = ("kubeflow.org", "v2beta1", "mpijobs")
#: The Lease's namespace (the operator's default; it must exist).
LOCK_NAMESPACE = "mpi-operator"
#: Not configurable in v0.6.0 (cmd/mpi-operator/app/server.go: healthCheckPort).
HEALTH_PORT = 8080
#: Keeps kwok from completing the launcher's pod at once (controlplane/kwok-stages.yaml): a
#: finished launcher finishes the job, and the operator then deletes the workers.
KEEP_RUNNING = {"pod-complete.stage.kwok.x-k8s.io/delay": "1h"}
#: Labels the operator puts on the pods it makes (pkg/apis/kubeflow/v2beta1/constants.go).
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
ROLE_LABEL = "training.kubeflow.org/job-role"


def mpijob_crd() -> Path:
    """``mpijobs.kubeflow.org`` as the release ships it (manifests/base)."""
    return release_file(MPI_OPERATOR, "manifests", "base", "kubeflow.org_mpijobs.yaml")


class MPIOperator(ClientProcess):
    """One MPI operator process, watching every namespace, with its Lease in
    ``LOCK_NAMESPACE`` (created by the caller). ``start()`` returns once it leads and its
    workers run."""

    binary_spec = MPI_OPERATOR

    def __init__(
        self,
        kubeconfig: Path | str,
        log_path: Path | str,
        *,
        gang_scheduling: str = "koord-scheduler",
        lock_namespace: str = LOCK_NAMESPACE,
        binary: Path | None = None,
        reporter: Reporter | None = None,
    ) -> None:
        super().__init__(kubeconfig, log_path, binary=binary, reporter=reporter)
        self.gang_scheduling = gang_scheduling
        self.lock_namespace = lock_namespace

    def argv(self) -> list[str]:
        assert self.binary is not None
        return [
            str(self.binary),
            f"--kubeConfig={self.kubeconfig}",
            f"--gang-scheduling={self.gang_scheduling}",
            f"--lock-namespace={self.lock_namespace}",
            "--monitoring-port=0",  # no metrics server
            "--kube-api-qps=50",
            "--kube-api-burst=100",
        ]

    def environment(self) -> dict[str, str]:
        # KUBEFLOW_NAMESPACE would restrict it to one namespace behind our back.
        return without(super().environment(), "KUBEFLOW_NAMESPACE")

    def describe(self) -> str:
        return f"starting mpi-operator {MPI_OPERATOR.version} (gang: {self.gang_scheduling})"

    def before_start(self) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("0.0.0.0", HEALTH_PORT))
            except OSError as error:
                raise ClientFailed(
                    f"mpi-operator serves its health check on port {HEALTH_PORT}, which is "
                    f"taken ({error}); stop what listens there"
                ) from error

    def not_started_yet(self) -> str | None:
        if not http_ok(f"http://127.0.0.1:{HEALTH_PORT}/healthz"):
            return f"its /healthz on port {HEALTH_PORT} does not answer yet"
        if not self.logged("Leading started"):
            return f"it does not lead yet (Lease in namespace {self.lock_namespace})"
        if not self.logged("Started workers"):
            return "its workers have not started"
        return None


def mpijob_body(
    name: str,
    *,
    workers: int = 2,
    cpu: str = "1",
    launcher_cpu: str | None = None,
    image: str = "registry.k8s.io/pause:3.10",
    scheduler_name: str | None = None,
    min_available: int | None = None,
    schedule_timeout_seconds: int | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An MPIJob (kubeflow.org/v2beta1) of one launcher and ``workers`` workers, each one
    container requesting ``cpu`` (the launcher ``launcher_cpu``, default the same). The
    launcher's pod is kept running (``KEEP_RUNNING``) so that the job does not finish under
    the test. ``scheduler_name`` sets the templates' schedulerName, which the operator
    overwrites in gang mode."""

    def replica(count: int, role: str, requests: str, annotations: Mapping[str, str]) -> Any:
        spec: dict[str, Any] = {
            "containers": [
                {"name": role, "image": image, "resources": {"requests": {"cpu": requests}}}
            ],
            "terminationGracePeriodSeconds": 0,
        }
        if scheduler_name:
            spec["schedulerName"] = scheduler_name
        metadata = {"annotations": dict(annotations)} if annotations else {}
        return {"replicas": count, "template": {"metadata": metadata, "spec": spec}}

    policy: dict[str, Any] = {}
    if min_available is not None:
        policy["minAvailable"] = min_available
    if schedule_timeout_seconds is not None:
        policy["scheduleTimeoutSeconds"] = schedule_timeout_seconds
    run_policy: dict[str, Any] = {"cleanPodPolicy": "Running"}
    if policy:
        run_policy["schedulingPolicy"] = policy
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": f"{MPIJOB[0]}/{MPIJOB[1]}",
        "kind": "MPIJob",
        "metadata": metadata,
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": run_policy,
            "mpiReplicaSpecs": {
                "Launcher": replica(1, "launcher", launcher_cpu or cpu, KEEP_RUNNING),
                "Worker": replica(workers, "worker", cpu, {}),
            },
        },
    }
