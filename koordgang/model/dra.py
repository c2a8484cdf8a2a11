"""Dynamic Resource Allocation (``resource.k8s.io/v1``) as far as the scheduler needs it.

A node's driver publishes its devices in ResourceSlices; a DeviceClass selects devices by CEL
and may carry configuration for them; a pod asks through ``spec.resourceClaims`` for
ResourceClaims (named, or made from a template by the resourceclaim controller, which names
them in the pod's ``status.resourceClaimStatuses``). The scheduler picks the devices, writes
them into the claim's ``status.allocation`` with the pod in ``status.reservedFor``, and only
then binds.

Everything here parses API objects into frozen values; nothing decides anything. Features of
the pinned release that koordgang does not allocate yet are recorded as a reason on what
carries them (``unsupported``), so that the allocator leaves such devices alone and a request
that needs one waits with a message naming the feature.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from koordgang.model import _fields
from koordgang.model.affinity import NodeSelector, parse_node_selector
from koordgang.model.errors import ModelError, show

__all__ = [
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT",
    "CLAIM_FINALIZER",
    "AllocatedDevice",
    "AttributeValue",
    "ClaimAllocation",
    "ClaimConfig",
    "ClaimSpec",
    "Consumer",
    "DeviceClassInfo",
    "DeviceConstraint",
    "DeviceId",
    "DeviceRequest",
    "PodClaimRef",
    "ResourceClaimInfo",
    "ResourceSliceInfo",
    "SliceDevice",
    "SubRequest",
    "node_local_selector",
    "parse_device_class",
    "parse_pod_claims",
    "parse_resource_claim",
    "parse_resource_slice",
]

API_VERSION = "resource.k8s.io/v1"
#: Put on a claim before its allocation is written: the resourceclaim controller removes it
#: once the claim is deallocated, so a claim in use is never deleted under its pod.
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
#: On claims made from a template: which ``spec.resourceClaims`` entry of the pod it is for.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
ALLOCATION_MODE_EXACT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
#: The API's limit of devices in one claim's allocation.
MAX_ALLOCATED_DEVICES = 32
#: The API's limit of consumers a claim may be reserved for.
MAX_RESERVED_FOR = 256
#: Taint effects that keep a device from being allocated (``None`` only informs).
_BLOCKING_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


class DeviceId(NamedTuple):
    """A device, as an allocation names it: driver, pool and device name. Pool names may
    contain slashes, hence a tuple rather than one joined string."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


# -- pods ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodClaimRef:
    """One entry of a pod's ``spec.resourceClaims``: a claim by name, or made from a
    template (then the claim's name is in the pod's status, once the controller made it)."""

    name: str
    claim_name: str = ""
    template_name: str = ""


def parse_pod_claims(
    spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[tuple[PodClaimRef, ...], Mapping[str, str]]:
    """``spec.resourceClaims`` and ``status.resourceClaimStatuses`` (pod claim name -> the
    name of the claim made for it; "" where the controller found none was needed)."""
    refs: list[PodClaimRef] = []
    for index, raw in enumerate(_fields.items(spec, "resourceClaims", "spec.resourceClaims")):
        path = f"spec.resourceClaims[{index}]"
        entry = _fields.as_mapping(raw, path)
        name = _fields.string(entry, "name", f"{path}.name")
        if not name:
            raise ModelError("missing", f"{path}.name")
        claim = _fields.string(entry, "resourceClaimName", f"{path}.resourceClaimName")
        template = _fields.string(
            entry, "resourceClaimTemplateName", f"{path}.resourceClaimTemplateName"
        )
        if bool(claim) == bool(template):
            raise ModelError(
                "exactly one of resourceClaimName and resourceClaimTemplateName must be set",
                path,
            )
        refs.append(PodClaimRef(name, claim, template))
    statuses: dict[str, str] = {}
    raw_statuses = _fields.items(status, "resourceClaimStatuses", "status.resourceClaimStatuses")
    for index, raw in enumerate(raw_statuses):
        path = f"status.resourceClaimStatuses[{index}]"
        entry = _fields.as_mapping(raw, path)
        name = _fields.string(entry, "name", f"{path}.name")
        if name:
            statuses[name] = _fields.string(entry, "resourceClaimName", f"{path}.resourceClaimName")
    return tuple(refs), statuses


# -- slices --------------------------------------------------------------------------------


class AttributeValue(NamedTuple):
    """A device attribute for ``matchAttribute`` and ``distinctAttribute`` constraints: its
    type and value (versions compare without build metadata, as semantic versions do)."""

    kind: str
    value: object


@dataclass(frozen=True, slots=True, eq=False)
class SliceDevice:
    """One device of a slice. ``raw`` is its JSON (what CEL selectors read); ``attributes``
    are keyed by fully qualified name (``<domain>/<id>``, the driver being the domain of a
    name without one)."""

    name: str
    raw: Mapping[str, Any]
    attributes: Mapping[str, AttributeValue]
    #: Why koordgang does not allocate this device ("" if it may): a feature of the release
    #: that it does not implement yet, named.
    unsupported: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class ResourceSliceInfo:
    name: str
    resource_version: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    #: The node whose devices these are; "" for a pool not local to one node.
    node_name: str
    devices: tuple[SliceDevice, ...]
    #: Why none of its devices are allocated here ("" if they may be), for slices that are
    #: not local to one node (``nodeSelector``, ``allNodes``, per-device node selection).
    unsupported: str = ""

    @property
    def pool_key(self) -> tuple[str, str]:
        return (self.driver, self.pool)


def _attribute_value(raw: Any, path: str) -> AttributeValue | None:
    """The typed value of one attribute; None for a type this release does not compare
    (list-typed attributes, an alpha feature)."""
    entry = _fields.as_mapping(raw, path)
    for kind in ("int", "bool", "string"):
        if kind in entry:
            return AttributeValue(kind, entry[kind])
    if "version" in entry:
        version = str(entry["version"])
        return AttributeValue("version", version.split("+", 1)[0])
    return None


def _qualified(name: str, driver: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def _device_unsupported(raw: Mapping[str, Any], slice_selects_per_device: bool) -> str:
    taints = raw.get("taints")
    if isinstance(taints, list) and any(
        isinstance(t, Mapping) and t.get("effect") in _BLOCKING_TAINT_EFFECTS for t in taints
    ):
        return "device taints (DRADeviceTaints)"
    if raw.get("consumesCounters"):
        return "partitionable devices (consumesCounters)"
    if raw.get("allowMultipleAllocations") is True:
        return "devices shared between claims (allowMultipleAllocations)"
    if raw.get("bindingConditions") or raw.get("bindsToNode") is True:
        return "binding conditions (bindingConditions)"
    if slice_selects_per_device:
        return "per-device node selection (perDeviceNodeSelection)"
    if raw.get("nodeAllocatableResourceMappings"):
        return "node allocatable resource mappings (nodeAllocatableResourceMappings)"
    return ""


def parse_resource_slice(obj: Mapping[str, Any]) -> ResourceSliceInfo:
    """Raises ModelError naming the field when the object is malformed."""
    metadata = _fields.mapping(obj, "metadata", "metadata")
    spec = _fields.mapping(obj, "spec", "spec")
    name = _fields.string(metadata, "name", "metadata.name")
    if not name:
        raise ModelError("missing", "metadata.name")
    driver = _fields.string(spec, "driver", "spec.driver")
    if not driver:
        raise ModelError("missing", "spec.driver")
    pool = _fields.mapping(spec, "pool", "spec.pool")
    pool_name = _fields.string(pool, "name", "spec.pool.name")
    if not pool_name:
        raise ModelError("missing", "spec.pool.name")
    node_name = _fields.string(spec, "nodeName", "spec.nodeName")
    per_device = spec.get("perDeviceNodeSelection") is True
    unsupported = ""
    if not node_name:
        if per_device:
            unsupported = "per-device node selection (perDeviceNodeSelection)"
        elif spec.get("nodeSelector") is not None:
            unsupported = "devices of pools selected by nodeSelector (not local to one node)"
        elif spec.get("allNodes") is True:
            unsupported = "devices of pools on all nodes (allNodes)"
        else:
            raise ModelError("one of nodeName, nodeSelector, allNodes must be set", "spec")
    devices: list[SliceDevice] = []
    for index, raw in enumerate(_fields.items(spec, "devices", "spec.devices")):
        path = f"spec.devices[{index}]"
        entry = _fields.as_mapping(raw, path)
        device_name = _fields.string(entry, "name", f"{path}.name")
        if not device_name:
            raise ModelError("missing", f"{path}.name")
        attributes: dict[str, AttributeValue] = {}
        raw_attributes = _fields.mapping(entry, "attributes", f"{path}.attributes")
        for attr_name, attr in raw_attributes.items():
            value = _attribute_value(attr, f"{path}.attributes[{attr_name}]")
            if value is not None:
                attributes[_qualified(str(attr_name), driver)] = value
        devices.append(
            SliceDevice(
                name=device_name,
                raw=entry,
                attributes=attributes,
                unsupported=_device_unsupported(entry, per_device),
            )
        )
    return ResourceSliceInfo(
        name=name,
        resource_version=_fields.string(metadata, "resourceVersion", "metadata.resourceVersion"),
        driver=driver,
        pool=pool_name,
        generation=_fields.integer(pool, "generation", "spec.pool.generation"),
        slice_count=max(
            1, _fields.integer(pool, "resourceSliceCount", "spec.pool.resourceSliceCount")
        ),
        node_name=node_name,
        devices=tuple(devices),
        unsupported=unsupported,
    )


# -- classes -------------------------------------------------------------------------------


def _selectors(parent: Mapping[str, Any], path: str) -> tuple[str, ...]:
    expressions: list[str] = []
    for index, raw in enumerate(_fields.items(parent, "selectors", f"{path}.selectors")):
        item_path = f"{path}.selectors[{index}]"
        selector = _fields.as_mapping(raw, item_path)
        cel = _fields.mapping(selector, "cel", f"{item_path}.cel")
        expression = _fields.string(cel, "expression", f"{item_path}.cel.expression")
        if not expression:
            raise ModelError("only CEL selectors are known; cel.expression is missing", item_path)
        expressions.append(expression)
    return tuple(expressions)


@dataclass(frozen=True, slots=True, eq=False)
class DeviceClassInfo:
    name: str
    resource_version: str
    #: CEL expressions every device of the class must satisfy.
    selectors: tuple[str, ...]
    #: ``spec.config`` entries (each an ``opaque`` configuration), copied into allocations.
    config: tuple[Mapping[str, Any], ...] = ()
    #: ``spec.extendedResourceName``: pods asking for this extended resource get devices of
    #: the class (DRA-backed extended resources, not allocated by koordgang yet).
    extended_resource_name: str = ""


def parse_device_class(obj: Mapping[str, Any]) -> DeviceClassInfo:
    metadata = _fields.mapping(obj, "metadata", "metadata")
    spec = _fields.mapping(obj, "spec", "spec")
    name = _fields.string(metadata, "name", "metadata.name")
    if not name:
        raise ModelError("missing", "metadata.name")
    config = tuple(
        _fields.as_mapping(raw, f"spec.config[{index}]")
        for index, raw in enumerate(_fields.items(spec, "config", "spec.config"))
    )
    return DeviceClassInfo(
        name=name,
        resource_version=_fields.string(metadata, "resourceVersion", "metadata.resourceVersion"),
        selectors=_selectors(spec, "spec"),
        config=config,
        extended_resource_name=_fields.string(
            spec, "extendedResourceName", "spec.extendedResourceName"
        ),
    )


# -- claims --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubRequest:
    """What one request asks for: devices of a class that pass every selector, ``count`` of
    them or ``All``. A ``firstAvailable`` request has several, tried in order; an ``exactly``
    request has one, named ""."""

    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    mode: str = ALLOCATION_MODE_EXACT
    count: int = 1
    #: Tolerations of device taints, copied into the allocation's results.
    tolerations: tuple[Mapping[str, Any], ...] = field(default=(), hash=False, compare=False)
    #: Why koordgang cannot allocate it ("" if it can): a feature it does not implement yet.
    unsupported: str = ""


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    alternatives: tuple[SubRequest, ...]
    first_available: bool = False

    def result_name(self, alternative: SubRequest) -> str:
        """How an allocation's results name the request: ``<request>/<subrequest>`` for an
        alternative of ``firstAvailable``."""
        return f"{self.name}/{alternative.name}" if self.first_available else self.name


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    #: The requests it applies to (empty: all of the claim's).
    requests: tuple[str, ...]
    #: Fully qualified attribute every chosen device must have, with one value.
    match_attribute: str = ""
    #: Fully qualified attribute every chosen device must have, each with its own value.
    distinct_attribute: str = ""

    def applies_to(self, request: str, result_name: str) -> bool:
        """Whether it constrains the devices of ``request`` (chosen as ``result_name``, which
        is ``<request>/<subrequest>`` for an alternative): naming the request covers all of
        its alternatives, naming an alternative covers that one."""
        return not self.requests or request in self.requests or result_name in self.requests


@dataclass(frozen=True, slots=True)
class ClaimConfig:
    """A ``spec.devices.config`` entry of a claim: its requests (empty: all) and the
    configuration itself (JSON)."""

    requests: tuple[str, ...]
    raw: Mapping[str, Any] = field(hash=False, compare=False)


@dataclass(frozen=True, slots=True, eq=False)
class ClaimSpec:
    """A claim's ``spec.devices``. Equal (and hashed) by its canonical JSON: the claims
    made from one template are equal, and so are the verdicts about them."""

    requests: tuple[DeviceRequest, ...]
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[ClaimConfig, ...] = ()
    signature: bytes = b""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClaimSpec) and other.signature == self.signature

    def __hash__(self) -> int:
        return hash(self.signature)

    def request(self, name: str) -> DeviceRequest | None:
        return next((r for r in self.requests if r.name == name), None)


def _sub_request(raw: Mapping[str, Any], name: str, path: str, admin: bool) -> SubRequest:
    device_class = _fields.string(raw, "deviceClassName", f"{path}.deviceClassName")
    if not device_class:
        raise ModelError("missing", f"{path}.deviceClassName")
    mode = _fields.string(raw, "allocationMode", f"{path}.allocationMode") or ALLOCATION_MODE_EXACT
    if mode not in (ALLOCATION_MODE_EXACT, ALLOCATION_MODE_ALL):
        raise ModelError(f"unknown allocation mode {show(mode)}", f"{path}.allocationMode")
    count = _fields.integer(raw, "count", f"{path}.count", default=1)
    if mode == ALLOCATION_MODE_EXACT and count < 1:
        raise ModelError(f"must be at least 1, got {count}", f"{path}.count")
    unsupported = ""
    if admin and raw.get("adminAccess") is True:
        unsupported = "admin access to devices (adminAccess)"
    elif raw.get("capacity") is not None:
        unsupported = "consumable capacity (capacity.requests)"
    tolerations = tuple(
        _fields.as_mapping(t, f"{path}.tolerations[{i}]")
        for i, t in enumerate(_fields.items(raw, "tolerations", f"{path}.tolerations"))
    )
    return SubRequest(
        name=name,
        device_class=device_class,
        selectors=_selectors(raw, path),
        mode=mode,
        count=count if mode == ALLOCATION_MODE_EXACT else 0,
        tolerations=tolerations,
        unsupported=unsupported,
    )


def _request(raw: Any, path: str) -> DeviceRequest:
    entry = _fields.as_mapping(raw, path)
    name = _fields.string(entry, "name", f"{path}.name")
    if not name:
        raise ModelError("missing", f"{path}.name")
    if entry.get("exactly") is not None:
        exact = _fields.mapping(entry, "exactly", f"{path}.exactly")
        return DeviceRequest(name, (_sub_request(exact, "", f"{path}.exactly", admin=True),))
    alternatives = _fields.items(entry, "firstAvailable", f"{path}.firstAvailable")
    if not alternatives:
        raise ModelError("one of exactly and firstAvailable must be set", path)
    subs: list[SubRequest] = []
    for index, raw_sub in enumerate(alternatives):
        sub_path = f"{path}.firstAvailable[{index}]"
        sub = _fields.as_mapping(raw_sub, sub_path)
        sub_name = _fields.string(sub, "name", f"{sub_path}.name")
        if not sub_name:
            raise ModelError("missing", f"{sub_path}.name")
        subs.append(_sub_request(sub, sub_name, sub_path, admin=False))
    return DeviceRequest(name, tuple(subs), first_available=True)


def _constraint(raw: Any, path: str) -> DeviceConstraint:
    entry = _fields.as_mapping(raw, path)
    requests = tuple(
        str(r) for r in _fields.items(entry, "requests", f"{path}.requests") if isinstance(r, str)
    )
    match = _fields.string(entry, "matchAttribute", f"{path}.matchAttribute")
    distinct = _fields.string(entry, "distinctAttribute", f"{path}.distinctAttribute")
    if not match and not distinct:
        raise ModelError("one of matchAttribute and distinctAttribute must be set", path)
    return DeviceConstraint(requests, match, distinct)


def _claim_spec(spec: Mapping[str, Any]) -> ClaimSpec:
    devices = _fields.mapping(spec, "devices", "spec.devices")
    requests = tuple(
        _request(raw, f"spec.devices.requests[{index}]")
        for index, raw in enumerate(_fields.items(devices, "requests", "spec.devices.requests"))
    )
    constraints = tuple(
        _constraint(raw, f"spec.devices.constraints[{index}]")
        for index, raw in enumerate(
            _fields.items(devices, "constraints", "spec.devices.constraints")
        )
    )
    config: list[ClaimConfig] = []
    for index, raw in enumerate(_fields.items(devices, "config", "spec.devices.config")):
        path = f"spec.devices.config[{index}]"
        entry = _fields.as_mapping(raw, path)
        raw_names = _fields.items(entry, "requests", f"{path}.requests")
        names = tuple(str(r) for r in raw_names if isinstance(r, str))
        config.append(ClaimConfig(names, entry))
    signature = orjson.dumps(devices, option=orjson.OPT_SORT_KEYS)
    return ClaimSpec(requests, constraints, tuple(config), signature)


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    """One result of an allocation: the request (``<request>`` or ``<request>/<sub>``) and the
    device that serves it."""

    request: str
    driver: str
    pool: str
    device: str
    tolerations: tuple[Mapping[str, Any], ...] = field(default=(), hash=False, compare=False)

    @property
    def id(self) -> DeviceId:
        return DeviceId(self.driver, self.pool, self.device)

    def to_api(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "request": self.request,
            "driver": self.driver,
            "pool": self.pool,
            "device": self.device,
        }
        if self.tolerations:
            result["tolerations"] = [dict(t) for t in self.tolerations]
        return result


def node_local_selector(node: str) -> dict[str, Any]:
    """The node selector of an allocation of node-local devices: that node, by name."""
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        ]
    }


@dataclass(frozen=True, slots=True, eq=False)
class ClaimAllocation:
    """A claim's ``status.allocation``: the devices, their configuration, and where pods
    using them may run."""

    devices: tuple[AllocatedDevice, ...]
    #: ``devices.config`` as JSON, class configurations first.
    config: tuple[Mapping[str, Any], ...] = ()
    #: Where the claim's pods may run (None: anywhere).
    node_selector: NodeSelector | None = None
    #: Its JSON, written back as it was read.
    node_selector_raw: Mapping[str, Any] | None = None
    #: The node of the devices when they are local to one (what this scheduler allocates),
    #: "" when not known from the allocation alone.
    node: str = ""

    def device_ids(self) -> tuple[DeviceId, ...]:
        return tuple(d.id for d in self.devices)

    def allows(self, node_name: str, labels: Mapping[str, str]) -> bool:
        return self.node_selector is None or self.node_selector.matches(node_name, labels)

    def to_api(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "devices": {"results": [d.to_api() for d in self.devices]},
        }
        if self.config:
            result["devices"]["config"] = [dict(c) for c in self.config]
        if self.node_selector_raw is not None:
            result["nodeSelector"] = dict(self.node_selector_raw)
        return result

    @staticmethod
    def on_node(
        node: str, devices: tuple[AllocatedDevice, ...], config: tuple[Mapping[str, Any], ...]
    ) -> ClaimAllocation:
        raw = node_local_selector(node)
        return ClaimAllocation(devices, config, parse_node_selector(raw), raw, node)


@dataclass(frozen=True, slots=True)
class Consumer:
    """An entry of a claim's ``status.reservedFor``: a pod, or (alpha) a PodGroup."""

    resource: str
    name: str
    uid: str
    api_group: str = ""

    @property
    def is_pod(self) -> bool:
        return self.resource == "pods" and not self.api_group

    def to_api(self) -> dict[str, Any]:
        result = {"resource": self.resource, "name": self.name, "uid": self.uid}
        if self.api_group:
            result["apiGroup"] = self.api_group
        return result


@dataclass(frozen=True, slots=True, eq=False)
class ResourceClaimInfo:
    namespace: str
    name: str
    uid: str
    resource_version: str
    spec: ClaimSpec
    allocation: ClaimAllocation | None = None
    reserved_for: tuple[Consumer, ...] = ()
    finalizers: tuple[str, ...] = ()
    deleting: bool = False
    #: The uid of the pod the claim was made for (its controlling owner), "" if none.
    owner_pod_uid: str = ""
    #: Why its ``spec`` cannot be read ("" if it can): such a claim is never allocated here,
    #: but an allocation it has still counts (its devices are in use).
    problem: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def reserved_for_uid(self, uid: str) -> bool:
        return any(c.uid == uid for c in self.reserved_for)


def _allocation(status: Mapping[str, Any]) -> ClaimAllocation | None:
    raw = status.get("allocation")
    if raw is None:
        return None
    allocation = _fields.as_mapping(raw, "status.allocation")
    devices = _fields.mapping(allocation, "devices", "status.allocation.devices")
    results: list[AllocatedDevice] = []
    for index, item in enumerate(
        _fields.items(devices, "results", "status.allocation.devices.results")
    ):
        path = f"status.allocation.devices.results[{index}]"
        entry = _fields.as_mapping(item, path)
        results.append(
            AllocatedDevice(
                request=_fields.string(entry, "request", f"{path}.request"),
                driver=_fields.string(entry, "driver", f"{path}.driver"),
                pool=_fields.string(entry, "pool", f"{path}.pool"),
                device=_fields.string(entry, "device", f"{path}.device"),
            )
        )
    config = tuple(
        _fields.as_mapping(c, f"status.allocation.devices.config[{i}]")
        for i, c in enumerate(_fields.items(devices, "config", "status.allocation.devices.config"))
    )
    selector_raw = allocation.get("nodeSelector")
    selector = None
    node = ""
    if selector_raw is not None:
        selector_raw = _fields.as_mapping(selector_raw, "status.allocation.nodeSelector")
        try:
            selector = parse_node_selector(selector_raw)
        except ModelError as err:
            raise err.at("status.allocation.nodeSelector") from None
        node = _single_node(selector_raw)
    return ClaimAllocation(tuple(results), config, selector, selector_raw, node)


def _single_node(raw: Mapping[str, Any]) -> str:
    """The node a selector names when it is ``metadata.name In [node]`` and nothing else."""
    terms = raw.get("nodeSelectorTerms")
    if not isinstance(terms, list) or len(terms) != 1 or not isinstance(terms[0], Mapping):
        return ""
    term = terms[0]
    fields_ = term.get("matchFields")
    if term.get("matchExpressions") or not isinstance(fields_, list) or len(fields_) != 1:
        return ""
    requirement = fields_[0]
    if not isinstance(requirement, Mapping):
        return ""
    values = requirement.get("values")
    if (
        requirement.get("key") == "metadata.name"
        and requirement.get("operator") == "In"
        and isinstance(values, list)
        and len(values) == 1
        and isinstance(values[0], str)
    ):
        return values[0]
    return ""


def _consumers(status: Mapping[str, Any]) -> tuple[Consumer, ...]:
    consumers: list[Consumer] = []
    for index, item in enumerate(_fields.items(status, "reservedFor", "status.reservedFor")):
        path = f"status.reservedFor[{index}]"
        entry = _fields.as_mapping(item, path)
        consumers.append(
            Consumer(
                resource=_fields.string(entry, "resource", f"{path}.resource"),
                name=_fields.string(entry, "name", f"{path}.name"),
                uid=_fields.string(entry, "uid", f"{path}.uid"),
                api_group=_fields.string(entry, "apiGroup", f"{path}.apiGroup"),
            )
        )
    return tuple(consumers)


def _owner_pod_uid(metadata: Mapping[str, Any]) -> str:
    for owner in _fields.items(metadata, "ownerReferences", "metadata.ownerReferences"):
        if (
            isinstance(owner, Mapping)
            and owner.get("controller") is True
            and owner.get("kind") == "Pod"
            and owner.get("apiVersion") == "v1"
        ):
            return str(owner.get("uid") or "")
    return ""


def parse_resource_claim(obj: Mapping[str, Any]) -> ResourceClaimInfo:
    """Raises ModelError naming the field when the object is malformed."""
    metadata = _fields.mapping(obj, "metadata", "metadata")
    spec = _fields.mapping(obj, "spec", "spec")
    status = _fields.mapping(obj, "status", "status")
    name = _fields.string(metadata, "name", "metadata.name")
    if not name:
        raise ModelError("missing", "metadata.name")
    finalizers = tuple(
        str(f)
        for f in _fields.items(metadata, "finalizers", "metadata.finalizers")
        if isinstance(f, str)
    )
    problem = ""
    try:
        claim_spec = _claim_spec(spec)
    except ModelError as err:
        problem = str(err)
        claim_spec = ClaimSpec((), signature=b"unreadable:" + problem.encode())
    return ResourceClaimInfo(
        namespace=_fields.string(metadata, "namespace", "metadata.namespace") or "default",
        name=name,
        uid=_fields.string(metadata, "uid", "metadata.uid"),
        resource_version=_fields.string(metadata, "resourceVersion", "metadata.resourceVersion"),
        spec=claim_spec,
        allocation=_allocation(status),
        reserved_for=_consumers(status),
        finalizers=finalizers,
        deleting=metadata.get("deletionTimestamp") is not None,
        owner_pod_uid=_owner_pod_uid(metadata),
        problem=problem,
    )
