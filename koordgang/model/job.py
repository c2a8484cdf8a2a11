"""Jobs (``batch/v1``), as far as time limits need them: when the Job's clock started and how
long it may run (``spec.activeDeadlineSeconds``, enforced by the Job controller)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.model import _fields
from koordgang.model.errors import ModelError

__all__ = ["JobInfo", "parse_job"]


@dataclass(frozen=True, slots=True)
class JobInfo:
    namespace: str
    name: str
    #: ``status.startTime``: when the Job last began to run unsuspended (None before).
    start_time: float | None
    #: ``spec.activeDeadlineSeconds``, None when the Job has no time limit.
    active_deadline_seconds: int | None
    #: ``spec.suspend``: a suspended Job's clock does not run.
    suspended: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_job(obj: Mapping[str, Any]) -> JobInfo:
    """Raises ModelError naming the field when the object is malformed."""
    metadata = _fields.mapping(obj, "metadata", "metadata")
    spec = _fields.mapping(obj, "spec", "spec")
    status = _fields.mapping(obj, "status", "status")
    name = _fields.string(metadata, "name", "metadata.name")
    if not name:
        raise ModelError("missing", "metadata.name")
    suspend = spec.get("suspend")
    if suspend is not None and not isinstance(suspend, bool):
        raise ModelError(f"expected true or false, got {suspend!r}", "spec.suspend")
    return JobInfo(
        namespace=_fields.string(metadata, "namespace", "metadata.namespace") or "default",
        name=name,
        start_time=_fields.timestamp(status, "startTime", "status.startTime"),
        active_deadline_seconds=(
            _fields.integer(spec, "activeDeadlineSeconds", "spec.activeDeadlineSeconds")
            if spec.get("activeDeadlineSeconds") is not None
            else None
        ),
        suspended=bool(suspend),
    )
