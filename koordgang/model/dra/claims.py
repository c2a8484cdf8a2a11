"""ResourceClaims: what a claim asks for (its requests, constraints and configuration), its
allocation, and the consumers it is reserved for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from koordgang.model import _fields
from koordgang.model.affinity import NodeSelector, parse_node_selector
from koordgang.model.dra.base import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT,
    DeviceId,
    read_selectors,
)
from koordgang.model.dra.capacity import Amounts, amounts_to_api, parse_amounts
from koordgang.model.dra.extended import EXTENDED_CLAIM_ANNOTATION
from koordgang.model.dra.taints import DeviceToleration, parse_toleration
from koordgang.model.errors import ModelError, show


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
    tolerations: tuple[DeviceToleration, ...] = field(default=(), hash=False, compare=False)
    #: Admin access (``exactly.adminAccess``): any matching device, in use or not, for
    #: monitoring; it takes nothing from other claims.
    admin_access: bool = False
    #: Why koordgang cannot allocate it ("" if it can): a feature it does not implement yet.
    unsupported: str = ""
    #: ``capacity.requests``: what it asks of each capacity of a device, by name as written.
    capacity: Amounts = ()


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
    capacity = _fields.mapping(raw, "capacity", f"{path}.capacity")
    tolerations = tuple(
        parse_toleration(t, f"{path}.tolerations[{i}]")
        for i, t in enumerate(_fields.items(raw, "tolerations", f"{path}.tolerations"))
    )
    return SubRequest(
        name=name,
        device_class=device_class,
        selectors=read_selectors(raw, path),
        mode=mode,
        count=count if mode == ALLOCATION_MODE_EXACT else 0,
        tolerations=tolerations,
        admin_access=admin and raw.get("adminAccess") is True,
        capacity=parse_amounts(capacity.get("requests"), f"{path}.capacity.requests"),
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


def claim_spec(spec: Mapping[str, Any]) -> ClaimSpec:
    """A claim's ``spec`` (JSON) as a :class:`ClaimSpec`; raises ModelError naming the field."""
    return _claim_spec(spec)


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
    #: Given for admin access: the device stays free for everybody else.
    admin_access: bool = False
    #: Copied from the device: what must be True (or must not be) before its pods bind.
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    #: For a device allocated to several claims at once: this allocation's share of it (a
    #: UUID), and what it consumes of the device's capacities.
    share_id: str = ""
    consumed: Amounts = ()

    @property
    def id(self) -> DeviceId:
        return DeviceId(self.driver, self.pool, self.device)

    def describe(self) -> str:
        """``driver/pool/device``, with what a share consumes (``(share: memory 20Gi)``)."""
        if not self.share_id:
            return str(self.id)
        taken = ", ".join(
            f"{name} {amount}" for name, amount in amounts_to_api(self.consumed).items()
        )
        return f"{self.id} (share: {taken})" if taken else f"{self.id} (share)"

    @property
    def holds(self) -> bool:
        """Takes the device from everybody else: not given for admin access, not a share."""
        return not self.admin_access and not self.share_id

    def to_api(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "request": self.request,
            "driver": self.driver,
            "pool": self.pool,
            "device": self.device,
        }
        if self.tolerations:
            result["tolerations"] = [dict(t) for t in self.tolerations]
        if self.admin_access:
            result["adminAccess"] = True
        if self.binding_conditions:
            result["bindingConditions"] = list(self.binding_conditions)
        if self.binding_failure_conditions:
            result["bindingFailureConditions"] = list(self.binding_failure_conditions)
        if self.share_id:
            result["shareID"] = self.share_id
        if self.consumed:
            result["consumedCapacity"] = amounts_to_api(self.consumed)
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

    def held_ids(self) -> tuple[DeviceId, ...]:
        """The devices the allocation takes from everybody else: all but those given for
        admin access and the shares of devices allocated to several claims at once."""
        return tuple(d.id for d in self.devices if d.holds)

    def shares(self) -> tuple[AllocatedDevice, ...]:
        """Its shares of devices allocated to several claims at once (admin access takes
        none: it consumes nothing others count)."""
        return tuple(d for d in self.devices if d.share_id and not d.admin_access)

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


#: The API group of upstream PodGroups, which a claim may be reserved for (``reservedFor``
#: entries with this group and resource ``podgroups``).
SCHEDULING_GROUP = "scheduling.k8s.io"
PODGROUPS = "podgroups"


@dataclass(frozen=True, slots=True)
class Consumer:
    """An entry of a claim's ``status.reservedFor``: a pod, or an upstream PodGroup (its
    claims, Kubernetes 1.37's ``DRAWorkloadResourceClaims``)."""

    resource: str
    name: str
    uid: str
    api_group: str = ""

    @property
    def is_pod(self) -> bool:
        return self.resource == "pods" and not self.api_group

    @property
    def is_podgroup(self) -> bool:
        return self.resource == PODGROUPS and self.api_group == SCHEDULING_GROUP

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
    #: The name of the upstream PodGroup the claim was made for (its controlling owner, a
    #: ``scheduling.k8s.io`` PodGroup: the resourceclaim controller makes one claim per
    #: PodGroup from its template), "" if none.
    owner_podgroup: str = ""
    #: The claim the scheduler made for the pod's DRA-backed extended resources (annotated
    #: ``resource.kubernetes.io/extended-resource-claim: "true"``).
    extended: bool = False
    #: ``status.devices``: per device, the condition types that are True there.
    device_conditions: Mapping[DeviceId, frozenset[str]] = field(default_factory=dict)
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
                admin_access=entry.get("adminAccess") is True,
                binding_conditions=_strings(entry, "bindingConditions", path),
                binding_failure_conditions=_strings(entry, "bindingFailureConditions", path),
                share_id=_fields.string(entry, "shareID", f"{path}.shareID"),
                consumed=parse_amounts(entry.get("consumedCapacity"), f"{path}.consumedCapacity"),
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


def _strings(entry: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    values = _fields.items(entry, key, f"{path}.{key}")
    return tuple(str(v) for v in values if isinstance(v, str))


def _device_conditions(status: Mapping[str, Any]) -> dict[DeviceId, frozenset[str]]:
    """Per device of ``status.devices``, the types of its conditions whose status is True."""
    found: dict[DeviceId, frozenset[str]] = {}
    for index, item in enumerate(_fields.items(status, "devices", "status.devices")):
        path = f"status.devices[{index}]"
        entry = _fields.as_mapping(item, path)
        device = DeviceId(
            _fields.string(entry, "driver", f"{path}.driver"),
            _fields.string(entry, "pool", f"{path}.pool"),
            _fields.string(entry, "device", f"{path}.device"),
        )
        found[device] = frozenset(
            str(c.get("type"))
            for c in _fields.items(entry, "conditions", f"{path}.conditions")
            if isinstance(c, Mapping) and c.get("status") == "True"
        )
    return found


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


def _owner_podgroup(metadata: Mapping[str, Any]) -> str:
    """The name of the controlling owner when it is an upstream PodGroup (any version of
    ``scheduling.k8s.io``, as Kubernetes matches it)."""
    for owner in _fields.items(metadata, "ownerReferences", "metadata.ownerReferences"):
        if (
            isinstance(owner, Mapping)
            and owner.get("controller") is True
            and owner.get("kind") == "PodGroup"
            and str(owner.get("apiVersion") or "").startswith(f"{SCHEDULING_GROUP}/")
        ):
            return str(owner.get("name") or "")
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
        device_conditions=_device_conditions(status),
        finalizers=finalizers,
        deleting=metadata.get("deletionTimestamp") is not None,
        owner_pod_uid=_owner_pod_uid(metadata),
        owner_podgroup=_owner_podgroup(metadata),
        extended=_fields.string_map(metadata, "annotations", "metadata.annotations").get(
            EXTENDED_CLAIM_ANNOTATION
        )
        == "true",
        problem=problem,
    )
