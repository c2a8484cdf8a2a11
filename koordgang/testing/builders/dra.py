"""Dynamic Resource Allocation objects: ResourceSlices (``resource_slice``), DeviceClasses
(``device_class``) and ResourceClaims (``resource_claim``), each as the API server returns it
(``*_json``) and as its informer parses it. The slices publish GPUs of one driver, which the
default class selects and the default claim asks for by that class."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from koordgang.model.dra import (
    DeviceClassInfo,
    DeviceTaintRuleInfo,
    ResourceClaimInfo,
    ResourceSliceInfo,
    parse_device_class,
    parse_device_taint_rule,
    parse_resource_claim,
    parse_resource_slice,
)
from koordgang.testing.builders.pods import NS

#: The driver of the devices ``resource_slice`` publishes, which ``device_class`` selects.
DRIVER = "gpu.example.com"
#: The opaque configuration ``device_class`` gives its devices unless told otherwise.
TRAIN = {"mode": "train"}


def resource_slice_json(
    node_name: str,
    devices: int | Sequence[str] = 2,
    *,
    name: str | None = None,
    driver: str = DRIVER,
    pool: str | None = None,
    generation: int = 1,
    count: int = 1,
    resource_version: str = "1",
    taints: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The node-local slice ``<node>-gpus`` of pool ``<node>`` (one slice of ``count``), with
    ``devices`` GPUs ``gpu-<i>`` (attribute ``index``: i) or the devices named, each with
    ``taints``."""
    names = [f"gpu-{i}" for i in range(devices)] if isinstance(devices, int) else list(devices)
    extra: dict[str, Any] = {"taints": [dict(t) for t in taints]} if taints else {}
    return {
        "metadata": {"name": name or f"{node_name}-gpus", "resourceVersion": resource_version},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {
                "name": pool or node_name,
                "generation": generation,
                "resourceSliceCount": count,
            },
            "devices": [
                {"name": device, "attributes": {"index": {"int": i}}, **extra}
                for i, device in enumerate(names)
            ],
        },
    }


def resource_slice(
    node_name: str, devices: int | Sequence[str] = 2, **kwargs: Any
) -> ResourceSliceInfo:
    """``resource_slice_json``'s slice, parsed; takes its keywords."""
    return parse_resource_slice(resource_slice_json(node_name, devices, **kwargs))


def network_slice_json(
    pool: str,
    devices: int | Sequence[str] = 2,
    *,
    node_selector: Mapping[str, str] | None = None,
    per_device: Mapping[str, Mapping[str, Any]] | None = None,
    driver: str = DRIVER,
) -> dict[str, Any]:
    """The slice ``<pool>`` of a network-attached pool: on the nodes labelled
    ``node_selector`` (one term), on all nodes without one, or with ``per_device`` (device
    name -> its ``nodeName``/``nodeSelector``/``allNodes``) each device's own."""
    names = [f"nic-{i}" for i in range(devices)] if isinstance(devices, int) else list(devices)
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": device,
                "attributes": {"index": {"int": i}},
                **(per_device or {}).get(device, {}),
            }
            for i, device in enumerate(names)
        ],
    }
    if per_device is not None:
        spec["perDeviceNodeSelection"] = True
    elif node_selector:
        spec["nodeSelector"] = labels_selector(node_selector)
    else:
        spec["allNodes"] = True
    return {"metadata": {"name": pool, "resourceVersion": "1"}, "spec": spec}


def labels_selector(labels: Mapping[str, str]) -> dict[str, Any]:
    """A node selector of one term: nodes carrying these labels."""
    return {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": key, "operator": "In", "values": [value]}
                    for key, value in sorted(labels.items())
                ]
            }
        ]
    }


def device_class_json(
    name: str = "gpu",
    *,
    selector: str = f'device.driver == "{DRIVER}"',
    parameters: Mapping[str, Any] | None = TRAIN,
    driver: str = DRIVER,
) -> dict[str, Any]:
    """A class selecting devices by one CEL ``selector``, with opaque ``parameters`` for
    ``driver`` (None: no configuration)."""
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": selector}}]}
    if parameters is not None:
        spec["config"] = [{"opaque": {"driver": driver, "parameters": dict(parameters)}}]
    return {"metadata": {"name": name, "resourceVersion": "1"}, "spec": spec}


def device_class(name: str = "gpu", **kwargs: Any) -> DeviceClassInfo:
    """``device_class_json``'s class, parsed; takes its keywords."""
    return parse_device_class(device_class_json(name, **kwargs))


def resource_claim_json(
    name: str,
    count: int = 1,
    *,
    device_class: str = "gpu",
    request: str = "gpus",
    namespace: str = NS,
    uid: str | None = None,
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A claim asking for exactly ``count`` devices of ``device_class`` (one request), uid
    ``claim-<name>`` unless given; ``status`` as written (allocation, reservedFor)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"claim-{name}",
            "resourceVersion": "1",
        },
        "spec": {
            "devices": {
                "requests": [
                    {"name": request, "exactly": {"deviceClassName": device_class, "count": count}}
                ]
            }
        },
        "status": dict(status or {}),
    }


def resource_claim(name: str, count: int = 1, **kwargs: Any) -> ResourceClaimInfo:
    """``resource_claim_json``'s claim, parsed; takes its keywords."""
    return parse_resource_claim(resource_claim_json(name, count, **kwargs))


def upstream_podgroup_json(
    name: str = "train",
    min_count: int = 2,
    *,
    made: str | None = None,
    entry: str = "gpus",
    template: str = "pair",
    namespace: str = NS,
) -> dict[str, Any]:
    """An upstream PodGroup (``scheduling.k8s.io``, uid ``uid-<name>``) whose claim entry
    ``entry`` comes from ``template``; ``made``: the claim the resourceclaim controller made
    for it (its status names it)."""
    status: dict[str, Any] = {}
    if made is not None:
        status["resourceClaimStatuses"] = [{"name": entry, "resourceClaimName": made}]
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": min_count}},
            "resourceClaims": [{"name": entry, "resourceClaimTemplateName": template}],
        },
        "status": status,
    }


def podgroup_claim_json(
    name: str,
    podgroup: str = "train",
    count: int = 2,
    *,
    entry: str = "gpus",
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The claim the resourceclaim controller made for upstream PodGroup ``podgroup``
    (``upstream_podgroup_json``'s): ``resource_claim_json``'s, owned by the PodGroup."""
    obj = resource_claim_json(name, count, status=status)
    obj["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "name": podgroup,
            "uid": f"uid-{podgroup}",
            "controller": True,
        }
    ]
    obj["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": entry}
    return obj


def device_taint_rule_json(
    name: str,
    *,
    key: str = "example.com/drain",
    value: str = "",
    effect: str = "NoSchedule",
    driver: str = DRIVER,
    pool: str = "",
    device: str = "",
) -> dict[str, Any]:
    """A DeviceTaintRule tainting the devices of ``driver`` (and ``pool``, ``device`` where
    given) with ``key[=value]:effect``."""
    selector = {k: v for k, v in (("driver", driver), ("pool", pool), ("device", device)) if v}
    taint = {"key": key, "effect": effect, **({"value": value} if value else {})}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {"deviceSelector": selector, "taint": taint},
    }


def device_taint_rule(name: str, **kwargs: Any) -> DeviceTaintRuleInfo:
    """``device_taint_rule_json``'s rule, parsed; takes its keywords."""
    return parse_device_taint_rule(device_taint_rule_json(name, **kwargs))


def partitioned_gpu_json(node_name: str, *, driver: str = DRIVER) -> list[dict[str, Any]]:
    """A GPU offered whole and as four partitions (MIG-style), on ``node_name``: its counter
    set (80Gi of memory) in a slice of its own, and a slice of five devices drawing on it:
    ``gpu-0`` (80Gi, attribute ``profile: whole``) and ``gpu-0-part-<i>`` (20Gi each,
    ``profile: part``)."""
    pool = {"name": node_name, "generation": 1, "resourceSliceCount": 2}
    counters = {
        "metadata": {"name": f"{node_name}-counters", "resourceVersion": "1"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": pool,
            "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}],
        },
    }

    def device(name: str, profile: str, memory: str) -> dict[str, Any]:
        return {
            "name": name,
            "attributes": {"profile": {"string": profile}},
            "consumesCounters": [
                {"counterSet": "gpu-0", "counters": {"memory": {"value": memory}}}
            ],
        }

    devices = [device("gpu-0", "whole", "80Gi")]
    devices += [device(f"gpu-0-part-{i}", "part", "20Gi") for i in range(4)]
    partitions = {
        "metadata": {"name": f"{node_name}-gpus", "resourceVersion": "1"},
        "spec": {"driver": driver, "nodeName": node_name, "pool": pool, "devices": devices},
    }
    return [counters, partitions]


def shared_gpu_json(
    node_name: str,
    *,
    devices: int = 1,
    memory: str = "80Gi",
    policy: Mapping[str, Any] | None = None,
    driver: str = DRIVER,
) -> dict[str, Any]:
    """The slice ``<node>-gpus`` of ``devices`` GPUs ``gpu-<i>`` that several claims may have
    at once (``allowMultipleAllocations``), each with ``memory`` of capacity ``memory`` under
    the request ``policy`` given (JSON)."""
    obj = resource_slice_json(node_name, devices, driver=driver)
    for device in obj["spec"]["devices"]:
        capacity: dict[str, Any] = {"value": memory}
        if policy is not None:
            capacity["requestPolicy"] = dict(policy)
        device["allowMultipleAllocations"] = True
        device["capacity"] = {"memory": capacity}
    return obj


def capacity_claim_json(name: str, *, memory: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """``resource_claim_json``'s claim of one device asking ``memory`` of its capacity (None:
    asking nothing); takes its keywords."""
    obj = resource_claim_json(name, 1, **kwargs)
    if memory is not None:
        exactly = obj["spec"]["devices"]["requests"][0]["exactly"]
        exactly["capacity"] = {"requests": {"memory": memory}}
    return obj
