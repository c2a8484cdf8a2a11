"""Label selectors (``metav1.LabelSelector``): which pods or namespaces a term refers to, by label.

Unlike a node selector term, an empty label selector matches everything; a missing (null) one is
kept apart as None, because what it means is up to the field holding it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model._fields import as_list, as_mapping
from koordgang.model.errors import ModelError, show

__all__ = [
    "LABEL_OPERATORS",
    "LabelSelector",
    "LabelSelectorError",
    "LabelSelectorRequirement",
    "parse_label_selector",
]

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
LABEL_OPERATORS: tuple[str, ...] = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)

_CODES = {op: code for code, op in enumerate(LABEL_OPERATORS)}
_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST = range(4)


class LabelSelectorError(ModelError):
    """A label selector that the API server would reject (unknown operator, bad values)."""


@dataclass(frozen=True, slots=True)
class LabelSelectorRequirement:
    """``key operator values``; NotIn and DoesNotExist match an object without the label."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    _code: int = field(init=False, repr=False, compare=False)
    _value_set: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        code = _CODES.get(self.operator)
        if code is None:
            raise LabelSelectorError(
                f"unknown operator {show(self.operator)} "
                f"(expected one of {', '.join(LABEL_OPERATORS)})",
                "operator",
            )
        values = self.values
        if not isinstance(values, tuple):
            values = tuple(values)
            object.__setattr__(self, "values", values)
        if code in (_IN, _NOT_IN):
            if not values:
                raise LabelSelectorError(
                    f"must not be empty for operator {self.operator}", "values"
                )
        elif values:
            raise LabelSelectorError(
                f"must be empty for operator {self.operator}, got {show(list(values))}", "values"
            )
        object.__setattr__(self, "_code", code)
        object.__setattr__(self, "_value_set", frozenset(values))

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        code = self._code
        if code == _IN:
            return value is not None and value in self._value_set
        if code == _NOT_IN:
            return value is None or value not in self._value_set
        if code == _EXISTS:
            return value is not None
        return value is None


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """``matchLabels`` and ``matchExpressions``, which must all hold; an empty selector matches
    every label set. ``match_labels`` is kept sorted, so equal selectors compare and hash equal
    whatever the order they were written in."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "match_labels", tuple(sorted(self.match_labels)))
        if not isinstance(self.match_expressions, tuple):
            object.__setattr__(self, "match_expressions", tuple(self.match_expressions))
        # Cached: selectors key the per-selector pod counts of the affinity and spread plugins.
        object.__setattr__(self, "_hash", hash((self.match_labels, self.match_expressions)))

    def __hash__(self) -> int:
        return self._hash

    def matches(self, labels: Mapping[str, str]) -> bool:
        # Plain loops: this runs per pod per node in the affinity and spread plugins.
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for requirement in self.match_expressions:  # noqa: SIM110
            if not requirement.matches(labels):
                return False
        return True

    def with_requirements(self, extra: Iterable[LabelSelectorRequirement]) -> LabelSelector:
        """This selector narrowed by ``extra`` (how matchLabelKeys are merged in)."""
        return LabelSelector(self.match_labels, (*self.match_expressions, *extra))


def _list(raw: Any, path: str) -> list[Any]:
    return as_list(raw, path, LabelSelectorError)


def _mapping(raw: Any, path: str) -> Mapping[str, Any]:
    return as_mapping(raw, path, LabelSelectorError)


def _parse_requirement(raw: Any, path: str) -> LabelSelectorRequirement:
    item = _mapping(raw, path)
    key = item.get("key")
    if not isinstance(key, str) or not key:
        raise LabelSelectorError(f"must be a non-empty string, got {show(key)}", f"{path}.key")
    operator = item.get("operator")
    if not isinstance(operator, str):
        raise LabelSelectorError(
            f"must be one of {', '.join(LABEL_OPERATORS)}, got {show(operator)}",
            f"{path}.operator",
        )
    values = _list(item.get("values"), f"{path}.values")
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise LabelSelectorError(
                f"must be a string, got {show(value)}", f"{path}.values[{index}]"
            )
    try:
        return LabelSelectorRequirement(key, operator, tuple(values))
    except LabelSelectorError as err:
        raise err.at(path) from None


def parse_label_selector(raw: Any) -> LabelSelector | None:
    """A ``LabelSelector`` object, or None when it is null or absent; raises
    :class:`LabelSelectorError` with the path of the offending field."""
    if raw is None:
        return None
    selector = _mapping(raw, "")
    raw_labels = selector.get("matchLabels")
    match_labels = _mapping(raw_labels, "matchLabels") if raw_labels is not None else {}
    for key, value in match_labels.items():
        if not isinstance(value, str):
            raise LabelSelectorError(f"expected a string, got {show(value)}", f"matchLabels[{key}]")
    expressions = tuple(
        _parse_requirement(item, f"matchExpressions[{index}]")
        for index, item in enumerate(_list(selector.get("matchExpressions"), "matchExpressions"))
    )
    return LabelSelector(tuple(match_labels.items()), expressions)
