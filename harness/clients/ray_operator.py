"""KubeRay's ray-operator v1.5.0 as a child process of an e2e test, its CRDs installed from the
release in the Go module cache, and RayCluster bodies.

What v1.5.0 does with ``--batch-scheduler=scheduler-plugins``
(controllers/ray/batchscheduler/scheduler-plugins/scheduler_plugins.go in the release), for a
RayCluster labelled ``ray.io/gang-scheduling-enabled`` (any value):

- a ``scheduling.x-k8s.io/v1alpha1`` PodGroup named after the cluster, ``minMember`` = the
  workers' desired replicas + 1 (the head), ``minResources`` = the head's and every desired
  worker's requests summed;
- every pod labelled ``scheduling.x-k8s.io/pod-group: <cluster>``, and its schedulerName set to
  ``scheduler-plugins-scheduler``, hard-coded: the instance name of scheduler-plugins' chart.
  A scheduler that is to take these pods must answer to that name.

In that mode it makes PodGroups for RayClusters only (its submission hook refuses any other
kind). A RayCluster without the label gets no PodGroup, but its pods still name
``scheduler-plugins-scheduler``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controlplane.ports import free_loopback_ports
from controlplane.progress import Reporter
from harness.clients.build import RAY_OPERATOR, release_file
from harness.clients.process import ClientProcess, http_ok

#: (group, version, plural) of RayClusters, for CustomObjectsApi calls.
RAYCLUSTER = ("ray.io", "v1", "rayclusters")
#: What the operator writes on every pod in scheduler-plugins mode.
HARD_CODED_SCHEDULER = "scheduler-plugins-scheduler"
GANG_LABEL = "ray.io/gang-scheduling-enabled"
#: Labels the operator puts on the pods it makes.
CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"


def ray_crds() -> list[Path]:
    """The CRDs the release ships (config/crd/bases): the operator watches all three kinds."""
    return [
        release_file(RAY_OPERATOR, "config", "crd", "bases", f"ray.io_{plural}.yaml")
        for plural in ("rayclusters", "rayjobs", "rayservices")
    ]


class RayOperator(ClientProcess):
    """One ray-operator process, watching every namespace, leader election off, its endpoints
    on free loopback ports. ``start()`` returns once the RayCluster controller runs."""

    binary_spec = RAY_OPERATOR

    def __init__(
        self,
        kubeconfig: Path | str,
        log_path: Path | str,
        *,
        batch_scheduler: str = "scheduler-plugins",
        binary: Path | None = None,
        reporter: Reporter | None = None,
    ) -> None:
        super().__init__(kubeconfig, log_path, binary=binary, reporter=reporter)
        self.batch_scheduler = batch_scheduler
        self.metrics_port, self.health_port = free_loopback_ports(2)

    def argv(self) -> list[str]:
        assert self.binary is not None
        args = [
            str(self.binary),
            f"--kubeconfig={self.kubeconfig}",
            f"--metrics-addr=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
            "--enable-leader-election=false",
            "--log-stdout-encoder=console",
        ]
        if self.batch_scheduler:
            args.append(f"--batch-scheduler={self.batch_scheduler}")
        return args

    def describe(self) -> str:
        return (
            f"starting ray-operator {RAY_OPERATOR.version} "
            f"(batch scheduler: {self.batch_scheduler or 'none'})"
        )

    def not_started_yet(self) -> str | None:
        if not http_ok(f"http://127.0.0.1:{self.health_port}/readyz"):
            return "its /readyz does not answer yet"
        if not self.logged("controllers.RayCluster", "Starting workers"):
            return "the RayCluster controller has not started its workers"
        return None


def raycluster_body(
    name: str,
    *,
    workers: int = 2,
    cpu: str = "1",
    head_cpu: str | None = None,
    image: str = "registry.k8s.io/pause:3.10",
    gang: bool = True,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A RayCluster (ray.io/v1) of a head and one worker group of ``workers`` fixed replicas,
    each one container requesting (and limited to) ``cpu`` (the head ``head_cpu``, default the
    same). ``gang`` sets the label that makes the operator write a PodGroup."""

    def template(container: str, requests: str) -> dict[str, Any]:
        resources = {"requests": {"cpu": requests}, "limits": {"cpu": requests}}
        return {
            "spec": {
                "containers": [{"name": container, "image": image, "resources": resources}],
                "terminationGracePeriodSeconds": 0,
            }
        }

    metadata: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if gang:
        metadata["labels"][GANG_LABEL] = "true"
    return {
        "apiVersion": f"{RAYCLUSTER[0]}/{RAYCLUSTER[1]}",
        "kind": "RayCluster",
        "metadata": metadata,
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": template("ray-head", head_cpu or cpu),
            },
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": workers,
                    "minReplicas": workers,
                    "maxReplicas": workers,
                    "rayStartParams": {},
                    "template": template("ray-worker", cpu),
                }
            ],
        },
    }
