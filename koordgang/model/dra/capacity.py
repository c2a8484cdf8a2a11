"""Consumable capacity (``resource.k8s.io/v1``, beta in 1.37): what a device offers of each of
its capacities and how requests may take it (``requestPolicy``), what a request asks
(``capacity.requests``), and what an allocation's result consumed (``consumedCapacity``).

A device with ``allowMultipleAllocations: true`` may be allocated to several claims at once,
each allocation a share of it (its ``shareID``) consuming part of its capacities; the shares'
sum must stay within each capacity's value. Names are kept as written: in 1.37 a request
names a capacity exactly as the device publishes it, and results name it so too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from koordgang.model import _fields
from koordgang.model.errors import ModelError
from koordgang.model.quantity import format_quantity, parse_quantity

__all__ = [
    "CapacityRange",
    "DeviceCapacity",
    "RequestPolicy",
    "amounts_to_api",
    "parse_amounts",
    "parse_device_capacity",
]

#: A capacity's name as written, and an amount of it.
Amounts = tuple[tuple[str, Fraction], ...]


@dataclass(frozen=True, slots=True)
class CapacityRange:
    """``validRange``: from ``min``, up to ``max`` (None: the capacity's value), in ``step``s
    above ``min`` (None: any amount)."""

    min: Fraction
    max: Fraction | None = None
    step: Fraction | None = None


@dataclass(frozen=True, slots=True)
class RequestPolicy:
    """``requestPolicy``: what a request that does not name the capacity takes (``default``;
    None: all of it), and which amounts a request may take (``validValues``, ascending, or
    ``validRange``; neither: any)."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    valid_range: CapacityRange | None = None


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: Fraction
    policy: RequestPolicy | None = None


def _amount(raw: Any, path: str) -> Fraction:
    try:
        return parse_quantity(raw)
    except ModelError as error:
        raise error.at(path) from None


def _optional(entry: Mapping[str, Any], key: str, path: str) -> Fraction | None:
    raw = entry.get(key)
    return None if raw is None else _amount(raw, f"{path}.{key}")


def _policy(raw: Any, path: str) -> RequestPolicy | None:
    if raw is None:
        return None
    entry = _fields.as_mapping(raw, path)
    values = tuple(
        _amount(v, f"{path}.validValues[{i}]")
        for i, v in enumerate(_fields.items(entry, "validValues", f"{path}.validValues"))
    )
    valid_range = None
    if entry.get("validRange") is not None:
        range_path = f"{path}.validRange"
        found = _fields.as_mapping(entry["validRange"], range_path)
        low = _optional(found, "min", range_path)
        if low is None:
            raise ModelError("missing", f"{range_path}.min")
        step = _optional(found, "step", range_path)
        if step is not None and step <= 0:
            raise ModelError("must be greater than zero", f"{range_path}.step")
        valid_range = CapacityRange(low, _optional(found, "max", range_path), step)
    return RequestPolicy(_optional(entry, "default", path), tuple(sorted(values)), valid_range)


def parse_device_capacity(entry: Mapping[str, Any], path: str) -> dict[str, DeviceCapacity]:
    """A device's ``capacity``: name (as written) -> its value and request policy."""
    found: dict[str, DeviceCapacity] = {}
    raw = _fields.as_mapping(entry.get("capacity"), f"{path}.capacity", none_is_empty=True)
    for name, item in raw.items():
        item_path = f"{path}.capacity[{name}]"
        capacity = _fields.as_mapping(item, item_path)
        if capacity.get("value") is None:
            raise ModelError("missing", f"{item_path}.value")
        value = _amount(capacity["value"], f"{item_path}.value")
        found[str(name)] = DeviceCapacity(
            value, _policy(capacity.get("requestPolicy"), f"{item_path}.requestPolicy")
        )
    return found


def parse_amounts(raw: Any, path: str) -> Amounts:
    """``{name: quantity}`` (a request's ``capacity.requests``, a result's
    ``consumedCapacity``), sorted by name."""
    found = _fields.as_mapping(raw, path, none_is_empty=True)
    amounts = [(str(name), _amount(value, f"{path}[{name}]")) for name, value in found.items()]
    for name, amount in amounts:
        if amount < 0:
            raise ModelError("must not be negative", f"{path}[{name}]")
    return tuple(sorted(amounts))


def amounts_to_api(amounts: Amounts) -> dict[str, str]:
    return {name: format_quantity(amount) for name, amount in amounts}
