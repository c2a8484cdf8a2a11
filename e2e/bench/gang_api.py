"""How a gang is declared to each scheduler: the same workload, in each one's own words.

koordgang and koord-scheduler read Koordinator's gang annotations on the pods; scheduler-plugins'
Coscheduling reads a ``scheduling.x-k8s.io`` PodGroup and a label on each member; kube-scheduler
has no gang API (gang scenarios are not run on it).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from e2e.bench.workload import GANG_MIN, GANG_NAME, PodPlan

COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
COSCHEDULING_GROUP = "scheduling.x-k8s.io"
COSCHEDULING_VERSION = "v1alpha1"


class GangApi(enum.Enum):
    #: No gang API: every pod on its own.
    NONE = "none"
    #: ``gang.scheduling.koordinator.sh/name`` and ``/min-available`` annotations.
    KOORDINATOR = "koordinator annotations"
    #: A ``podgroups.scheduling.x-k8s.io`` object and the ``scheduling.x-k8s.io/pod-group`` label.
    SCHEDULER_PLUGINS = "scheduling.x-k8s.io PodGroup"


def pod_manifest(plan: PodPlan, api: GangApi) -> dict[str, Any]:
    """The pod to POST for ``plan``, its gang membership declared the way ``api`` reads it."""
    manifest = plan.manifest()
    if plan.gang is None or api is GangApi.KOORDINATOR:
        return manifest
    metadata = manifest["metadata"]
    annotations = metadata.get("annotations") or {}
    for key in (GANG_NAME, GANG_MIN):
        annotations.pop(key, None)
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    if api is GangApi.SCHEDULER_PLUGINS:
        metadata["labels"][COSCHEDULING_LABEL] = plan.gang.name
    return manifest


def pod_groups(gangs: Mapping[str, int], api: GangApi) -> list[dict[str, Any]]:
    """The group objects ``api`` needs besides the pods (gang name -> min-available)."""
    if api is not GangApi.SCHEDULER_PLUGINS:
        return []
    return [
        {
            "apiVersion": f"{COSCHEDULING_GROUP}/{COSCHEDULING_VERSION}",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"minMember": minimum},
        }
        for name, minimum in sorted(gangs.items())
    ]
