"""Kubernetes' lists library (k8s.io/apiserver ``pkg/cel/library/lists.go``): ``isSorted``,
``sum``, ``min``, ``max``, ``indexOf`` and ``lastIndexOf``, with CEL's equality and order of
the values the CEL library hands to Python."""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Callable
from typing import Any

from koordgang.model.cel.errors import FunctionFailed
from koordgang.model.cel.values import INT64_MAX, INT64_MIN

__all__ = ["cel_equal", "index_of", "is_sorted", "last_index_of", "max_of", "min_of", "sum_of"]


def _comparable(items: list[Any], function: str) -> list[Any]:
    for item in items:
        if isinstance(item, dict | list) or item is None:
            raise FunctionFailed(f"no such overload: {function} needs a list of comparable values")
    return items


def _less(left: Any, right: Any) -> bool:
    # CEL orders bools, numbers (across int, uint and double), strings and bytes; a mix of
    # kinds has no order, as in Kubernetes.
    if isinstance(left, bool) != isinstance(right, bool):
        raise FunctionFailed("no such overload: values of different types have no order")
    try:
        return bool(left < right)
    except TypeError:
        raise FunctionFailed("no such overload: values of different types have no order") from None


def is_sorted(items: list[Any]) -> bool:
    _comparable(items, "isSorted")
    return not any(_less(later, earlier) for earlier, later in itertools.pairwise(items))


def sum_of(items: list[Any]) -> Any:
    if any(isinstance(item, bool) or not isinstance(item, int | float) for item in items):
        raise FunctionFailed(
            "koordgang cannot evaluate sum() over anything but int, uint and double yet"
        )
    if any(isinstance(item, float) for item in items):
        # One addition after the other, as Kubernetes adds: no compensated summation.
        total_float = 0.0
        for item in items:
            total_float += item
        return total_float
    total = 0
    for item in items:
        total += item
        if not INT64_MIN <= total <= INT64_MAX:
            raise FunctionFailed("integer overflow")
    return total


# Values the library passes in to Python but cannot take back as a result.
_UNRETURNABLE = (datetime.timedelta, datetime.datetime)


def _extreme(items: list[Any], function: str, prefer_later: Callable[[Any, Any], bool]) -> Any:
    _comparable(items, function)
    if not items:
        raise FunctionFailed(f"{function} called on empty list")
    best = items[0]
    if isinstance(best, _UNRETURNABLE):
        raise FunctionFailed(f"koordgang cannot evaluate {function}() over durations or times yet")
    for item in items[1:]:
        if prefer_later(best, item):
            best = item
    return best


def min_of(items: list[Any]) -> Any:
    return _extreme(items, "min", lambda best, item: _less(item, best))


def max_of(items: list[Any]) -> Any:
    return _extreme(items, "max", lambda best, item: _less(best, item))


def index_of(items: list[Any], wanted: Any) -> int:
    return next((i for i, item in enumerate(items) if cel_equal(item, wanted)), -1)


def last_index_of(items: list[Any], wanted: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if cel_equal(items[i], wanted):
            return i
    return -1


def cel_equal(left: Any, right: Any) -> bool:
    """CEL's equality of two values as the library hands them to Python."""
    # bool is an int to Python but not to CEL; numbers compare across int, uint and double.
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(cel_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(cel_equal(v, right[k]) for k, v in left.items())
    if isinstance(left, bytes | bytearray) and isinstance(right, bytes | bytearray):
        return bytes(left) == bytes(right)
    return type(left) is type(right) and bool(left == right)
