"""Kueue v0.17.0 (cmd/kueue) as a child process of an e2e test, with its webhooks served to the
API server, its CRDs and webhook configurations taken from the release in the Go module cache,
and the bodies of its queues.

Kueue normally runs in-cluster behind a Service. Here it runs on this machine and everything
else is as its release installs it: its internal certificate management makes the serving
certificate (for ``kueue-webhook-service.kueue-system.svc``) and injects its CA into the
webhook configurations and the CRDs' conversion webhooks, named as the release names them.
Two things differ: the Service is an ExternalName Service whose name is ``127.0.0.1``, which
the API server resolves to this machine (the webhooks and conversions name the free port Kueue
serves on), and the Secret Kueue fills is copied into its certificate folder by a thread of
ours, as the kubelet would mount it into Kueue's pod. The webhook configurations keep the
webhooks of the frameworks enabled (``batch/job`` and ``pod``) and of Kueue's own objects, and
see the pods and Jobs of the given namespaces only: a webhook whose server is gone fails every
request it matches, so ``stop()`` removes them before it ends the process.

What Kueue does with what it manages, as the release has it:

- a Job labelled ``kueue.x-k8s.io/queue-name`` is suspended on creation and unsuspended when
  its Workload is admitted (quota reserved), so the Job controller makes no pod before then;
- a plain pod labelled with a queue gets the scheduling gate ``kueue.x-k8s.io/admission`` and a
  finalizer; pods labelled ``kueue.x-k8s.io/pod-group-name`` with the annotation
  ``kueue.x-k8s.io/pod-group-total-count`` are one Workload, admitted once all of them exist,
  and released by removing the gate from each. Kueue removes its finalizer when a pod is
  deleted, so its pods must go while it runs (``stop()`` strips what is left).
"""

from __future__ import annotations

import base64
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from controlplane.ports import free_loopback_ports
from controlplane.progress import Reporter
from harness.clients.build import KUEUE, module_source, release_file
from harness.clients.process import ClientProcess, http_ok

API = ("kueue.x-k8s.io", "v1beta2")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_TOTAL_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
FINALIZER = "kueue.x-k8s.io/managed"
#: Kueue's namespace (the default of its configuration; it must exist).
NAMESPACE = "kueue-system"
#: Frameworks enabled here, and the webhook paths they and Kueue's own objects serve.
FRAMEWORKS = ("batch/job", "pod")
_OWN_OBJECTS = ("kueue-x-k8s-io-v1beta2-",)
_FRAMEWORK_PATHS = ("-batch-v1-job", "--v1-pod")
#: Webhooks on users' objects: narrowed to the test's namespaces.
_USER_OBJECT_PATHS = _FRAMEWORK_PATHS


def kueue_crds() -> list[Path]:
    """Every CRD the release ships (config/components/crd/bases): its controllers watch them."""
    directory = module_source(KUEUE) / "config" / "components" / "crd" / "bases"
    return sorted(directory.glob("kueue.x-k8s.io_*.yaml"))


#: As the release's kustomization names them (namePrefix ``kueue-``, namespace kueue-system).
SERVICE = "kueue-webhook-service"
SECRET = "kueue-webhook-server-cert"
#: The CRDs the release gives a conversion webhook (config/components/crd/patches).
CONVERTED = ("localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters")


def webhook_configurations(port: int, namespaces: Iterable[str]) -> list[dict[str, Any]]:
    """The release's mutating and validating webhook configurations under the release's names,
    kept to the webhooks this Kueue serves, calling ``kueue-webhook-service`` on ``port``; the
    webhooks on Jobs and pods see only ``namespaces``. Kueue injects the CA."""
    source = release_file(KUEUE, "config", "components", "webhook", "manifests.yaml")
    documents = [d for d in yaml.safe_load_all(source.read_text()) if d]
    names = list(namespaces)
    out = []
    for document in documents:
        kept = []
        for webhook in document.get("webhooks") or []:
            path = webhook["clientConfig"]["service"]["path"]
            if not any(p in path for p in _OWN_OBJECTS + _FRAMEWORK_PATHS):
                continue
            webhook["clientConfig"] = {"service": _service(path, port)}
            if any(path.endswith(p) for p in _USER_OBJECT_PATHS):
                webhook["namespaceSelector"] = {
                    "matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": names}
                    ]
                }
            kept.append(webhook)
        suffix = "mutating" if document["kind"].startswith("Mutating") else "validating"
        document["metadata"] = {"name": f"kueue-{suffix}-webhook-configuration"}
        document["webhooks"] = kept
        out.append(document)
    return out


def conversion(port: int) -> dict[str, Any]:
    """``spec.conversion`` of the CRDs in ``CONVERTED``, as the release's patches set it."""
    return {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"service": _service("/convert", port)},
            "conversionReviewVersions": ["v1"],
        },
    }


def _service(path: str, port: int) -> dict[str, Any]:
    return {"namespace": NAMESPACE, "name": SERVICE, "path": path, "port": port}


class Kueue(ClientProcess):
    """One Kueue manager, leader election off, its health, metrics and webhook endpoints on free
    loopback ports, its webhooks registered for ``namespaces``. ``start()`` installs the
    Service, the empty Secret Kueue fills, the webhook configurations and the CRDs' conversion,
    and returns once its webhook server and controllers run; ``stop()`` removes the webhook
    configurations, then ends the process."""

    binary_spec = KUEUE

    def __init__(
        self,
        kubeconfig: Path | str,
        log_path: Path | str,
        api_client: Any,
        namespaces: Iterable[str],
        *,
        wait_for_pods_ready: Mapping[str, Any] | None = None,
        binary: Path | None = None,
        reporter: Reporter | None = None,
    ) -> None:
        super().__init__(kubeconfig, log_path, binary=binary, reporter=reporter)
        self.api_client = api_client
        self.namespaces = list(namespaces)
        self.wait_for_pods_ready = dict(wait_for_pods_ready or {})
        self.health_port, self.metrics_port, self.webhook_port = free_loopback_ports(3)
        self._workdir = Path(tempfile.mkdtemp(prefix="koordgang-kueue-"))
        self.config_path = self._workdir / "config.yaml"
        self.cert_dir = self._workdir / "certs"
        self._installed: list[tuple[str, str]] = []
        self._mount: SecretMount | None = None

    def configuration(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": NAMESPACE,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health_port}"},
            "metrics": {"bindAddress": f"127.0.0.1:{self.metrics_port}"},
            "webhook": {
                "host": "127.0.0.1",
                "port": self.webhook_port,
                "certDir": str(self.cert_dir),
            },
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {
                "enable": True,
                "webhookServiceName": SERVICE,
                "webhookSecretName": SECRET,
            },
            "manageJobsWithoutQueueName": False,
            "integrations": {"frameworks": list(FRAMEWORKS)},
            # Its aggregated API would need a port and an APIService of its own.
            "featureGates": {"VisibilityOnDemand": False},
        }
        if self.wait_for_pods_ready:
            config["waitForPodsReady"] = self.wait_for_pods_ready
        return config

    def argv(self) -> list[str]:
        assert self.binary is not None
        return [
            str(self.binary),
            f"--config={self.config_path}",
            f"--kubeconfig={self.kubeconfig}",
            "--zap-log-level=info",
        ]

    def describe(self) -> str:
        return f"starting kueue {KUEUE.version} (webhooks on 127.0.0.1:{self.webhook_port})"

    def before_start(self) -> None:
        self.config_path.write_text(yaml.safe_dump(self.configuration()))
        self._install()
        self._mount = SecretMount(self.api_client, NAMESPACE, SECRET, self.cert_dir)

    def _install(self) -> None:
        from kubernetes import client

        core = client.CoreV1Api(self.api_client)
        _create_or_replace(
            core.create_namespaced_service,
            core.delete_namespaced_service,
            SERVICE,
            {
                "metadata": {"name": SERVICE},
                # The API server resolves an ExternalName Service to its name: this machine.
                "spec": {"type": "ExternalName", "externalName": "127.0.0.1"},
            },
            NAMESPACE,
        )
        _create_or_replace(
            core.create_namespaced_secret,
            core.delete_namespaced_secret,
            SECRET,
            {"metadata": {"name": SECRET}},
            NAMESPACE,
        )
        extensions = client.ApiextensionsV1Api(self.api_client)
        for plural in CONVERTED:
            extensions.patch_custom_resource_definition(
                f"{plural}.{API[0]}", {"spec": {"conversion": conversion(self.webhook_port)}}
            )
        admission = client.AdmissionregistrationV1Api(self.api_client)
        for body in webhook_configurations(self.webhook_port, self.namespaces):
            name = body["metadata"]["name"]
            if body["kind"] == "MutatingWebhookConfiguration":
                _create_or_replace(
                    admission.create_mutating_webhook_configuration,
                    admission.delete_mutating_webhook_configuration,
                    name,
                    body,
                )
            else:
                _create_or_replace(
                    admission.create_validating_webhook_configuration,
                    admission.delete_validating_webhook_configuration,
                    name,
                    body,
                )
            self._installed.append((body["kind"], name))

    def remove_webhooks(self) -> None:
        from kubernetes import client

        admission = client.AdmissionregistrationV1Api(self.api_client)
        for kind, name in self._installed:
            if kind == "MutatingWebhookConfiguration":
                _delete_missing_ok(admission.delete_mutating_webhook_configuration, name)
            else:
                _delete_missing_ok(admission.delete_validating_webhook_configuration, name)
        self._installed.clear()

    def not_started_yet(self) -> str | None:
        if not self.logged("Certificates ready and CA bundles injected"):
            return "its certificates are not made and injected yet"
        if not http_ok(f"http://127.0.0.1:{self.health_port}/readyz"):
            return "its /readyz (which waits for the webhook server) does not answer yet"
        if not self.logged("Starting workers", "workload"):
            return "its Workload controller has not started"
        return None

    def stop(self, timeout: float = 10.0) -> int | None:
        self.remove_webhooks()
        self._remove_conversions()
        if self._mount is not None:
            self._mount.stop()
        return super().stop(timeout)

    def _remove_conversions(self) -> None:
        """The CRDs convert nothing once their webhook is gone (they serve one stored
        version), rather than point at a port nothing listens on."""
        from kubernetes import client

        extensions = client.ApiextensionsV1Api(self.api_client)
        for plural in CONVERTED:
            _delete_missing_ok(
                extensions.patch_custom_resource_definition,
                f"{plural}.{API[0]}",
                {"spec": {"conversion": {"strategy": "None", "webhook": None}}},
            )


class SecretMount:
    """What the kubelet does for a Secret volume: the Secret's keys as files in ``directory``,
    kept in step with the Secret (polled) until ``stop()``."""

    def __init__(self, api_client: Any, namespace: str, name: str, directory: Path) -> None:
        from kubernetes import client

        self._core = client.CoreV1Api(api_client)
        self.namespace = namespace
        self.name = name
        self.directory = directory
        self._written: dict[str, bytes | str] = {}
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"mount-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(0.5):
            try:
                secret = self._core.read_namespaced_secret(self.name, self.namespace)
            except Exception:  # the API server restarting, the Secret not made yet
                continue
            data = secret.data or {}
            if data and data != self._written:
                self._write(data)
                self._written = data

    def _write(self, data: Mapping[str, bytes | str]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for key, value in data.items():
            partial = self.directory / f".{key}.partial"
            partial.write_bytes(base64.b64decode(value))
            partial.replace(self.directory / key)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)


def _delete_missing_ok(call: Any, *args: Any) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        call(*args)
    except ApiException as error:
        if error.status != 404:
            raise


def _create_or_replace(
    create: Any, delete: Any, name: str, body: Mapping[str, Any], *namespace: str
) -> None:
    _delete_missing_ok(delete, name, *namespace)
    create(*namespace, dict(body))


def strip_finalizers(core: Any, namespace: str) -> list[str]:
    """Removes Kueue's finalizer from the namespace's pods (after Kueue has stopped, nothing
    else would); returns the pods changed."""
    changed = []
    for pod in core.list_namespaced_pod(namespace).items:
        finalizers = pod.metadata.finalizers or []
        if FINALIZER in finalizers:
            kept = [f for f in finalizers if f != FINALIZER]
            core.patch_namespaced_pod(
                pod.metadata.name, namespace, {"metadata": {"finalizers": kept or None}}
            )
            changed.append(pod.metadata.name)
    return changed


def strip_object_finalizers(custom: Any, plural: str, namespace: str | None, name: str) -> None:
    """Removes the finalizers of a Kueue object (after Kueue has stopped) and deletes it."""
    from kubernetes.client.exceptions import ApiException

    patch = {"metadata": {"finalizers": None}}
    try:
        if namespace is None:
            custom.patch_cluster_custom_object(*API, plural, name, patch)
            custom.delete_cluster_custom_object(*API, plural, name)
        else:
            custom.patch_namespaced_custom_object(*API, namespace, plural, name, patch)
            custom.delete_namespaced_custom_object(*API, namespace, plural, name)
    except ApiException as error:
        if error.status != 404:
            raise


def queue_bodies(
    cluster_queue: str, local_queue: str, namespace: str, quota: Mapping[str, str]
) -> list[tuple[str, dict[str, Any]]]:
    """A ResourceFlavor ``default-flavor``, a ClusterQueue with ``quota`` of it for every
    namespace, and a LocalQueue of ``namespace`` pointing at it, as (plural, body), in the order
    to create them."""
    api_version = f"{API[0]}/{API[1]}"
    resources = [{"name": name, "nominalQuota": value} for name, value in quota.items()]
    return [
        (
            "resourceflavors",
            {
                "apiVersion": api_version,
                "kind": "ResourceFlavor",
                "metadata": {"name": "default-flavor"},
            },
        ),
        (
            "clusterqueues",
            {
                "apiVersion": api_version,
                "kind": "ClusterQueue",
                "metadata": {"name": cluster_queue},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": list(quota),
                            "flavors": [{"name": "default-flavor", "resources": resources}],
                        }
                    ],
                },
            },
        ),
        (
            "localqueues",
            {
                "apiVersion": api_version,
                "kind": "LocalQueue",
                "metadata": {"name": local_queue, "namespace": namespace},
                "spec": {"clusterQueue": cluster_queue},
            },
        ),
    ]
