"""Kubernetes' Quantity and Semver values, as device selectors see them.

Both are exact: a quantity is a :class:`~fractions.Fraction`, a version a tuple of integers and
pre-release identifiers. Inside a CEL evaluation they travel as *tagged maps*
(``{"kubernetes.Quantity": "3/2"}``, ``{"kubernetes.Semver": "1.2.3-rc.1"}``), because the CEL
library cannot carry Python objects of its own types (see docs/decisions/cel.md). The tag's
text is canonical, so CEL's map equality is Kubernetes' equality: ``quantity("1Gi") ==
quantity("1024Mi")`` and two versions that differ only in build metadata are equal.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from koordgang.model.errors import show
from koordgang.model.quantity import parse_quantity

__all__ = [
    "QUANTITY_TAG",
    "SEMVER_TAG",
    "Semver",
    "SemverError",
    "as_quantity",
    "as_semver",
    "normalize_semver",
    "parse_k8s_quantity",
    "parse_semver",
    "quantity_approximate_float",
    "quantity_as_int64",
    "quantity_value",
    "semver_value",
]

QUANTITY_TAG = "kubernetes.Quantity"
SEMVER_TAG = "kubernetes.Semver"

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1
_NANO = 10**9


class SemverError(ValueError):
    """Text that is not a semantic version; the message is blang/semver's wording."""


# --- quantities -------------------------------------------------------------------------


def parse_k8s_quantity(text: str) -> Fraction:
    """The value Kubernetes' ``resource.ParseQuantity`` gives ``text``; raises QuantityError.

    Beyond the syntax (shared with the rest of koordgang) Kubernetes keeps no precision below
    one nano: a finer value is rounded away from zero to the next nano ("0.1n" is 1n). A value
    with a binary suffix is capped at the largest int64 ("16Ei").
    """
    value = parse_quantity(text)
    magnitude = abs(value)
    if (magnitude * _NANO).denominator != 1:
        magnitude = Fraction(math.ceil(magnitude * _NANO), _NANO)
    if text.endswith("i") and magnitude > INT64_MAX:
        magnitude = Fraction(INT64_MAX)
    return magnitude if value >= 0 else -magnitude


def quantity_value(amount: Fraction) -> dict[str, str]:
    """The CEL form of a quantity: a one-key map whose text is the exact fraction."""
    return {QUANTITY_TAG: str(amount)}


def as_quantity(value: Any) -> Fraction | None:
    """The quantity that a CEL argument carries, or None if it is not one."""
    if isinstance(value, dict) and len(value) == 1:
        text = value.get(QUANTITY_TAG)
        if isinstance(text, str):
            return _fraction(text)
    return None


@lru_cache(maxsize=4096)
def _fraction(text: str) -> Fraction:
    return Fraction(text)


def quantity_as_int64(amount: Fraction) -> int | None:
    """The quantity as an int64, or None when it has a fraction or does not fit (AsInt64)."""
    if amount.denominator != 1 or not INT64_MIN <= amount.numerator <= INT64_MAX:
        return None
    return amount.numerator


def quantity_approximate_float(amount: Fraction) -> float:
    """The nearest double; infinities past the double range, as Go's conversion gives."""
    try:
        return float(amount)
    except OverflowError:
        return math.inf if amount > 0 else -math.inf


# --- semantic versions ------------------------------------------------------------------

_DIGITS = re.compile(r"[0-9]+")
_IDENTIFIER = re.compile(r"[0-9A-Za-z-]+")


@dataclass(frozen=True, slots=True)
class Semver:
    """A version as github.com/blang/semver parses it; build metadata is not kept (it never
    takes part in a comparison, and no selector function can read it)."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1, by semver 2.0.0 precedence."""
        for mine, theirs in (
            (self.major, other.major),
            (self.minor, other.minor),
            (self.patch, other.patch),
        ):
            if mine != theirs:
                return 1 if mine > theirs else -1
        # A version without a pre-release ranks above the same version with one.
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for mine_id, theirs_id in zip(self.pre, other.pre, strict=False):
            order = _compare_identifiers(mine_id, theirs_id)
            if order:
                return order
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __str__(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            return core + "-" + ".".join(str(part) for part in self.pre)
        return core


def _compare_identifiers(mine: int | str, theirs: int | str) -> int:
    # Numeric identifiers rank below alphanumeric ones; like kinds compare by value / bytes.
    if isinstance(mine, int) and isinstance(theirs, int):
        return (mine > theirs) - (mine < theirs)
    if isinstance(mine, int):
        return -1
    if isinstance(theirs, int):
        return 1
    return (mine > theirs) - (mine < theirs)


def parse_semver(text: str) -> Semver:
    """Strict MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]; raises SemverError with blang's words."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest = parts[2]
    cut = min((i for i in (rest.find("-"), rest.find("+")) if i >= 0), default=len(rest))
    patch = _number(rest[:cut], "patch")
    rest = rest[cut:]
    plus = rest.find("+")
    if plus >= 0:
        for build in rest[plus + 1 :].split("."):
            if not build:
                raise SemverError("Build meta data can not be empty")
            if not _IDENTIFIER.fullmatch(build):
                raise SemverError(f"Invalid character(s) found in build meta data {show(build)}")
        rest = rest[:plus]
    pre: list[int | str] = []
    if rest:
        # ``rest`` starts with "-": what the patch number was cut at.
        for identifier in rest[1:].split("."):
            pre.append(_prerelease_identifier(identifier))
    return Semver(major, minor, patch, tuple(pre))


def _number(text: str, what: str) -> int:
    if not _DIGITS.fullmatch(text):
        raise SemverError(f"Invalid character(s) found in {what} number {show(text)}")
    if len(text) > 1 and text[0] == "0":
        raise SemverError(
            f"{what.capitalize()} number must not contain leading zeroes {show(text)}"
        )
    value = int(text)
    if value > _UINT64_MAX:
        raise SemverError(f"{what.capitalize()} number {show(text)} is out of range")
    return value


def _prerelease_identifier(text: str) -> int | str:
    if not text:
        raise SemverError("Prerelease is empty")
    if not _IDENTIFIER.fullmatch(text):
        raise SemverError(f"Invalid character(s) found in prerelease {show(text)}")
    if not _DIGITS.fullmatch(text):
        return text
    if len(text) > 1 and text[0] == "0":
        raise SemverError(
            f"Numeric PreRelease version must not contain leading zeroes {show(text)}"
        )
    value = int(text)
    if value > _UINT64_MAX:
        raise SemverError(f"Numeric PreRelease version {show(text)} is out of range")
    return value


def normalize_semver(text: str) -> Semver:
    """Kubernetes' lenient parse (``semver(s, true)``): a "v" prefix, leading zeros and a
    missing minor or patch number are forgiven, then the strict parse applies."""
    parts = text.removeprefix("v").split(".", 2)
    for index, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or not part[0].isdigit():
                part = "0" + part
            parts[index] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse_semver(".".join(parts))


def semver_value(version: Semver) -> dict[str, str]:
    """The CEL form of a version: a one-key map whose text is canonical (no build)."""
    return {SEMVER_TAG: str(version)}


def as_semver(value: Any) -> Semver | None:
    """The version that a CEL argument carries, or None if it is not one."""
    if isinstance(value, dict) and len(value) == 1:
        text = value.get(SEMVER_TAG)
        if isinstance(text, str):
            return _cached_semver(text)
    return None


@lru_cache(maxsize=4096)
def _cached_semver(text: str) -> Semver:
    return parse_semver(text)
