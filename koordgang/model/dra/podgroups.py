"""The claims of an upstream PodGroup (``scheduling.k8s.io``; Kubernetes 1.37's
``DRAWorkloadResourceClaims``, beta and off by default): up to 4 entries of its
``spec.resourceClaims``, each naming a claim or a template. The resourceclaim controller makes
one claim per PodGroup from a template (owned by the PodGroup, named in its
``status.resourceClaimStatuses`` and in each member's), and a member's own claim entry that
matches one of them exactly (same name, same claim or template) uses the PodGroup's claim: it is
reserved for the PodGroup, once, however many members the gang has."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model import _fields
from koordgang.model.dra.claims import PODGROUPS, SCHEDULING_GROUP, Consumer
from koordgang.model.dra.pods import PodClaimRef, parse_pod_claims
from koordgang.model.errors import ModelError


@dataclass(frozen=True, slots=True)
class PodGroupClaims:
    namespace: str
    name: str
    uid: str
    #: ``spec.resourceClaims``.
    claims: tuple[PodClaimRef, ...] = ()
    #: ``status.resourceClaimStatuses``: claim entry -> the claim made for the PodGroup.
    made: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: Why its claims cannot be read ("" if they can): its members' claims then wait.
    problem: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def consumer(self) -> Consumer:
        """The ``reservedFor`` entry of a claim reserved for the PodGroup."""
        return Consumer(PODGROUPS, self.name, self.uid, api_group=SCHEDULING_GROUP)

    def binds(self, ref: PodClaimRef) -> bool:
        """Whether a member's claim entry is one of the PodGroup's: the same name, and the
        same claim or template (as Kubernetes matches them)."""
        return ref in self.claims


def parse_podgroup_claims(obj: Mapping[str, Any]) -> PodGroupClaims:
    """The claims of an upstream PodGroup (any version); an entry that cannot be read is the
    PodGroup's ``problem``."""
    metadata = _fields.mapping(obj, "metadata", "metadata")
    name = _fields.string(metadata, "name", "metadata.name")
    namespace = _fields.string(metadata, "namespace", "metadata.namespace") or "default"
    uid = _fields.string(metadata, "uid", "metadata.uid")
    try:
        spec = _fields.mapping(obj, "spec", "spec")
        status = _fields.mapping(obj, "status", "status")
        claims, made = parse_pod_claims(spec, status)
    except ModelError as err:
        return PodGroupClaims(namespace, name, uid, problem=str(err))
    return PodGroupClaims(namespace, name, uid, claims, made)
