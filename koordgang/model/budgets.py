"""PodDisruptionBudgets, as far as preemption needs them: which pods a budget covers, and how
many more of them may be disrupted now (``status.disruptionsAllowed``, kept by the
disruption controller)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.model import _fields
from koordgang.model.errors import ModelError
from koordgang.model.labels import LabelSelector, parse_label_selector

__all__ = ["BudgetInfo", "parse_budget"]


@dataclass(frozen=True, slots=True)
class BudgetInfo:
    namespace: str
    name: str
    #: None selects nothing; an empty selector selects every pod of the namespace.
    selector: LabelSelector | None
    disruptions_allowed: int

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def covers(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return (
            namespace == self.namespace
            and self.selector is not None
            and self.selector.matches(labels)
        )


def parse_budget(obj: Mapping[str, Any]) -> BudgetInfo:
    """Raises ModelError naming the field when the object is malformed."""
    metadata = _fields.mapping(obj, "metadata", "metadata")
    spec = _fields.mapping(obj, "spec", "spec")
    status = _fields.mapping(obj, "status", "status")
    name = _fields.string(metadata, "name", "metadata.name")
    if not name:
        raise ModelError("missing", "metadata.name")
    try:
        selector = parse_label_selector(spec.get("selector"))
    except ModelError as error:
        raise error.at("spec.selector") from None
    return BudgetInfo(
        namespace=_fields.string(metadata, "namespace", "metadata.namespace") or "default",
        name=name,
        selector=selector,
        disruptions_allowed=_fields.integer(
            status, "disruptionsAllowed", "status.disruptionsAllowed"
        ),
    )
