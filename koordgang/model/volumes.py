"""PersistentVolumeClaims, as far as the scheduler needs them: does the claim exist, and is it
bound to a volume?"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.model import _fields
from koordgang.model.errors import ModelError

__all__ = ["CLAIM_BOUND", "ClaimInfo", "parse_claim"]

CLAIM_BOUND = "Bound"


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    namespace: str
    name: str
    phase: str
    volume_name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def bound(self) -> bool:
        return self.phase == CLAIM_BOUND and bool(self.volume_name)


def parse_claim(obj: Mapping[str, Any]) -> ClaimInfo:
    """Raises ModelError naming the field when the object is malformed."""
    metadata = _fields.mapping(obj, "metadata", "metadata")
    spec = _fields.mapping(obj, "spec", "spec")
    status = _fields.mapping(obj, "status", "status")
    name = _fields.string(metadata, "name", "metadata.name")
    if not name:
        raise ModelError("missing", "metadata.name")
    return ClaimInfo(
        namespace=_fields.string(metadata, "namespace", "metadata.namespace") or "default",
        name=name,
        phase=_fields.string(status, "phase", "status.phase"),
        volume_name=_fields.string(spec, "volumeName", "spec.volumeName"),
    )
