"""Small helpers for e2e tests: building pods and nodes, waiting, reading what users see."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal, Protocol, TypeVar

from kubernetes import client, dynamic, watch
from kubernetes.client.exceptions import ApiException

from controlplane import NodeSpec, Taint, create_nodes, delete_nodes, wait_nodes_ready

SCHEDULER = "koord-scheduler"
T = TypeVar("T")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def wait_until(
    predicate: Callable[[], T | Literal[False] | None],
    *,
    timeout: float = 60.0,
    interval: float = 0.25,
    what: str = "condition",
    last: Callable[[], Any] | None = None,
) -> T:
    """Polls ``predicate`` until it returns something truthy; fails the test after ``timeout``
    (saying what ``last`` returns then, if given, else the predicate's last value)."""
    deadline = time.monotonic() + timeout
    value: T | Literal[False] | None = None
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    shown = last() if last is not None else value
    raise AssertionError(
        f"timed out after {timeout:.0f} s waiting for {what}; last value: {shown!r}"
    )


def json_object(reply: object) -> dict[str, Any]:
    """A reply of the custom-objects API (which the client types as ``object``) as the JSON object
    the API server sends."""
    if not isinstance(reply, dict):
        raise TypeError(f"expected a JSON object from the API server, got {type(reply).__name__}")
    return reply


class _Stored(Protocol):
    @property
    def metadata(self) -> client.V1ObjectMeta | None: ...


def metadata(obj: _Stored) -> client.V1ObjectMeta:
    """The metadata of an object read from the API server (always there; optional in the
    client's types, which also describe objects not yet sent)."""
    if obj.metadata is None:
        raise ValueError(f"a {type(obj).__name__} from the API server without metadata")
    return obj.metadata


def name_of(obj: _Stored) -> str:
    name = metadata(obj).name
    if name is None:
        raise ValueError(f"a {type(obj).__name__} from the API server without a name")
    return name


def namespace_of(obj: _Stored) -> str:
    namespace = metadata(obj).namespace
    if namespace is None:
        raise ValueError(f"a {type(obj).__name__} from the API server without a namespace")
    return namespace


def plain(api_client: client.ApiClient, obj: object) -> Any:
    """``obj`` (a model of the client, or lists and dicts of them) as the JSON the API server
    sends: plain dicts and lists, camelCase keys."""
    # The client's serializer is unannotated.
    return api_client.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]


class ServerSideApply:
    """What `kubectl apply --server-side` does, for objects of any kind the API server serves."""

    def __init__(self, api_client: client.ApiClient, field_manager: str) -> None:
        # The dynamic client is unannotated in the kubernetes package.
        self._api = dynamic.DynamicClient(api_client)  # type: ignore[no-untyped-call]
        self.field_manager = field_manager

    def apply(self, doc: Mapping[str, Any], **params: Any) -> None:
        """``params`` go to the request (``force_conflicts``, ``dry_run``)."""
        resource = self._api.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        self._api.server_side_apply(  # type: ignore[no-untyped-call]
            resource,
            body=dict(doc),
            name=doc["metadata"]["name"],
            namespace=doc["metadata"].get("namespace"),
            field_manager=self.field_manager,
            **params,
        )


class PodWatch:
    """A watch of the pods of a namespace: each pod as a change to it is delivered."""

    def __init__(self) -> None:
        # The watch is unannotated in the kubernetes package.
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]

    def pods(self, core: client.CoreV1Api, namespace: str, **params: Any) -> Iterator[Any]:
        """Lists the pods (unless ``params`` give a ``resource_version``), then each change."""
        stream = self._watch.stream(  # type: ignore[no-untyped-call]
            core.list_namespaced_pod, namespace, **params
        )
        for event in stream:
            yield event["object"]

    def stop(self) -> None:
        self._watch.stop()  # type: ignore[no-untyped-call]


#: Annotations that keep kwok from completing a Job's pods at once
#: (controlplane/kwok-stages.yaml), for tests whose Jobs must keep running.
KEEP_RUNNING = {"pod-complete.stage.kwok.x-k8s.io/delay": "1h"}


def pod_body(
    name: str,
    *,
    requests: Mapping[str, str] | None = None,
    scheduler: str = SCHEDULER,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Iterable[Mapping[str, Any]] = (),
    priority: int | None = None,
    priority_class: str | None = None,
    init_requests: Mapping[str, str] | None = None,
    node_name: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    if requests:
        container["resources"] = {"requests": dict(requests)}
        # Extended resources (nvidia.com/gpu) cannot be overcommitted: the API server wants
        # their limit set, equal to the request.
        extended = {k: v for k, v in requests.items() if "/" in k}
        if extended:
            container["resources"]["limits"] = extended
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [container],
        "terminationGracePeriodSeconds": 0,
    }
    if init_requests:
        spec["initContainers"] = [
            {
                "name": "init",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": dict(init_requests)},
            }
        ]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = dict(affinity)
    tolerations = list(tolerations)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if priority is not None:
        spec["priority"] = priority
    if priority_class is not None:
        # The API server's Priority admission fills in spec.priority from the class.
        spec["priorityClassName"] = priority_class
    if node_name:
        spec["nodeName"] = node_name
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _template(pod: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """A pod body (see ``pod_body``) as a controller's pod template, with ``labels`` added."""
    metadata = {k: v for k, v in pod["metadata"].items() if k != "name"}
    metadata["labels"] = {**metadata.get("labels", {}), **labels}
    return {"metadata": metadata, "spec": dict(pod["spec"])}


def deployment_body(name: str, replicas: int, pod: Mapping[str, Any]) -> dict[str, Any]:
    """A Deployment of ``replicas`` pods like ``pod`` (selected by the label ``app=<name>``)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": _template(pod, {"app": name}),
        },
    }


def job_body(name: str, pods: int, pod: Mapping[str, Any]) -> dict[str, Any]:
    """A Job running ``pods`` pods like ``pod`` at once."""
    template = _template(pod, {})
    template["spec"]["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"parallelism": pods, "completions": pods, "template": template},
    }


class Cluster:
    """The test's handle on the API server, with cleanup of what it created."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.created_nodes: list[str] = []

    # -- nodes -------------------------------------------------------------------------------

    def add_nodes(
        self,
        names: Iterable[str],
        capacity: Mapping[str, str],
        *,
        labels: Mapping[str, str] | None = None,
        taints: Iterable[tuple[str, str, str]] = (),
        unschedulable: bool = False,
    ) -> list[str]:
        specs = [
            NodeSpec(
                name=name,
                capacity=dict(capacity),
                labels=dict(labels or {}),
                taints=tuple(Taint(key=k, value=v, effect=e) for k, v, e in taints),
            )
            for name in names
        ]
        created = create_nodes(self.core, specs)
        self.created_nodes.extend(created)
        wait_nodes_ready(self.core, created, timeout=60)
        if unschedulable:
            for name in created:
                self.core.patch_node(name, {"spec": {"unschedulable": True}})
        return created

    def remove_all_fake_nodes(self) -> None:
        nodes = self.core.list_node(label_selector="type=kwok").items
        for node in nodes:
            self.delete_pods_on_node(name_of(node))
        delete_nodes(self.core, [name_of(n) for n in nodes])

    def delete_pods_on_node(self, node: str) -> None:
        for pod in self.core.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={node}"
        ).items:
            self.force_delete(namespace_of(pod), name_of(pod))

    # -- namespaces and pods -----------------------------------------------------------------

    def create_namespace(self, name: str) -> str:
        self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        return name

    def ensure_namespace(self, name: str) -> str:
        """A namespace shared by the tests of a module (a client's own): made if missing."""
        try:
            self.create_namespace(name)
        except ApiException as error:
            if error.status != 409:
                raise
        return name

    def create_pod(self, namespace: str, body: Mapping[str, Any]) -> Any:
        return self.core.create_namespaced_pod(namespace, client.V1Pod.model_validate(dict(body)))

    def pods(self, namespace: str, label_selector: str = "") -> list[Any]:
        items: list[Any] = self.core.list_namespaced_pod(
            namespace, label_selector=label_selector
        ).items
        return items

    def pod(self, namespace: str, name: str) -> Any:
        return self.core.read_namespaced_pod(name, namespace)

    def force_delete(self, namespace: str, name: str) -> None:
        try:
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        except ApiException as error:
            if error.status != 404:
                raise

    def delete_namespace_pods(self, namespace: str) -> None:
        self.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
        wait_until(lambda: not self.pods(namespace), timeout=60, what=f"pods of {namespace} to go")

    def events_for(self, namespace: str, name: str) -> list[Any]:
        items: list[Any] = self.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={name}"
        ).items
        return items


def scheduled_condition(pod: Any) -> Any | None:
    for condition in (pod.status.conditions or []) if pod.status else []:
        if condition.type == "PodScheduled":
            return condition
    return None


def bound(pods: Iterable[Any]) -> list[Any]:
    return [p for p in pods if p.spec.node_name]


def pending(pods: Iterable[Any]) -> list[Any]:
    return [p for p in pods if not p.spec.node_name]


def scheduled_by(cluster: Cluster, namespace: str, name: str) -> set[str]:
    """Who posted the pod's Scheduled Event (written just after its binding: waited for)."""

    def posted() -> set[str] | None:
        events: list[Any] = cluster.events_for(namespace, name)
        return {e.source.component for e in events if e.reason == "Scheduled"} or None

    found: set[str] = wait_until(posted, timeout=15, what=f"the Scheduled Event of {name}")
    return found
