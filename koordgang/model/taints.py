"""Node taints and pod tolerations, matched the way kube-scheduler's TaintToleration filter does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from koordgang.model.errors import ModelError, show

__all__ = [
    "EFFECT_NO_EXECUTE",
    "EFFECT_NO_SCHEDULE",
    "EFFECT_PREFER_NO_SCHEDULE",
    "OP_EQUAL",
    "OP_EXISTS",
    "SCHEDULING_EFFECTS",
    "Taint",
    "TaintError",
    "Toleration",
    "first_untolerated",
    "parse_taints",
    "parse_tolerations",
]

EFFECT_NO_SCHEDULE = "NoSchedule"
EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
EFFECT_NO_EXECUTE = "NoExecute"
OP_EQUAL = "Equal"
OP_EXISTS = "Exists"

#: The effects that keep a pod off a node (PreferNoSchedule only lowers the score).
SCHEDULING_EFFECTS: tuple[str, ...] = (EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE)


class TaintError(ModelError):
    """A malformed taint or toleration."""


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod's toleration. An empty ``key`` matches every key and an empty ``effect`` every
    effect; ``Exists`` ignores the value, ``Equal`` requires it to be identical.

    An operator Kubernetes does not know tolerates nothing (the API server rejects such pods,
    so this only guards hand-made objects).
    """

    key: str = ""
    operator: str = OP_EQUAL
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        operator = self.operator
        if operator == OP_EXISTS:
            return True
        if operator == OP_EQUAL or not operator:
            return self.value == taint.value
        return False


def first_untolerated(
    taints: Iterable[Taint],
    tolerations: Sequence[Toleration],
    effects: Sequence[str] = SCHEDULING_EFFECTS,
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates, or None."""
    for taint in taints:
        if taint.effect not in effects:
            continue
        for toleration in tolerations:
            if toleration.tolerates(taint):
                break
        else:
            return taint
    return None


def _string(item: Mapping[str, Any], name: str, path: str) -> str:
    value = item.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TaintError(f"must be a string, got {show(value)}", f"{path}.{name}")
    return value


def _items(raw: Any) -> list[Mapping[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list | tuple):
        raise TaintError(f"expected a list, got {show(raw)}")
    for index, item in enumerate(raw):
        if type(item) is not dict and not isinstance(item, Mapping):
            raise TaintError(f"expected an object, got {show(item)}", f"[{index}]")
    return list(raw)


def parse_taints(raw: Any) -> tuple[Taint, ...]:
    """``node.spec.taints`` (a list, or None) as Taints; raises :class:`TaintError`."""
    taints = []
    for index, item in enumerate(_items(raw)):
        path = f"[{index}]"
        taints.append(
            Taint(
                key=_string(item, "key", path),
                value=_string(item, "value", path),
                effect=_string(item, "effect", path),
            )
        )
    return tuple(taints)


def parse_tolerations(raw: Any) -> tuple[Toleration, ...]:
    """``pod.spec.tolerations`` (a list, or None) as Tolerations; raises :class:`TaintError`.

    A missing operator means ``Equal``, as in the API.
    """
    tolerations = []
    for index, item in enumerate(_items(raw)):
        path = f"[{index}]"
        seconds = item.get("tolerationSeconds")
        if seconds is not None and (type(seconds) is not int):
            raise TaintError(
                f"must be an integer, got {show(seconds)}", f"{path}.tolerationSeconds"
            )
        tolerations.append(
            Toleration(
                key=_string(item, "key", path),
                operator=_string(item, "operator", path) or OP_EQUAL,
                value=_string(item, "value", path),
                effect=_string(item, "effect", path),
                toleration_seconds=seconds,
            )
        )
    return tuple(tolerations)
