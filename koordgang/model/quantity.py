"""Kubernetes resource quantities (``100m``, ``1.5``, ``2Gi``, ``129e6``) as exact fractions.

Exact arithmetic matters: ``0.1`` CPU must become exactly 100 millicores, and a binary float
would turn it into 100.000000000000005 and round it up to 101.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from koordgang.model.errors import ModelError, show

__all__ = [
    "QuantityError",
    "QuantityLike",
    "format_quantity",
    "parse_quantity",
    "to_int",
    "to_milli",
]

QuantityLike = str | int | float | Fraction


class QuantityError(ModelError):
    """A value that is not a Kubernetes quantity (or not an acceptable one)."""


_MULTIPLIERS: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}

# The exponent alternative comes first so that "1E3" is 1000 while a lone "1E" is one exa.
_QUANTITY_RE = re.compile(
    r"(?P<sign>[+-]?)(?P<whole>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?:[eE](?P<exp>[+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?))"
)

# Real quantities are short; the caps keep a hostile object from costing seconds of CPU on
# a giant power of ten or a thousand-digit mantissa.
_MAX_TEXT = 64
_MAX_EXPONENT = 100

_SYNTAX_HINT = "expected a number with an optional suffix, e.g. 100m, 1.5, 2Gi, 500M or 129e6"


def parse_quantity(value: QuantityLike) -> Fraction:
    """The exact value of a quantity; raises :class:`QuantityError` naming the value if invalid."""
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {show(value)}: {_SYNTAX_HINT}")
    if isinstance(value, int | Fraction):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {show(value)}: not a finite number")
        # Through repr, so that 0.1 means one tenth and not the nearest binary float.
        return Fraction(repr(value))
    raise QuantityError(f"invalid quantity {show(value)}: {_SYNTAX_HINT}")


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Fraction:
    if len(text) > _MAX_TEXT:
        raise QuantityError(f"invalid quantity {show(text)}: longer than {_MAX_TEXT} characters")
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        raise QuantityError(f"invalid quantity {show(text)}: {_SYNTAX_HINT}")
    whole, frac = match["whole"], match["frac"] or ""
    if not whole and not frac:
        raise QuantityError(f"invalid quantity {show(text)}: {_SYNTAX_HINT}")
    amount = Fraction(int(whole + frac or "0"), 10 ** len(frac))
    if match["sign"] == "-":
        amount = -amount
    exponent = match["exp"]
    if exponent is None:
        return amount * _MULTIPLIERS[match["suffix"]]
    power = int(exponent)
    if abs(power) > _MAX_EXPONENT:
        raise QuantityError(
            f"invalid quantity {show(text)}: exponent {power} is out of range "
            f"(at most {_MAX_EXPONENT} in magnitude)"
        )
    return amount * Fraction(10) ** power


def to_milli(value: QuantityLike) -> int:
    """Thousandths of the value, rounded up (how Kubernetes counts CPU: ``1u`` is 1m)."""
    return math.ceil(parse_quantity(value) * 1000)


def to_int(value: QuantityLike) -> int:
    """The value rounded up to a whole unit (bytes, devices, pods)."""
    return math.ceil(parse_quantity(value))


_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def format_quantity(value: Fraction) -> str:
    """A quantity as Kubernetes writes one: a whole amount with the largest binary (then
    decimal) suffix that divides it (``20Gi``, ``3k``, ``7``), a fraction in thousandths or
    billionths (``1500m``, ``1n``), rounded up to a billionth where it has more digits."""
    if value.denominator == 1:
        whole = value.numerator
        if whole:
            for table in (_BINARY, _DECIMAL):
                for suffix, unit in table:
                    if whole % unit == 0:
                        return f"{whole // unit}{suffix}"
        return str(whole)
    milli = value * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    return f"{math.ceil(value * 10**9)}n"
