"""Kubernetes' semver library (k8s.io/apiserver ``pkg/cel/library/semverlib.go``): ``semver``
and ``isSemver`` (with the normalize flag) and the Semver methods ``major``, ``minor`` and
``patch``. The comparisons, shared with quantities, are in ``ordering.py``."""

from __future__ import annotations

from typing import Any

from koordgang.model.cel.errors import FunctionFailed
from koordgang.model.cel.values import (
    INT64_MAX,
    Semver,
    SemverError,
    as_semver,
    normalize_semver,
    parse_semver,
    semver_value,
)

__all__ = ["is_semver", "major", "minor", "patch", "semver"]


def semver(text: str, normalize: bool = False) -> dict[str, str]:
    try:
        return semver_value(normalize_semver(text) if normalize else parse_semver(text))
    except SemverError as exc:
        raise FunctionFailed(str(exc)) from None


def is_semver(text: str, normalize: bool = False) -> bool:
    try:
        normalize_semver(text) if normalize else parse_semver(text)
    except SemverError:
        return False
    return True


def _need_semver(value: Any, function: str) -> Semver:
    version = as_semver(value)
    if version is None:
        raise FunctionFailed(f"no such overload: {function} needs a semver")
    return version


def _int64(number: int) -> int:
    # blang keeps uint64 parts; Kubernetes hands them to CEL as int64.
    if number > INT64_MAX:
        raise FunctionFailed("integer overflow")
    return number


def major(value: Any) -> int:
    return _int64(_need_semver(value, "major").major)


def minor(value: Any) -> int:
    return _int64(_need_semver(value, "minor").minor)


def patch(value: Any) -> int:
    return _int64(_need_semver(value, "patch").patch)
