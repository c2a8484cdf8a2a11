"""A pod's side of DRA: the claims its ``spec.resourceClaims`` names, and the claims the
resourceclaim controller made for it (its ``status.resourceClaimStatuses``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.model import _fields
from koordgang.model.errors import ModelError


@dataclass(frozen=True, slots=True)
class PodClaimRef:
    """One entry of a pod's ``spec.resourceClaims``: a claim by name, or made from a
    template (then the claim's name is in the pod's status, once the controller made it)."""

    name: str
    claim_name: str = ""
    template_name: str = ""


def parse_pod_claims(
    spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[tuple[PodClaimRef, ...], Mapping[str, str]]:
    """``spec.resourceClaims`` and ``status.resourceClaimStatuses`` (pod claim name -> the
    name of the claim made for it; "" where the controller found none was needed)."""
    refs: list[PodClaimRef] = []
    for index, raw in enumerate(_fields.items(spec, "resourceClaims", "spec.resourceClaims")):
        path = f"spec.resourceClaims[{index}]"
        entry = _fields.as_mapping(raw, path)
        name = _fields.string(entry, "name", f"{path}.name")
        if not name:
            raise ModelError("missing", f"{path}.name")
        claim = _fields.string(entry, "resourceClaimName", f"{path}.resourceClaimName")
        template = _fields.string(
            entry, "resourceClaimTemplateName", f"{path}.resourceClaimTemplateName"
        )
        if bool(claim) == bool(template):
            raise ModelError(
                "exactly one of resourceClaimName and resourceClaimTemplateName must be set",
                path,
            )
        refs.append(PodClaimRef(name, claim, template))
    statuses: dict[str, str] = {}
    raw_statuses = _fields.items(status, "resourceClaimStatuses", "status.resourceClaimStatuses")
    for index, raw in enumerate(raw_statuses):
        path = f"status.resourceClaimStatuses[{index}]"
        entry = _fields.as_mapping(raw, path)
        name = _fields.string(entry, "name", f"{path}.name")
        if name:
            statuses[name] = _fields.string(entry, "resourceClaimName", f"{path}.resourceClaimName")
    return tuple(refs), statuses
