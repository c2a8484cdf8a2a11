"""Timestamps (RFC 3339, as the API server writes them) and Go durations (``1h30m``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from koordgang.model.errors import ModelError, show

__all__ = [
    "DurationError",
    "TimestampError",
    "format_rfc3339",
    "parse_go_duration",
    "parse_rfc3339",
]


class TimestampError(ModelError):
    """Not an RFC 3339 timestamp."""


class DurationError(ModelError):
    """Not a Go duration."""


_RFC3339_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)


def format_rfc3339(epoch: float) -> str:
    """``2024-01-02T03:04:05Z`` for seconds since the epoch (whole seconds, as the API server
    writes ``metav1.Time``)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch of ``2024-01-02T03:04:05Z`` (fraction and offset optional)."""
    if not isinstance(text, str):
        raise TimestampError(
            f"invalid timestamp {show(text)}: expected RFC 3339, e.g. 2024-01-02T03:04:05Z"
        )
    return _parse_rfc3339(text)


# Pods of one job are created within the same second or so, so a small cache hits often.
@lru_cache(maxsize=1024)
def _parse_rfc3339(text: str) -> float:
    match = _RFC3339_RE.fullmatch(text)
    if match is None:
        raise TimestampError(
            f"invalid timestamp {show(text)}: expected RFC 3339, e.g. 2024-01-02T03:04:05Z"
        )
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    offset_hours, offset_minutes = (int(match[10]), int(match[11])) if match[9] else (0, 0)
    if offset_hours > 23 or offset_minutes > 59:
        raise TimestampError(f"invalid timestamp {show(text)}: UTC offset out of range")
    offset = timedelta(hours=offset_hours, minutes=offset_minutes)
    if match[9] == "-":
        offset = -offset
    try:
        seconds = (
            datetime(year, month, day, hour, minute, second, tzinfo=UTC) - offset
        ).timestamp()
    except (ValueError, OverflowError) as err:
        raise TimestampError(f"invalid timestamp {show(text)}: {err}") from None
    if match[7]:
        seconds += float("0" + match[7])
    return seconds


_NANOS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_UNIT_NAMES = "ns, us, ms, s, m, h"
_DURATION_PART_RE = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
# Go keeps durations in a signed 64-bit count of nanoseconds (about 292 years).
_MAX_NANOS = 2**63 - 1


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration (``300ms``, ``1.5h``, ``2h45m30.5s``), which may be negative.

    As in Go's ``time.ParseDuration``, every number needs a unit except a lone ``0``, and
    fractions finer than a nanosecond are dropped.
    """
    if not isinstance(text, str):
        raise DurationError(f"invalid duration {show(text)}: expected a string such as 300s")
    rest = text
    negative = False
    if rest[:1] in ("+", "-"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise DurationError(f"invalid duration {show(text)}: expected e.g. 300s, 1h30m or 1.5h")
    nanos = 0
    position = 0
    while position < len(rest):
        match = _DURATION_PART_RE.match(rest, position)
        assert match is not None  # every group may be empty, so it always matches
        whole, frac, unit = match[1], match[2] or "", match[3]
        if not whole and not frac:
            raise DurationError(
                f"invalid duration {show(text)}: expected a number at {show(rest[position:])}"
            )
        if not unit:
            raise DurationError(
                f"invalid duration {show(text)}: the number {show(match[0])} has no unit "
                f"(one of {_UNIT_NAMES}; only a lone 0 may omit it)"
            )
        if len(whole.lstrip("0")) > 19:
            raise DurationError(f"invalid duration {show(text)}: longer than Go can represent")
        # Go stops reading a fraction after about 18 digits; later ones cannot reach a nanosecond.
        frac = frac[:18]
        scale = _NANOS_PER_UNIT.get(unit)
        if scale is None:
            raise DurationError(
                f"invalid duration {show(text)}: unknown unit {show(unit)} (one of {_UNIT_NAMES})"
            )
        nanos += int(whole.lstrip("0") or "0") * scale
        if frac:
            nanos += int(frac) * scale // 10 ** len(frac)
        if nanos > _MAX_NANOS + (1 if negative else 0):
            raise DurationError(f"invalid duration {show(text)}: longer than Go can represent")
        position = match.end()
    return (-nanos if negative else nanos) / 1e9
