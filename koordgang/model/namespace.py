"""Namespaces, as far as the scheduler needs them: their labels (pod affinity terms may select
the namespaces they look at by label)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.model import _fields
from koordgang.model.errors import ModelError

__all__ = ["NamespaceInfo", "parse_namespace"]


@dataclass(frozen=True, slots=True)
class NamespaceInfo:
    name: str
    labels: Mapping[str, str]

    @property
    def key(self) -> str:
        return self.name


def parse_namespace(obj: Mapping[str, Any]) -> NamespaceInfo:
    """Raises ModelError naming the field when the object is malformed."""
    metadata = _fields.mapping(obj, "metadata", "metadata")
    name = _fields.string(metadata, "name", "metadata.name")
    if not name:
        raise ModelError("missing", "metadata.name")
    labels = _fields.mapping(metadata, "labels", "metadata.labels")
    return NamespaceInfo(name, {str(k): str(v) for k, v in labels.items()})
