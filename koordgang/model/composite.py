"""Gangs of gangs: a CompositePodGroup (upstream Kubernetes 1.37, ``scheduling.k8s.io/v1alpha3``)
groups PodGroups and other CompositePodGroups, and asks that at least ``minGroupCount`` of its
children be placed whole at once (each child all or nothing); children beyond that minimum are
placed later, each whole. Composites nest; a PodGroup names its parent in
``spec.parentCompositePodGroupName``, a composite its own the same way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model.gang import ConfigIssue, GroupPolicy

#: Composites above one PodGroup, at most (the API server's own limit on a hierarchy).
MAX_COMPOSITE_LEVELS = 4


@dataclass(frozen=True, slots=True)
class CompositeInfo:
    namespace: str
    name: str
    uid: str
    resource_version: str
    #: ``spec.schedulingPolicy.gang.minGroupCount``; None for a ``basic`` policy (its children
    #: are placed independently) or a minimum that cannot be used (then ``issues`` says why).
    min_groups: int | None
    #: False for a ``basic`` policy.
    is_gang: bool = True
    #: Parent, priority, preemption and disruption policy, topology keys.
    policy: GroupPolicy = field(default_factory=GroupPolicy)
    #: ``spec.workloadRef.workloadName``: every group of one hierarchy belongs to one Workload.
    workload: str = ""
    issues: tuple[ConfigIssue, ...] = ()
    status: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    api_version: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
