"""What every part of the DRA model shares: the API's names and limits, how a device is named,
and how selectors are read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from koordgang.model import _fields
from koordgang.model.errors import ModelError

API_VERSION = "resource.k8s.io/v1"
#: Put on a claim before its allocation is written: the resourceclaim controller removes it
#: once the claim is deallocated, so a claim in use is never deleted under its pod.
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
ALLOCATION_MODE_EXACT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
#: The API's limit of devices in one claim's allocation.
MAX_ALLOCATED_DEVICES = 32
#: The API's limit of consumers a claim may be reserved for.
MAX_RESERVED_FOR = 256


def split_qualified(name: str, driver: str) -> tuple[str, str]:
    """A device attribute's or capacity's name as (domain, id): ``domain/id`` goes to its
    domain, a bare id belongs to the driver's own."""
    domain, slash, key = name.partition("/")
    return (domain, key) if slash else (driver, name)


class DeviceId(NamedTuple):
    """A device, as an allocation names it: driver, pool and device name. Pool names may
    contain slashes, hence a tuple rather than one joined string."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


def read_selectors(parent: Mapping[str, Any], path: str) -> tuple[str, ...]:
    """The CEL expressions of ``parent``'s ``selectors`` (a class's, or a request's)."""
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
