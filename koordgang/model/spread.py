"""Pod topology spread constraints: how evenly matching pods must spread over topology domains.

Constraints are validated when built (as the API server validates them) and ``matchLabelKeys``
is merged into the selector when parsed, so the spread plugin only ever counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.model._fields import as_list
from koordgang.model.errors import ModelError, show
from koordgang.model.labels import LabelSelector, LabelSelectorRequirement, parse_label_selector

__all__ = [
    "DO_NOT_SCHEDULE",
    "HONOR",
    "IGNORE",
    "SCHEDULE_ANYWAY",
    "SpreadConstraintError",
    "TopologySpreadConstraint",
    "parse_spread_constraints",
]

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

_WHEN_UNSATISFIABLE = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
_POLICIES = (HONOR, IGNORE)
_PATH = "spec.topologySpreadConstraints"


class SpreadConstraintError(ModelError):
    """A topology spread constraint that the API server would reject."""


def _at_least_one(value: object) -> bool:
    return type(value) is int and value >= 1


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """Pods matching ``selector`` (None matches no pod) may differ by at most ``max_skew``
    between the domains of ``topology_key``.

    ``node_affinity_policy`` Honor counts only nodes the incoming pod's node selector and
    required affinity accept; ``node_taints_policy`` Honor counts only nodes whose taints it
    tolerates. ``min_domains`` (DoNotSchedule only) treats fewer domains as a global minimum
    of zero.
    """

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector | None
    min_domains: int | None = None
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def __post_init__(self) -> None:
        if not _at_least_one(self.max_skew):
            raise SpreadConstraintError(
                f"must be an integer of at least 1, got {show(self.max_skew)}", "maxSkew"
            )
        if not isinstance(self.topology_key, str) or not self.topology_key:
            raise SpreadConstraintError(
                f"must be a non-empty string, got {show(self.topology_key)}", "topologyKey"
            )
        if self.when_unsatisfiable not in _WHEN_UNSATISFIABLE:
            raise SpreadConstraintError(
                f"must be one of {', '.join(_WHEN_UNSATISFIABLE)}, "
                f"got {show(self.when_unsatisfiable)}",
                "whenUnsatisfiable",
            )
        if self.min_domains is not None:
            if not _at_least_one(self.min_domains):
                raise SpreadConstraintError(
                    f"must be an integer of at least 1, got {show(self.min_domains)}",
                    "minDomains",
                )
            if self.when_unsatisfiable != DO_NOT_SCHEDULE:
                raise SpreadConstraintError(
                    f"may only be set when whenUnsatisfiable is {DO_NOT_SCHEDULE}, "
                    f"not {self.when_unsatisfiable}",
                    "minDomains",
                )
        for name, value in (
            ("nodeAffinityPolicy", self.node_affinity_policy),
            ("nodeTaintsPolicy", self.node_taints_policy),
        ):
            if value not in _POLICIES:
                raise SpreadConstraintError(
                    f"must be one of {', '.join(_POLICIES)}, got {show(value)}", name
                )


def _list(raw: Any, path: str) -> list[Any]:
    return as_list(raw, path, SpreadConstraintError)


def _parse_constraint(
    raw: Any, path: str, pod_labels: Mapping[str, str]
) -> TopologySpreadConstraint:
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise SpreadConstraintError(f"expected an object, got {show(raw)}", path)
    try:
        selector = parse_label_selector(raw.get("labelSelector"))
    except ModelError as err:
        raise err.at(f"{path}.labelSelector") from None
    keys = _list(raw.get("matchLabelKeys"), f"{path}.matchLabelKeys")
    extra = []
    for index, key in enumerate(keys):
        if not isinstance(key, str):
            raise SpreadConstraintError(
                f"must be a string, got {show(key)}", f"{path}.matchLabelKeys[{index}]"
            )
        # Keys the pod does not carry are ignored, as kube-scheduler does.
        value = pod_labels.get(key)
        if value is not None:
            extra.append(LabelSelectorRequirement(key, "In", (value,)))
    if extra:
        selector = (selector or LabelSelector()).with_requirements(extra)
    # The constraint checks the values' types itself, with the same messages.
    max_skew: Any = raw.get("maxSkew")
    topology_key: Any = raw.get("topologyKey")
    when_unsatisfiable: Any = raw.get("whenUnsatisfiable")
    affinity_policy = raw.get("nodeAffinityPolicy")
    taints_policy = raw.get("nodeTaintsPolicy")
    try:
        return TopologySpreadConstraint(
            max_skew=max_skew,
            topology_key=topology_key,
            when_unsatisfiable=when_unsatisfiable,
            selector=selector,
            min_domains=raw.get("minDomains"),
            node_affinity_policy=HONOR if affinity_policy is None else affinity_policy,
            node_taints_policy=IGNORE if taints_policy is None else taints_policy,
        )
    except SpreadConstraintError as err:
        raise err.at(path) from None


def parse_spread_constraints(
    spec: Mapping[str, Any], pod_labels: Mapping[str, str]
) -> tuple[TopologySpreadConstraint, ...]:
    """``spec.topologySpreadConstraints`` of a pod labelled ``pod_labels``, with each
    ``matchLabelKeys`` merged into its selector; raises :class:`SpreadConstraintError`
    (:class:`LabelSelectorError` for a selector) with a path under ``spec``."""
    raw = spec.get("topologySpreadConstraints")
    if raw is None:
        return ()
    return tuple(
        _parse_constraint(item, f"{_PATH}[{index}]", pod_labels)
        for index, item in enumerate(_list(raw, _PATH))
    )
