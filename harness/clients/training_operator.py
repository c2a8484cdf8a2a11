"""The Kubeflow training-operator v1.7.0 (cmd/training-operator.v1) as a child process of an e2e
test, its CRDs installed from the release in the Go module cache, and PyTorchJob bodies.

    install_crds(api_client, operator_crds(["pytorchjob"]))   # PodGroup CRDs: manifests/crds
    with TrainingOperator(kubeconfig, tmp_path / "training-operator.log") as operator:
        group, version, plural = PYTORCHJOB
        custom.create_namespaced_custom_object(group, version, "ns", plural, pytorchjob_body("j"))
        ...                       # on failure, attach operator.log_path (or operator.log_tail())

What v1.7.0 does with ``--gang-scheduler-name`` (pkg/controller.v1 in the release):

- ``volcano``: a ``scheduling.volcano.sh/v1beta1`` PodGroup named after the job (spec.minMember,
  minResources, queue, priorityClassName; never minTaskMember), and no pod until the PodGroup's
  ``status.phase`` is set and is not ``Pending`` (control/podgroup_control.go:81-87, used at
  common/job.go:318-330). Pods get the annotations ``scheduling.k8s.io/group-name: <job>`` and
  ``volcano.sh/task-spec: <master|worker>`` and schedulerName ``volcano`` if the template has none.
- any other name (``koord-scheduler``): a ``scheduling.x-k8s.io/v1alpha1`` PodGroup named after
  the job (spec.minMember, minResources, scheduleTimeoutSeconds), pods created at once with the
  label ``scheduling.x-k8s.io/pod-group: <job>`` and schedulerName ``<name>`` if the template has
  none (control/podgroup_control.go:131-153, common/job.go:296-308).
- empty: no PodGroup, pods keep the template's schedulerName.

The operator watches PodGroups only if their CRD is served when it starts
(pytorch/pytorchjob_controller.go:221-236), so ``start()`` waits for that watch too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from controlplane.crds import install_crd_files
from controlplane.ports import free_loopback_ports
from controlplane.progress import Reporter
from harness.clients.build import (
    TRAINING_OPERATOR,
    scheduler_plugins_podgroup_crd,
    training_operator_crds,
    volcano_podgroup_crd,
)
from harness.clients.process import ClientProcess, http_ok, without

VOLCANO = "volcano"
#: (group, version, plural) of PyTorchJobs, for CustomObjectsApi calls.
PYTORCHJOB = ("kubeflow.org", "v1", "pytorchjobs")
#: (group, version, plural) of the PodGroups the operator writes in each mode.
XK8S_PODGROUP = ("scheduling.x-k8s.io", "v1alpha1", "podgroups")
VOLCANO_PODGROUP = ("scheduling.volcano.sh", "v1beta1", "podgroups")

#: --enable-scheme value (the kind, lower case) -> (CRD file in manifests/base/crds, controller).
SCHEMES: Mapping[str, tuple[str, str]] = {
    "pytorchjob": ("kubeflow.org_pytorchjobs.yaml", "pytorchjob-controller"),
    "tfjob": ("kubeflow.org_tfjobs.yaml", "tfjob-controller"),
    "mxjob": ("kubeflow.org_mxjobs.yaml", "mxjob-controller"),
    "xgboostjob": ("kubeflow.org_xgboostjobs.yaml", "xgboostjob-controller"),
    "mpijob": ("kubeflow.org_mpijobs.yaml", "mpijob-controller"),
    "paddlejob": ("kubeflow.org_paddlejobs.yaml", "paddlejob-controller"),
}


def podgroup_api(gang_scheduler_name: str) -> tuple[str, str, str] | None:
    """(group, version, plural) of the PodGroups the operator writes with this
    ``--gang-scheduler-name`` (None: no gang scheduling)."""
    if not gang_scheduler_name:
        return None
    if gang_scheduler_name.lower() == VOLCANO:  # compared with strings.EqualFold
        return VOLCANO_PODGROUP
    return XK8S_PODGROUP


def operator_crds(schemes: Iterable[str] = ("pytorchjob",)) -> list[Path]:
    """The operator's job CRDs for ``schemes``, from its release. The PodGroup CRDs it writes
    come from manifests/crds (``LocalControlPlane.up()`` installs them); see
    ``release_podgroup_crd`` for the upstream ones."""
    schemes = [s.lower() for s in schemes]
    unknown = [s for s in schemes if s not in SCHEMES]
    if unknown:
        raise ValueError(f"unknown schemes {unknown}; known: {', '.join(SCHEMES)}")
    return training_operator_crds([SCHEMES[s][0] for s in schemes])


def release_podgroup_crd(gang_scheduler_name: str) -> Path | None:
    """The upstream CRD of the PodGroups the operator writes in this mode, from the releases it
    links (scheduler-plugins v0.26.7, Volcano v1.7.0); None without gang scheduling. Installing
    it replaces the copy of manifests/crds: only for clusters without koordgang's CRDs."""
    api = podgroup_api(gang_scheduler_name)
    if api == VOLCANO_PODGROUP:
        return volcano_podgroup_crd()
    if api == XK8S_PODGROUP:
        return scheduler_plugins_podgroup_crd()
    return None


def install_crds(api_client: Any, paths: Sequence[Path], timeout: float = 60.0) -> list[str]:
    """Creates (or replaces) each CRD file and waits until all are Established; returns their
    names."""
    return install_crd_files(api_client, paths, timeout)


class TrainingOperator(ClientProcess):
    """One training-operator process. ``start()`` builds it if needed (cached), spawns it with
    its endpoints on free loopback ports and leader election off, and returns once the
    controllers of ``schemes`` have started their workers; ``stop()`` ends it. Everything it
    prints goes to ``log_path``."""

    binary_spec = TRAINING_OPERATOR

    def __init__(
        self,
        kubeconfig: Path | str,
        log_path: Path | str,
        *,
        gang_scheduler_name: str = "koord-scheduler",
        schemes: Sequence[str] = ("pytorchjob",),
        namespace: str | None = None,
        binary: Path | None = None,
        extra_args: Sequence[str] = (),
        reporter: Reporter | None = None,
    ) -> None:
        super().__init__(
            kubeconfig, log_path, binary=binary, extra_args=extra_args, reporter=reporter
        )
        self.gang_scheduler_name = gang_scheduler_name
        self.schemes = [s.lower() for s in schemes]
        unknown = [s for s in self.schemes if s not in SCHEMES]
        if unknown or not self.schemes:
            # Without --enable-scheme it would start every controller, and each fails on a
            # missing CRD.
            raise ValueError(f"schemes must name some of {', '.join(SCHEMES)}; got {schemes}")
        self.namespace = namespace
        self.metrics_port, self.health_port, self.webhook_port = free_loopback_ports(3)

    def argv(self) -> list[str]:
        assert self.binary is not None
        args = [
            str(self.binary),
            f"--kubeconfig={self.kubeconfig}",
            f"--gang-scheduler-name={self.gang_scheduler_name}",
            *(f"--enable-scheme={s}" for s in self.schemes),
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
            # The webhook server's port: v1.7.0 registers no webhook, so nothing binds it.
            f"--monitoring-port={self.webhook_port}",
            "--leader-elect=false",
            "--zap-log-level=info",
        ]
        if self.namespace:
            args.append(f"--namespace={self.namespace}")
        return args + self.extra_args

    def environment(self) -> dict[str, str]:
        # KUBEFLOW_NAMESPACE would restrict it to one namespace behind our back.
        return without(super().environment(), "KUBEFLOW_NAMESPACE")

    def describe(self) -> str:
        return f"starting training-operator (gang: {self.gang_scheduler_name})"

    def not_started_yet(self) -> str | None:
        # controller-runtime logs `Starting workers {"controller": "pytorchjob-controller", ...}`
        # when a controller starts; the operator adds its PodGroup watch just after, logging
        # `Starting EventSource {"controller": ..., "source": "kind source: *v1alpha1.PodGroup"}`
        # (*v1beta1.PodGroup: Volcano's), and only if the PodGroup CRD is served by then.
        wanted = [("Starting workers", SCHEMES[s][1]) for s in self.schemes]
        api = podgroup_api(self.gang_scheduler_name)
        if api is not None:
            source = f"kind source: *{api[1]}.PodGroup"
            wanted += [(source, SCHEMES[s][1]) for s in self.schemes]
        if not http_ok(f"http://127.0.0.1:{self.health_port}/readyz"):
            return "its /readyz does not answer yet"
        missing = [(t, c) for t, c in wanted if not self.logged(t, f'"{c}"')]
        if not missing:
            return None
        hint = ""
        if any("PodGroup" in text for text, _ in missing):
            hint = f" (is the {api and api[0]} PodGroup CRD installed?)"
        return f"it has not logged {missing}{hint}"


def pytorchjob_body(
    name: str,
    *,
    workers: int = 1,
    cpu: str = "100m",
    memory: str | None = None,
    image: str = "registry.k8s.io/pause:3.10",
    scheduler_name: str | None = None,
    min_available: int | None = None,
    min_resources: Mapping[str, str] | None = None,
    schedule_timeout_seconds: int | None = None,
    queue: str | None = None,
    priority_class: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A PyTorchJob of 1 master + ``workers`` workers, each one container named ``pytorch`` (the
    operator rejects replicas without one) requesting ``cpu`` (and ``memory``).

    ``scheduler_name`` None leaves the templates' schedulerName empty: with gang scheduling on,
    the operator fills in its ``--gang-scheduler-name`` (``volcano`` in Volcano mode); without,
    the API server's default-scheduler applies. A name set here is kept as is (the operator
    only records a SettedPodTemplateSchedulerName warning event if it differs).

    Workers also get the operator's init container ``init-pytorch`` (alpine:3.10, requests
    cpu 50m / memory 10Mi), which the PodGroup's computed minResources does not count.
    ``annotations`` are copied onto the PodGroup too (the operator copies the job's)."""
    requests = {"cpu": cpu}
    if memory:
        requests["memory"] = memory

    def replica(count: int) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [
                {"name": "pytorch", "image": image, "resources": {"requests": requests}}
            ],
            "terminationGracePeriodSeconds": 0,
        }
        if scheduler_name:
            spec["schedulerName"] = scheduler_name
        return {"replicas": count, "restartPolicy": "OnFailure", "template": {"spec": spec}}

    replicas = {"Master": replica(1)}
    if workers:
        replicas["Worker"] = replica(workers)
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    body: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": metadata,
        "spec": {"pytorchReplicaSpecs": replicas},
    }
    policy: dict[str, Any] = {}
    if min_available is not None:
        policy["minAvailable"] = min_available
    if min_resources:
        policy["minResources"] = dict(min_resources)
    if schedule_timeout_seconds is not None:
        policy["scheduleTimeoutSeconds"] = schedule_timeout_seconds
    if queue:
        policy["queue"] = queue
    if priority_class:
        policy["priorityClass"] = priority_class
    if policy:
        body["spec"]["runPolicy"] = {"schedulingPolicy": policy}
    return body
