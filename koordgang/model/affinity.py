"""Node affinity and ``nodeSelector``: which nodes a pod may run on (or prefers), by label.

Requirements are validated when built (as the API server would validate them), so that
matching in the scheduler's loops never has to deal with a malformed one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model._fields import as_list, as_mapping
from koordgang.model.errors import ModelError, show

__all__ = [
    "OPERATORS",
    "AffinityError",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PreferredSchedulingTerm",
    "node_matches",
    "parse_node_selector",
    "parse_preferred_terms",
]

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"
OPERATORS: tuple[str, ...] = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)

#: The only field a matchFields requirement may name.
FIELD_NODE_NAME = "metadata.name"

_CODES = {op: code for code, op in enumerate(OPERATORS)}
_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST, _GT, _LT = range(6)

# Go's strconv.ParseInt(s, 10, 64): optional sign, ASCII digits only (no spaces, no "_").
_INT64_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MIN_WEIGHT, _MAX_WEIGHT = 1, 100


class AffinityError(ModelError):
    """A node selector that the API server would reject (unknown operator, bad values)."""


def _parse_int64(text: str) -> int | None:
    if len(text) > 20 or _INT64_RE.fullmatch(text) is None:
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    """``key operator values``, e.g. ``zone In (a, b)`` or ``gpu-count Gt (3)``.

    In, NotIn, Exists and DoesNotExist follow label-selector rules (NotIn and DoesNotExist
    match a node without the label). Gt and Lt need the label to hold an integer; a label
    that is missing or not an integer does not match.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()
    _code: int = field(init=False, repr=False, compare=False)
    _value_set: frozenset[str] = field(init=False, repr=False, compare=False)
    _bound: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        code = _CODES.get(self.operator)
        if code is None:
            raise AffinityError(
                f"unknown operator {show(self.operator)} (expected one of {', '.join(OPERATORS)})",
                "operator",
            )
        values = self.values
        if not isinstance(values, tuple):
            values = tuple(values)
            object.__setattr__(self, "values", values)
        bound = 0
        if code in (_IN, _NOT_IN):
            if not values:
                raise AffinityError(f"must not be empty for operator {self.operator}", "values")
        elif code in (_EXISTS, _DOES_NOT_EXIST):
            if values:
                raise AffinityError(
                    f"must be empty for operator {self.operator}, got {show(list(values))}",
                    "values",
                )
        else:
            parsed = _parse_int64(values[0]) if len(values) == 1 else None
            if parsed is None:
                raise AffinityError(
                    f"must be a single integer for operator {self.operator}, "
                    f"got {show(list(values))}",
                    "values",
                )
            bound = parsed
        object.__setattr__(self, "_code", code)
        object.__setattr__(self, "_value_set", frozenset(values))
        object.__setattr__(self, "_bound", bound)

    def matches(self, labels: Mapping[str, str]) -> bool:
        return self.matches_value(labels.get(self.key))

    def matches_value(self, value: str | None) -> bool:
        """Whether a label (or field) with this value, None when absent, satisfies it."""
        code = self._code
        if code == _IN:
            return value is not None and value in self._value_set
        if code == _NOT_IN:
            return value is None or value not in self._value_set
        if code == _EXISTS:
            return value is not None
        if code == _DOES_NOT_EXIST:
            return value is None
        number = None if value is None else _parse_int64(value)
        if number is None:
            return False
        return number > self._bound if code == _GT else number < self._bound


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements that must all hold. A term with none matches no node, as in Kubernetes.

    ``match_fields`` may only name ``metadata.name``, with In or NotIn and exactly one value.
    """

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.match_expressions, tuple):
            object.__setattr__(self, "match_expressions", tuple(self.match_expressions))
        if not isinstance(self.match_fields, tuple):
            object.__setattr__(self, "match_fields", tuple(self.match_fields))
        for index, requirement in enumerate(self.match_fields):
            path = f"matchFields[{index}]"
            if requirement.key != FIELD_NODE_NAME:
                raise AffinityError(
                    f"unsupported field {show(requirement.key)} (only {FIELD_NODE_NAME} is)",
                    f"{path}.key",
                )
            if requirement.operator not in (IN, NOT_IN):
                raise AffinityError(
                    f"operator {requirement.operator} is not supported for node fields "
                    f"(use In or NotIn)",
                    f"{path}.operator",
                )
            if len(requirement.values) != 1:
                raise AffinityError(
                    f"must hold exactly one node name, got {show(list(requirement.values))}",
                    f"{path}.values",
                )

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False
        for requirement in self.match_expressions:
            if not requirement.matches_value(labels.get(requirement.key)):
                return False
        # Plain loops rather than all()/any() here and below: these run per node per pod shape,
        # and a generator costs more than the comparisons it wraps.
        for requirement in self.match_fields:  # noqa: SIM110
            if not requirement.matches_value(node_name):
                return False
        return True


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Terms of which at least one must match; with no terms, no node matches."""

    terms: tuple[NodeSelectorTerm, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.terms, tuple):
            object.__setattr__(self, "terms", tuple(self.terms))

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        for term in self.terms:  # noqa: SIM110
            if term.matches(node_name, labels):
                return True
        return False


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    """A preferred node affinity term: ``weight`` (1 to 100) is added to the score of every
    node ``term`` matches (an empty term matches none)."""

    weight: int
    term: NodeSelectorTerm

    def __post_init__(self) -> None:
        weight: object = self.weight
        if type(weight) is not int or not _MIN_WEIGHT <= weight <= _MAX_WEIGHT:
            raise AffinityError(
                f"must be an integer from {_MIN_WEIGHT} to {_MAX_WEIGHT}, got {show(weight)}",
                "weight",
            )


def node_matches(
    node_name: str,
    node_labels: Mapping[str, str],
    node_selector: Mapping[str, str],
    required: NodeSelector | None,
) -> bool:
    """Whether a node passes both the pod's ``nodeSelector`` and its required node affinity."""
    for key, value in node_selector.items():
        if node_labels.get(key) != value:
            return False
    return required is None or required.matches(node_name, node_labels)


def _list(raw: Any, path: str) -> list[Any]:
    return as_list(raw, path, AffinityError)


def _mapping(raw: Any, path: str) -> Mapping[str, Any]:
    return as_mapping(raw, path, AffinityError)


def _parse_requirement(raw: Any, path: str) -> NodeSelectorRequirement:
    item = _mapping(raw, path)
    key = item.get("key")
    if not isinstance(key, str) or not key:
        raise AffinityError(f"must be a non-empty string, got {show(key)}", f"{path}.key")
    operator = item.get("operator")
    if not isinstance(operator, str):
        raise AffinityError(
            f"must be one of {', '.join(OPERATORS)}, got {show(operator)}", f"{path}.operator"
        )
    values = _list(item.get("values"), f"{path}.values")
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise AffinityError(f"must be a string, got {show(value)}", f"{path}.values[{index}]")
    try:
        return NodeSelectorRequirement(key, operator, tuple(values))
    except AffinityError as err:
        raise err.at(path) from None


def _parse_term(raw: Any, path: str) -> NodeSelectorTerm:
    term = _mapping(raw, path)
    expressions = tuple(
        _parse_requirement(item, f"{path}.matchExpressions[{i}]")
        for i, item in enumerate(_list(term.get("matchExpressions"), f"{path}.matchExpressions"))
    )
    fields = tuple(
        _parse_requirement(item, f"{path}.matchFields[{i}]")
        for i, item in enumerate(_list(term.get("matchFields"), f"{path}.matchFields"))
    )
    try:
        return NodeSelectorTerm(expressions, fields)
    except AffinityError as err:
        raise err.at(path) from None


def parse_node_selector(raw: Mapping[str, Any]) -> NodeSelector:
    """A ``NodeSelector`` object (``{"nodeSelectorTerms": [...]}``), as found under
    ``requiredDuringSchedulingIgnoredDuringExecution``; raises :class:`AffinityError` with
    the path of the offending field."""
    selector = _mapping(raw, "")
    return NodeSelector(
        tuple(
            _parse_term(item, f"nodeSelectorTerms[{index}]")
            for index, item in enumerate(
                _list(selector.get("nodeSelectorTerms"), "nodeSelectorTerms")
            )
        )
    )


def parse_preferred_terms(raw: Any) -> tuple[PreferredSchedulingTerm, ...]:
    """The list under ``nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution`` (or
    None); raises :class:`AffinityError` with the path of the offending field."""
    terms = []
    for index, raw_item in enumerate(_list(raw, "")):
        path = f"[{index}]"
        item = _mapping(raw_item, path)
        preference = item.get("preference")
        weight: Any = item.get("weight")  # checked by PreferredSchedulingTerm
        # A missing preference is an empty term, which matches no node.
        term = (
            NodeSelectorTerm()
            if preference is None
            else _parse_term(preference, f"{path}.preference")
        )
        try:
            terms.append(PreferredSchedulingTerm(weight, term))
        except AffinityError as err:
            raise err.at(path) from None
    return tuple(terms)
