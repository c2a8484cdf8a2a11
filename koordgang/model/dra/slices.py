"""ResourceSlices and DeviceClasses: the devices a node's driver publishes, and the classes
that select them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from koordgang.model import _fields
from koordgang.model.affinity import parse_node_selector
from koordgang.model.dra.base import read_selectors, split_qualified
from koordgang.model.dra.capacity import DeviceCapacity, parse_device_capacity
from koordgang.model.dra.taints import DeviceTaint, parse_taint
from koordgang.model.errors import ModelError
from koordgang.model.quantity import parse_quantity


class AttributeValue(NamedTuple):
    """A device attribute for ``matchAttribute`` and ``distinctAttribute`` constraints: its
    type and value (versions compare without build metadata, as semantic versions do)."""

    kind: str
    value: object


@dataclass(frozen=True, slots=True)
class CounterSet:
    """A named set of counters a pool's devices draw on (``spec.sharedCounters``): a GPU's
    memory, say, which its partitions share."""

    name: str
    counters: Mapping[str, Fraction]


@dataclass(frozen=True, slots=True)
class CounterUse:
    """What one device takes of a counter set while it is allocated (``consumesCounters``)."""

    counter_set: str
    counters: Mapping[str, Fraction]


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
    #: The taints its driver put on it (DeviceTaintRules add theirs in the DRA manager).
    taints: tuple[DeviceTaint, ...] = ()
    #: What it takes of its pool's counter sets while allocated (partitionable devices).
    consumes: tuple[CounterUse, ...] = ()
    #: Where it is, for a slice with ``perDeviceNodeSelection``: its node, or the nodes its
    #: selector matches (JSON), or all nodes.
    node_name: str = ""
    node_selector: Mapping[str, Any] | None = None
    all_nodes: bool = False
    #: Condition types that must be True in the claim's ``status.devices`` entry for the
    #: device before its pods bind; any of ``binding_failure_conditions`` True gives it back.
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    #: Its allocation names the chosen node (``bindsToNode``).
    binds_to_node: bool = False
    #: ``allowMultipleAllocations``: several claims (and requests) may have it at once, each
    #: a share of its capacity.
    multiple: bool = False
    #: ``capacity``, by name as written: what requests consume of it.
    capacity: Mapping[str, DeviceCapacity] = field(default_factory=dict)


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
    #: Why none of its devices are allocated here ("" if they may be).
    unsupported: str = ""
    #: Where its devices are when not on one node: the nodes ``nodeSelector`` (JSON) matches,
    #: all nodes, or each device's own (``perDeviceNodeSelection``).
    node_selector: Mapping[str, Any] | None = None
    all_nodes: bool = False
    per_device: bool = False
    #: The counter sets it defines for its pool (a slice has these or devices, not both).
    counter_sets: tuple[CounterSet, ...] = ()

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


def _device_unsupported(raw: Mapping[str, Any]) -> str:
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
    all_nodes = spec.get("allNodes") is True
    node_selector = _selector(spec, "spec")
    if not (node_name or per_device or all_nodes or node_selector is not None):
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
                attributes["/".join(split_qualified(str(attr_name), driver))] = value
        taints = tuple(
            parse_taint(_fields.as_mapping(t, f"{path}.taints[{i}]"), f"{path}.taints[{i}]")
            for i, t in enumerate(_fields.items(entry, "taints", f"{path}.taints"))
        )
        devices.append(
            SliceDevice(
                name=device_name,
                raw=entry,
                attributes=attributes,
                unsupported=_device_unsupported(entry),
                taints=taints,
                consumes=_counter_uses(entry, path),
                node_name=_fields.string(entry, "nodeName", f"{path}.nodeName")
                if per_device
                else "",
                node_selector=_selector(entry, path) if per_device else None,
                all_nodes=per_device and entry.get("allNodes") is True,
                binding_conditions=_strings(entry, "bindingConditions", path),
                binding_failure_conditions=_strings(entry, "bindingFailureConditions", path),
                binds_to_node=entry.get("bindsToNode") is True,
                multiple=entry.get("allowMultipleAllocations") is True,
                capacity=parse_device_capacity(entry, path),
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
        counter_sets=_counter_sets(spec),
        node_selector=None if node_name else node_selector,
        all_nodes=all_nodes and not node_name,
        per_device=per_device and not node_name,
    )


def _strings(entry: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    values = _fields.items(entry, key, f"{path}.{key}")
    for index, item in enumerate(values):
        if not isinstance(item, str):
            raise ModelError("must be a string", f"{path}.{key}[{index}]")
    return tuple(values)


def _selector(entry: Mapping[str, Any], path: str) -> Mapping[str, Any] | None:
    """``nodeSelector`` as JSON, checked to be one (None if not there)."""
    raw = entry.get("nodeSelector")
    if raw is None:
        return None
    selector = _fields.as_mapping(raw, f"{path}.nodeSelector")
    try:
        parse_node_selector(selector)
    except ModelError as error:
        raise error.at(f"{path}.nodeSelector") from None
    return selector


def _counters(raw: Any, path: str) -> dict[str, Fraction]:
    """``{name: {value: quantity}}`` as exact amounts."""
    counters: dict[str, Fraction] = {}
    for name, entry in _fields.as_mapping(raw, path, none_is_empty=True).items():
        counter = _fields.as_mapping(entry, f"{path}[{name}]")
        try:
            counters[str(name)] = parse_quantity(counter.get("value", "0"))
        except ModelError as error:
            raise error.at(f"{path}[{name}].value") from None
    return counters


def _counter_sets(spec: Mapping[str, Any]) -> tuple[CounterSet, ...]:
    sets: list[CounterSet] = []
    for index, raw in enumerate(_fields.items(spec, "sharedCounters", "spec.sharedCounters")):
        path = f"spec.sharedCounters[{index}]"
        entry = _fields.as_mapping(raw, path)
        name = _fields.string(entry, "name", f"{path}.name")
        if not name:
            raise ModelError("missing", f"{path}.name")
        sets.append(CounterSet(name, _counters(entry.get("counters"), f"{path}.counters")))
    return tuple(sets)


def _counter_uses(entry: Mapping[str, Any], path: str) -> tuple[CounterUse, ...]:
    uses: list[CounterUse] = []
    for index, raw in enumerate(
        _fields.items(entry, "consumesCounters", f"{path}.consumesCounters")
    ):
        item_path = f"{path}.consumesCounters[{index}]"
        use = _fields.as_mapping(raw, item_path)
        counter_set = _fields.string(use, "counterSet", f"{item_path}.counterSet")
        if not counter_set:
            raise ModelError("missing", f"{item_path}.counterSet")
        uses.append(
            CounterUse(counter_set, _counters(use.get("counters"), f"{item_path}.counters"))
        )
    return tuple(uses)


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
        selectors=read_selectors(spec, "spec"),
        config=config,
        extended_resource_name=_fields.string(
            spec, "extendedResourceName", "spec.extendedResourceName"
        ),
    )
