"""Typed reads of JSON fields shared by the pod and node parsers.

Each reader takes the path of the field, so that a wrong type becomes a one-line error naming
the field rather than an AttributeError deep in the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.model.errors import ModelError, show
from koordgang.model.time import parse_rfc3339

_EMPTY: Mapping[str, Any] = {}


def as_list(raw: Any, path: str, error: type[ModelError] = ModelError) -> list[Any]:
    """``raw`` as a list (None is empty); ``error`` names the parser that refuses it."""
    if type(raw) is list:
        return raw
    if raw is None:
        return []
    if not isinstance(raw, list | tuple):
        raise error(f"expected a list, got {show(raw)}", path)
    return list(raw)


def as_mapping(
    raw: Any, path: str, error: type[ModelError] = ModelError, *, none_is_empty: bool = False
) -> Mapping[str, Any]:
    """``raw`` as an object; None is refused unless ``none_is_empty``."""
    if type(raw) is dict:  # the common case, without the cost of an ABC check
        return raw
    if raw is None and none_is_empty:
        return _EMPTY
    if not isinstance(raw, Mapping):
        raise error(f"expected an object, got {show(raw)}", path)
    return raw


def mapping(parent: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = parent.get(key)
    if type(value) is dict:  # the common case, without the cost of an ABC check
        return value
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise ModelError(f"expected an object, got {show(value)}", path)
    return value


def items(parent: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = parent.get(key)
    if type(value) is list:
        return value
    if value is None:
        return []
    if not isinstance(value, tuple):
        raise ModelError(f"expected a list, got {show(value)}", path)
    return list(value)


def string(parent: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
    value = parent.get(key)
    if type(value) is str:
        return value
    if value is None:
        return default
    if not isinstance(value, str):
        raise ModelError(f"expected a string, got {show(value)}", path)
    return value


def integer(parent: Mapping[str, Any], key: str, path: str, default: int = 0) -> int:
    value = parent.get(key)
    if value is None:
        return default
    if type(value) is not int:
        raise ModelError(f"expected an integer, got {show(value)}", path)
    return value


def string_map(parent: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    raw = mapping(parent, key, path)
    result: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(value, str):
            raise ModelError(f"expected a string, got {show(value)}", f"{path}[{name}]")
        result[name] = value
    return result


def timestamp(parent: Mapping[str, Any], key: str, path: str) -> float | None:
    value = parent.get(key)
    if value is None:
        return None
    try:
        return parse_rfc3339(value)
    except ModelError as err:
        raise ModelError(err.detail, path) from None
