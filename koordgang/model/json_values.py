"""Lenient reads of JSON values as users write them in annotations and group objects.

Nothing here raises: a value of the wrong type reads as empty (or None), so that the caller can
say what is wrong with it in its own terms (a :class:`~koordgang.model.gang.ConfigIssue`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["BIG", "int_text", "json_int", "mapping", "nonblank", "shown", "string"]


def nonblank(value: str | None) -> str | None:
    """``value`` stripped, or None when it is missing or blank (a blank name names nothing)."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def string(value: Any) -> str:
    """``value`` if it is a string, else ""."""
    return value if isinstance(value, str) else ""


def json_int(value: Any) -> int | None:
    """An integer as JSON gives it (not a bool, not a fraction); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def shown(value: Any) -> str:
    """A JSON value as the user wrote it: a string as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


_INT_RE = re.compile(r"[+-]?[0-9]+")
#: Beyond any limit here; stands in for numbers with absurdly many digits.
BIG = 10**19


def int_text(text: str) -> int | None:
    """A decimal integer with optional sign, surrounding whitespace allowed; None otherwise."""
    text = text.strip()
    if _INT_RE.fullmatch(text) is None:
        return None
    if len(text) > 20:
        return -BIG if text[0] == "-" else BIG
    return int(text)
