"""What the scheduler needs of a node, parsed once from the API server's JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model import _fields
from koordgang.model.errors import ModelError, show
from koordgang.model.resources import Resources, parse_resource_list
from koordgang.model.taints import SCHEDULING_EFFECTS, Taint, parse_taints

__all__ = ["NodeInfo", "NodeParseError", "parse_node"]


class NodeParseError(ModelError):
    """A node the scheduler cannot read; ``str()`` names the field and the value."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeInfo:
    """A node as the scheduler sees it.

    ``allocatable`` includes ``pods`` (how many pods the node takes). ``ready`` is True only
    when the node reports condition Ready=True: a node that reports nothing is not trusted.
    """

    name: str
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    allocatable: Resources = Resources.EMPTY
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = False
    resource_version: str = ""
    creation_timestamp: float = 0.0
    #: The taints that can keep a pod off (NoSchedule, NoExecute), for the filter's loop.
    scheduling_taints: tuple[Taint, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "scheduling_taints",
            tuple(t for t in self.taints if t.effect in SCHEDULING_EFFECTS),
        )


def _ready(status: Mapping[str, Any]) -> bool:
    for index, condition in enumerate(_fields.items(status, "conditions", "status.conditions")):
        if type(condition) is not dict and not isinstance(condition, Mapping):
            raise ModelError(
                f"expected an object, got {show(condition)}", f"status.conditions[{index}]"
            )
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def parse_node(obj: Mapping[str, Any]) -> NodeInfo:
    """A node object as the API server returns it, as a :class:`NodeInfo`.

    ``status.allocatable`` falls back to ``status.capacity`` when absent, as the API server's
    defaulting does. Raises :class:`NodeParseError` naming the field and the value when a
    quantity, taint or timestamp is malformed.
    """
    try:
        if type(obj) is not dict and not isinstance(obj, Mapping):
            raise ModelError("a node must be a JSON object")
        metadata = _fields.mapping(obj, "metadata", "metadata")
        spec = _fields.mapping(obj, "spec", "spec")
        status = _fields.mapping(obj, "status", "status")
        name = _fields.string(metadata, "name", "metadata.name")
        if not name:
            raise ModelError("missing", "metadata.name")
        field_name = "allocatable" if status.get("allocatable") is not None else "capacity"
        try:
            allocatable = parse_resource_list(status.get(field_name))
        except ModelError as err:
            raise err.at(f"status.{field_name}") from None
        try:
            taints = parse_taints(spec.get("taints"))
        except ModelError as err:
            raise err.at("spec.taints") from None
        unschedulable = spec.get("unschedulable")
        if unschedulable is not None and not isinstance(unschedulable, bool):
            raise ModelError(
                f"expected true or false, got {show(unschedulable)}", "spec.unschedulable"
            )
        return NodeInfo(
            name=name,
            labels=_fields.string_map(metadata, "labels", "metadata.labels"),
            allocatable=allocatable,
            taints=taints,
            unschedulable=bool(unschedulable),
            ready=_ready(status),
            resource_version=_fields.string(
                metadata, "resourceVersion", "metadata.resourceVersion"
            ),
            creation_timestamp=_fields.timestamp(
                metadata, "creationTimestamp", "metadata.creationTimestamp"
            )
            or 0.0,
        )
    except NodeParseError:
        raise
    except ModelError as err:
        raise NodeParseError(err.detail, err.path) from err
