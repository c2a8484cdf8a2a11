"""Dynamic Resource Allocation for e2e tests: device classes, slices of fake nodes, claims and
claim templates, written as a user (or a driver) writes them, and read back as users read them.

DeviceClasses and ResourceSlices are cluster-scoped: each test names its own driver and class
(``Devices``), so that tests never see each other's devices, and removes them at the end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from harness.kube import Cluster, json_object, unique

GROUP, VERSION = "resource.k8s.io", "v1"
API_VERSION = f"{GROUP}/{VERSION}"
FINALIZER = "resource.kubernetes.io/delete-protection"


class Devices:
    """A driver of this test's own, its DeviceClass, and the slices it publishes."""

    def __init__(self, cluster: Cluster, prefix: str = "gpu") -> None:
        self.cluster = cluster
        self.custom = client.CustomObjectsApi(cluster.api_client)
        self.driver = f"{unique(prefix)}.example.com"
        self.device_class = self.driver
        self.slices: list[str] = []
        self.classes: list[str] = []
        self.rules: list[str] = []

    # -- cluster-scoped objects --------------------------------------------------------------

    def create_class(
        self,
        name: str | None = None,
        *,
        selectors: Iterable[str] = (),
        config: Mapping[str, Any] | None = None,
        extended_resource: str | None = None,
    ) -> str:
        """``extended_resource``: the extended resource the class provides through DRA
        (``spec.extendedResourceName``)."""
        name = name or self.device_class
        expressions = [f'device.driver == "{self.driver}"', *selectors]
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in expressions]}
        if config is not None:
            spec["config"] = [{"opaque": {"driver": self.driver, "parameters": dict(config)}}]
        if extended_resource is not None:
            spec["extendedResourceName"] = extended_resource
        self.custom.create_cluster_custom_object(
            GROUP,
            VERSION,
            "deviceclasses",
            {
                "apiVersion": API_VERSION,
                "kind": "DeviceClass",
                "metadata": {"name": name},
                "spec": spec,
            },
        )
        self.classes.append(name)
        return name

    def publish(
        self,
        node: str,
        count: int,
        *,
        pool: str | None = None,
        name: str | None = None,
        slices_in_pool: int = 1,
        first: int = 0,
        attributes: Mapping[str, Mapping[str, Any]] | None = None,
        taints: Iterable[Mapping[str, Any]] = (),
    ) -> str:
        """A ResourceSlice of ``count`` devices (``dev-<i>``) local to ``node``, each with the
        driver's ``taints``."""
        name = name or f"{node}-{self.driver}"
        tainted: dict[str, Any] = {"taints": [dict(t) for t in taints]} if taints else {}
        devices: list[dict[str, Any]] = [
            {
                "name": f"dev-{i}",
                "attributes": {"index": {"int": i}, **dict(attributes or {})},
                "capacity": {"memory": {"value": "80Gi"}},
                **tainted,
            }
            for i in range(first, first + count)
        ]
        body = {
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {
                "driver": self.driver,
                "nodeName": node,
                "pool": {
                    "name": pool or node,
                    "generation": 1,
                    "resourceSliceCount": slices_in_pool,
                },
                "devices": devices,
            },
        }
        self.custom.create_cluster_custom_object(GROUP, VERSION, "resourceslices", body)
        self.slices.append(name)
        return name

    def publish_network(
        self,
        pool: str,
        count: int,
        *,
        node_labels: Mapping[str, str] | None = None,
    ) -> dict[str, Any] | None:
        """A ResourceSlice of a network-attached pool: ``count`` devices (``dev-<i>``) on the
        nodes carrying ``node_labels`` (its ``nodeSelector``, one term), or on all nodes
        (``allNodes``) without them. Returns the node selector published (None: all nodes)."""
        name = f"{pool}-{self.driver}"
        devices = [{"name": f"dev-{i}", "attributes": {"index": {"int": i}}} for i in range(count)]
        selector: dict[str, Any] | None = None
        spec: dict[str, Any] = {
            "driver": self.driver,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        }
        if node_labels:
            expressions = [
                {"key": key, "operator": "In", "values": [value]}
                for key, value in sorted(node_labels.items())
            ]
            selector = {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
            spec["nodeSelector"] = selector
        else:
            spec["allNodes"] = True
        body = {
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": spec,
        }
        self.custom.create_cluster_custom_object(GROUP, VERSION, "resourceslices", body)
        self.slices.append(name)
        return selector

    def publish_partitioned(self, node: str, *, partitions: int = 4) -> None:
        """One GPU of ``node`` offered whole and as ``partitions`` equal parts, as MIG is
        published: its counter set (80Gi of memory) in a slice of its own, and a slice of the
        devices drawing on it: ``whole`` (attribute ``profile: whole``) and ``part-<i>``
        (``profile: part``)."""
        pool = {"name": node, "generation": 1, "resourceSliceCount": 2}
        share = 80 // partitions

        def device(name: str, profile: str, gib: int) -> dict[str, Any]:
            consumes = {"counterSet": "gpu", "counters": {"memory": {"value": f"{gib}Gi"}}}
            return {
                "name": name,
                "attributes": {"profile": {"string": profile}},
                "consumesCounters": [consumes],
            }

        devices = [device("whole", "whole", 80)]
        devices += [device(f"part-{i}", "part", share) for i in range(partitions)]
        counters = [{"name": "gpu", "counters": {"memory": {"value": "80Gi"}}}]
        for suffix, content in (
            ("counters", {"sharedCounters": counters}),
            ("gpus", {"devices": devices}),
        ):
            name = f"{node}-{self.driver}-{suffix}"
            spec = {"driver": self.driver, "nodeName": node, "pool": pool, **content}
            body = {"apiVersion": API_VERSION, "kind": "ResourceSlice", "metadata": {"name": name}}
            self.custom.create_cluster_custom_object(
                GROUP, VERSION, "resourceslices", {**body, "spec": spec}
            )
            self.slices.append(name)

    def publish_shared(
        self, node: str, *, memory: str = "80Gi", policy: Mapping[str, Any] | None = None
    ) -> str:
        """A ResourceSlice of one GPU ``gpu-0`` local to ``node`` that several claims may have
        at once (``allowMultipleAllocations``), with ``memory`` of capacity ``memory`` taken
        as its request ``policy`` (JSON) says."""
        capacity: dict[str, Any] = {"value": memory}
        if policy is not None:
            capacity["requestPolicy"] = dict(policy)
        device = {
            "name": "gpu-0",
            "allowMultipleAllocations": True,
            "capacity": {"memory": capacity},
        }
        name = f"{node}-{self.driver}-shared"
        spec = {
            "driver": self.driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [device],
        }
        body = {"apiVersion": API_VERSION, "kind": "ResourceSlice", "metadata": {"name": name}}
        self.custom.create_cluster_custom_object(
            GROUP, VERSION, "resourceslices", {**body, "spec": spec}
        )
        self.slices.append(name)
        return name

    def taint(self, name: str, *, pool: str = "", effect: str = "NoSchedule", key: str = "") -> str:
        """A DeviceTaintRule on this driver's devices (of ``pool``, where given), as an admin
        drains them."""
        selector = {"driver": self.driver, **({"pool": pool} if pool else {})}
        body = {
            "apiVersion": API_VERSION,
            "kind": "DeviceTaintRule",
            "metadata": {"name": name},
            "spec": {
                "deviceSelector": selector,
                "taint": {"key": key or "example.com/drain", "effect": effect},
            },
        }
        self.custom.create_cluster_custom_object(GROUP, VERSION, "devicetaintrules", body)
        self.rules.append(name)
        return name

    def untaint(self, name: str) -> None:
        self.custom.delete_cluster_custom_object(GROUP, VERSION, "devicetaintrules", name)
        self.rules.remove(name)

    def remove(self) -> None:
        for plural, names in (
            ("devicetaintrules", self.rules),
            ("resourceslices", self.slices),
            ("deviceclasses", self.classes),
        ):
            for name in names:
                try:
                    self.custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)
                except ApiException as error:
                    if error.status != 404:
                        raise

    # -- claims ----------------------------------------------------------------------------------

    def request(
        self, count: int, *, device_class: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        return {
            "name": "gpus",
            "exactly": {
                "deviceClassName": device_class or self.device_class,
                "count": count,
                **extra,
            },
        }

    def create_template(self, namespace: str, name: str, count: int, **extra: Any) -> str:
        body = {
            "apiVersion": API_VERSION,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {"spec": {"devices": {"requests": [self.request(count, **extra)]}}},
        }
        self.custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "resourceclaimtemplates", body
        )
        return name

    def create_claim(self, namespace: str, name: str, count: int, **extra: Any) -> str:
        body = {
            "apiVersion": API_VERSION,
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {"devices": {"requests": [self.request(count, **extra)]}},
        }
        self.custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "resourceclaims", body
        )
        return name


def claims(cluster: Cluster, namespace: str | None = None) -> list[dict[str, Any]]:
    custom = client.CustomObjectsApi(cluster.api_client)
    if namespace is None:
        reply = custom.list_cluster_custom_object(GROUP, VERSION, "resourceclaims")
    else:
        reply = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims")
    items: list[dict[str, Any]] = json_object(reply)["items"]
    return items


def resource_slices(cluster: Cluster) -> list[dict[str, Any]]:
    custom = client.CustomObjectsApi(cluster.api_client)
    items: list[dict[str, Any]] = json_object(
        custom.list_cluster_custom_object(GROUP, VERSION, "resourceslices")
    )["items"]
    return items


def claim(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return json_object(
        client.CustomObjectsApi(cluster.api_client).get_namespaced_custom_object(
            GROUP, VERSION, namespace, "resourceclaims", name
        )
    )


def allocated_node(obj: Mapping[str, Any]) -> str | None:
    """The node an allocation is for (its node selector names it), None if not allocated."""
    allocation = (obj.get("status") or {}).get("allocation")
    if not allocation:
        return None
    terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or [{}]
    for field in terms[0].get("matchFields") or []:
        if field.get("key") == "metadata.name":
            return str(field["values"][0])
    return ""


def allocated_devices(obj: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    allocation = (obj.get("status") or {}).get("allocation") or {}
    return [
        (r["driver"], r["pool"], r["device"])
        for r in (allocation.get("devices") or {}).get("results") or []
    ]


def consumers(obj: Mapping[str, Any]) -> list[str]:
    return [c["name"] for c in (obj.get("status") or {}).get("reservedFor") or []]


def reservations(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The claim's ``status.reservedFor`` entries, whole (pods, or an upstream PodGroup)."""
    return [dict(c) for c in (obj.get("status") or {}).get("reservedFor") or []]


def owner_of(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the claim's controlling owner: what the resourceclaim controller made it
    for (a pod, or an upstream PodGroup)."""
    for owner in obj["metadata"].get("ownerReferences") or []:
        if owner.get("controller"):
            return str(owner["kind"]), str(owner["name"])
    return None


def claim_of(pod: Any, entry: str = "gpus") -> str | None:
    """The claim made for ``pod``'s ``spec.resourceClaims`` entry (the pod's status names it)."""
    for status in (pod.status.resource_claim_statuses or []) if pod.status else []:
        if status.name == entry:
            return str(status.resource_claim_name) if status.resource_claim_name else None
    return None


def held_devices(obj: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The devices ``obj``'s allocation holds whole: a result with ``adminAccess`` holds
    nothing (a monitor watches a device someone else may be given, as Kubernetes allows), and
    one with a ``shareID`` is a share of a device several claims may have at once."""
    allocation = (obj.get("status") or {}).get("allocation") or {}
    return [
        (r["driver"], r["pool"], r["device"])
        for r in (allocation.get("devices") or {}).get("results") or []
        if not r.get("adminAccess") and not r.get("shareID")
    ]


def shares(obj: Mapping[str, Any]) -> list[tuple[tuple[str, str, str], dict[str, str]]]:
    """The shares ``obj``'s allocation has of devices several claims may have at once: each
    device with what the share consumes of its capacities (as written). Admin access takes
    no share."""
    allocation = (obj.get("status") or {}).get("allocation") or {}
    return [
        ((r["driver"], r["pool"], r["device"]), dict(r.get("consumedCapacity") or {}))
        for r in (allocation.get("devices") or {}).get("results") or []
        if r.get("shareID") and not r.get("adminAccess")
    ]


def share_ids(obj: Mapping[str, Any]) -> list[str]:
    allocation = (obj.get("status") or {}).get("allocation") or {}
    return [
        str(r["shareID"])
        for r in (allocation.get("devices") or {}).get("results") or []
        if r.get("shareID")
    ]


def doubly_allocated(objects: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], int]:
    """Devices that more than one claim's allocation holds whole, or that one holds whole while
    another has a share of it: nobody may be given one twice."""
    counts: Counter[tuple[str, str, str]] = Counter()
    shared: set[tuple[str, str, str]] = set()
    for obj in objects:
        counts.update(set(held_devices(obj)))
        shared.update(device for device, _ in shares(obj))
    found = {device: n for device, n in counts.items() if n > 1}
    for device in shared & set(counts):
        found[device] = counts[device] + 1
    return found


def with_claims(pod: dict[str, Any], entries: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """``pod`` (a pod body) asking for claims: entry name -> ``{"resourceClaimName": ...}`` or
    ``{"resourceClaimTemplateName": ...}``; its container uses them all."""
    pod["spec"]["resourceClaims"] = [{"name": name, **dict(ref)} for name, ref in entries.items()]
    container = pod["spec"]["containers"][0]
    container.setdefault("resources", {})["claims"] = [{"name": name} for name in entries]
    return pod


def iter_pods_claims(
    cluster: Cluster, namespace: str, pods: Iterable[Any]
) -> Iterator[tuple[Any, dict[str, Any]]]:
    for pod in pods:
        name = claim_of(pod)
        if name:
            yield pod, claim(cluster, namespace, name)
