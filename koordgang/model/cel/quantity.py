"""Kubernetes' quantity library (k8s.io/apiserver ``pkg/cel/library/quantity.go``):
``quantity``, ``isQuantity``, ``sign`` and the Quantity methods ``asInteger``, ``isInteger``,
``asApproximateFloat``, ``add`` and ``sub``. The comparisons, shared with versions, are in
``ordering.py``."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from koordgang.model.cel.errors import FunctionFailed
from koordgang.model.cel.values import (
    as_quantity,
    parse_k8s_quantity,
    quantity_approximate_float,
    quantity_as_int64,
    quantity_value,
)
from koordgang.model.quantity import QuantityError

__all__ = [
    "add",
    "as_approximate_float",
    "as_integer",
    "is_integer",
    "is_quantity",
    "quantity",
    "sign",
    "sub",
]


def quantity(text: str) -> dict[str, str]:
    try:
        return quantity_value(parse_k8s_quantity(text))
    except QuantityError as exc:
        raise FunctionFailed(str(exc)) from None


def is_quantity(text: str) -> bool:
    try:
        parse_k8s_quantity(text)
    except QuantityError:
        return False
    return True


def _need_quantity(value: Any, function: str) -> Fraction:
    amount = as_quantity(value)
    if amount is None:
        raise FunctionFailed(f"no such overload: {function} needs a quantity")
    return amount


def sign(value: Any) -> int:
    amount = _need_quantity(value, "sign")
    return (amount > 0) - (amount < 0)


def as_integer(value: Any) -> int:
    whole = quantity_as_int64(_need_quantity(value, "asInteger"))
    if whole is None:
        raise FunctionFailed("cannot convert value to integer")
    return whole


def is_integer(value: Any) -> bool:
    return quantity_as_int64(_need_quantity(value, "isInteger")) is not None


def as_approximate_float(value: Any) -> float:
    return quantity_approximate_float(_need_quantity(value, "asApproximateFloat"))


def add(value: Any, other: Any) -> dict[str, str]:
    amount = _need_quantity(value, "add")
    if isinstance(other, int) and not isinstance(other, bool):
        return quantity_value(amount + other)
    return quantity_value(amount + _need_quantity(other, "add"))


def sub(value: Any, other: Any) -> dict[str, str]:
    amount = _need_quantity(value, "sub")
    if isinstance(other, int) and not isinstance(other, bool):
        return quantity_value(amount - other)
    return quantity_value(amount - _need_quantity(other, "sub"))
