"""Inter-pod affinity and anti-affinity: where a pod may go given the pods already placed.

Terms are resolved when parsed: ``matchLabelKeys`` and ``mismatchLabelKeys`` become plain
requirements on the owning pod's label values (as the API server does on create), so matching
never needs the owner's labels again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.model._fields import as_list, as_mapping
from koordgang.model.errors import ModelError, show
from koordgang.model.labels import (
    LabelSelector,
    LabelSelectorRequirement,
    parse_label_selector,
)

__all__ = [
    "PodAffinity",
    "PodAffinityError",
    "PodAffinityTerm",
    "WeightedPodAffinityTerm",
    "parse_pod_affinity",
]

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_MIN_WEIGHT, _MAX_WEIGHT = 1, 100

_EMPTY: Mapping[str, Any] = {}
_NO_LABELS: Mapping[str, str] = _EMPTY


class PodAffinityError(ModelError):
    """A pod (anti-)affinity term that the API server would reject."""


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """Pods matching ``selector`` in the term's namespaces, counted per ``topology_key`` domain.

    A None selector (``labelSelector`` null) matches no pod; an empty one matches every pod.
    With neither ``namespaces`` nor ``namespace_selector`` the term looks only at the owning
    pod's namespace.
    """

    selector: LabelSelector | None
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str

    def __post_init__(self) -> None:
        if not isinstance(self.namespaces, frozenset):
            object.__setattr__(self, "namespaces", frozenset(self.namespaces))
        if not self.topology_key:
            raise PodAffinityError(
                f"must be a non-empty string, got {show(self.topology_key)}", "topologyKey"
            )

    def namespace_matches(
        self,
        pod_namespace_of_term_owner: str,
        candidate_namespace: str,
        namespace_labels: Mapping[str, str] | None,
    ) -> bool:
        """Whether pods in ``candidate_namespace`` (labelled ``namespace_labels``, None when
        unknown) are in the term's scope."""
        namespaces = self.namespaces
        namespace_selector = self.namespace_selector
        if not namespaces and namespace_selector is None:
            return candidate_namespace == pod_namespace_of_term_owner
        if candidate_namespace in namespaces:
            return True
        if namespace_selector is None:
            return False
        # An empty selector matches every namespace, even one whose labels are not known.
        return namespace_selector.matches(
            _NO_LABELS if namespace_labels is None else namespace_labels
        )

    def matches_pod(
        self,
        owner_namespace: str,
        candidate_namespace: str,
        candidate_labels: Mapping[str, str],
        namespace_labels: Mapping[str, str] | None,
    ) -> bool:
        """Whether a pod in ``candidate_namespace`` with ``candidate_labels`` is one the term
        (of a pod in ``owner_namespace``) refers to."""
        selector = self.selector
        if selector is None:
            return False
        return self.namespace_matches(
            owner_namespace, candidate_namespace, namespace_labels
        ) and selector.matches(candidate_labels)


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    """A preferred term: ``weight`` (1 to 100) is added to a node's score where it holds."""

    weight: int
    term: PodAffinityTerm

    def __post_init__(self) -> None:
        _check_weight(self.weight)


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """A pod's ``podAffinity`` and ``podAntiAffinity`` terms, required and preferred."""

    required_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()

    @property
    def has_preferred(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


def _check_weight(weight: object) -> None:
    if type(weight) is not int or not _MIN_WEIGHT <= weight <= _MAX_WEIGHT:
        raise PodAffinityError(
            f"must be an integer from {_MIN_WEIGHT} to {_MAX_WEIGHT}, got {show(weight)}",
            "weight",
        )


def _list(raw: Any, path: str) -> list[Any]:
    return as_list(raw, path, PodAffinityError)


def _mapping(raw: Any, path: str) -> Mapping[str, Any]:
    return as_mapping(raw, path, PodAffinityError, none_is_empty=True)


def _strings(parent: Mapping[str, Any], key: str, path: str) -> list[str]:
    values = _list(parent.get(key), f"{path}.{key}")
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise PodAffinityError(f"must be a string, got {show(value)}", f"{path}.{key}[{index}]")
    return values


def _selector(parent: Mapping[str, Any], key: str, path: str) -> LabelSelector | None:
    try:
        return parse_label_selector(parent.get(key))
    except ModelError as err:
        raise err.at(f"{path}.{key}") from None


def _parse_term(raw: Any, path: str, pod_labels: Mapping[str, str]) -> PodAffinityTerm:
    term = _mapping(raw, path)
    selector = _selector(term, "labelSelector", path)
    namespaces = _strings(term, "namespaces", path)
    namespace_selector = _selector(term, "namespaceSelector", path)
    topology_key = term.get("topologyKey")
    if not isinstance(topology_key, str):
        raise PodAffinityError(
            f"must be a non-empty string, got {show(topology_key)}", f"{path}.topologyKey"
        )
    match_keys = _strings(term, "matchLabelKeys", path)
    mismatch_keys = _strings(term, "mismatchLabelKeys", path)
    # A null selector stays null: the API server rejects label keys without a selector, and
    # narrowing "matches nothing" cannot make it match anything.
    if selector is not None and (match_keys or mismatch_keys):
        extra = [
            LabelSelectorRequirement(key, "In", (pod_labels[key],))
            for key in match_keys
            if key in pod_labels
        ]
        extra.extend(
            LabelSelectorRequirement(key, "NotIn", (pod_labels[key],))
            for key in mismatch_keys
            if key in pod_labels
        )
        if extra:
            selector = selector.with_requirements(extra)
    try:
        return PodAffinityTerm(selector, frozenset(namespaces), namespace_selector, topology_key)
    except PodAffinityError as err:
        raise err.at(path) from None


def _parse_weighted(raw: Any, path: str, pod_labels: Mapping[str, str]) -> WeightedPodAffinityTerm:
    item = _mapping(raw, path)
    weight: Any = item.get("weight")
    try:
        _check_weight(weight)
    except PodAffinityError as err:
        raise err.at(path) from None
    term = _parse_term(item.get("podAffinityTerm"), f"{path}.podAffinityTerm", pod_labels)
    return WeightedPodAffinityTerm(weight, term)


def _parse_kind(
    affinity: Mapping[str, Any], kind: str, pod_labels: Mapping[str, str]
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    path = f"spec.affinity.{kind}"
    raw = _mapping(affinity.get(kind), path)
    if not raw:
        return (), ()
    required = tuple(
        _parse_term(item, f"{path}.{_REQUIRED}[{index}]", pod_labels)
        for index, item in enumerate(_list(raw.get(_REQUIRED), f"{path}.{_REQUIRED}"))
    )
    preferred = tuple(
        _parse_weighted(item, f"{path}.{_PREFERRED}[{index}]", pod_labels)
        for index, item in enumerate(_list(raw.get(_PREFERRED), f"{path}.{_PREFERRED}"))
    )
    return required, preferred


def parse_pod_affinity(
    spec: Mapping[str, Any], pod_labels: Mapping[str, str]
) -> PodAffinity | None:
    """``spec.affinity.podAffinity`` and ``podAntiAffinity`` of a pod labelled ``pod_labels``,
    or None when there is no term at all (most pods: they then cost nothing).

    Raises :class:`PodAffinityError` (:class:`LabelSelectorError` for a selector) with a path
    under ``spec.affinity``.
    """
    raw = spec.get("affinity")
    if raw is None:
        return None
    affinity = _mapping(raw, "spec.affinity")
    required_affinity, preferred_affinity = _parse_kind(affinity, "podAffinity", pod_labels)
    required_anti, preferred_anti = _parse_kind(affinity, "podAntiAffinity", pod_labels)
    if not (required_affinity or preferred_affinity or required_anti or preferred_anti):
        return None
    return PodAffinity(required_affinity, preferred_affinity, required_anti, preferred_anti)
