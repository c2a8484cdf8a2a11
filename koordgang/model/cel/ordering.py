"""``isGreaterThan``, ``isLessThan`` and ``compareTo``, which Kubernetes' quantity and semver
libraries both declare: quantities and versions share one CEL representation (a tagged map,
see ``values.py``), so one overload serves both and the tag decides."""

from __future__ import annotations

from typing import Any

from koordgang.model.cel.errors import FunctionFailed
from koordgang.model.cel.values import as_quantity, as_semver

__all__ = ["compare_to", "is_greater_than", "is_less_than"]


def _compare(value: Any, other: Any, function: str) -> int:
    # Mixing a quantity and a version is Kubernetes' "no such overload".
    left_q, right_q = as_quantity(value), as_quantity(other)
    if left_q is not None and right_q is not None:
        return (left_q > right_q) - (left_q < right_q)
    left_v, right_v = as_semver(value), as_semver(other)
    if left_v is not None and right_v is not None:
        return left_v.compare(right_v)
    raise FunctionFailed(f"no such overload: {function} needs two quantities or two versions")


def is_greater_than(value: Any, other: Any) -> bool:
    return _compare(value, other, "isGreaterThan") == 1


def is_less_than(value: Any, other: Any) -> bool:
    return _compare(value, other, "isLessThan") == -1


def compare_to(value: Any, other: Any) -> int:
    return _compare(value, other, "compareTo")
