"""How a gang is declared to each scheduler: the same workload, in each one's own words.

koordgang reads five gang APIs (``koordgang/gangapis``); by default the bench
declares its gangs with Koordinator's annotations, which koord-scheduler reads too, and
``--gang-apis`` runs koordgang's gang scenarios once more per other API listed.
scheduler-plugins' Coscheduling reads a ``scheduling.x-k8s.io`` PodGroup and a label on each
member; kube-scheduler 1.37 reads upstream PodGroups (``v1beta1``) with its GenericWorkload
gate on (``peers/config.py``) and runs every gang scenario with them; 1.36's (alpha, with
GangScheduling) only those that give it upstream PodGroups (``Scenario.peer_gang_apis``: the
DRA one).

Each API, as a pod of gang ``job-000`` with minimum 20 carries it:

- koordinator: annotations ``gang.scheduling.koordinator.sh/name: job-000`` and
  ``gang.scheduling.koordinator.sh/min-available: "20"``; no object.
- scheduler-plugins: label ``scheduling.x-k8s.io/pod-group: job-000``; a
  ``scheduling.x-k8s.io/v1alpha1`` PodGroup with ``spec.minMember: 20``.
- kubernetes: ``spec.schedulingGroup.podGroupName: job-000``; a ``scheduling.k8s.io/v1beta1``
  PodGroup (``v1alpha2`` on Kubernetes 1.36) with ``spec.schedulingPolicy.gang.minCount: 20``
  (served only with the GenericWorkload feature gate and that version switched on; no
  ``workloadRef`` needed).
- volcano: annotation ``scheduling.k8s.io/group-name: job-000``; a
  ``scheduling.volcano.sh/v1beta1`` PodGroup with ``spec.minMember: 20``.
- kueue: label ``kueue.x-k8s.io/pod-group-name: job-000`` and annotation
  ``kueue.x-k8s.io/pod-group-total-count: "20"``; no object. Kueue's count is the group's size
  and koordgang takes it as the minimum: every bench gang's minimum is its size.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from bench.workload import (
    BENCH_LABEL,
    GANG_MIN,
    GANG_NAME,
    ClaimUse,
    CompositePlan,
    PodPlan,
)
from controlplane.releases import selected_release

COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
COSCHEDULING_GROUP = "scheduling.x-k8s.io"
COSCHEDULING_VERSION = "v1alpha1"
#: The version the plane's release serves (``KUBE``): v1beta1 on 1.37, v1alpha2 on 1.36.
UPSTREAM_API_VERSION = f"scheduling.k8s.io/{selected_release().podgroup_version}"
UPSTREAM_POD_FIELD = "schedulingGroup"
COMPOSITE_API_VERSION = "scheduling.k8s.io/v1alpha3"
VOLCANO_API_VERSION = "scheduling.volcano.sh/v1beta1"
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
KUEUE_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_COUNT = "kueue.x-k8s.io/pod-group-total-count"
#: The finalizer kube-apiserver's PodGroupProtection admission stamps on every upstream
#: PodGroup; kube-controller-manager removes it, which the bench usually runs without.
UPSTREAM_FINALIZER = "scheduling.k8s.io/podgroup-protection"


class GangApi(enum.Enum):
    """A gang API; the value is what results (``gang_api``) and tables show."""

    #: No gang API: every pod on its own.
    NONE = "none"
    #: ``gang.scheduling.koordinator.sh/name`` and ``/min-available`` annotations.
    KOORDINATOR = "koordinator annotations"
    #: A ``podgroups.scheduling.x-k8s.io`` object and the ``scheduling.x-k8s.io/pod-group`` label.
    SCHEDULER_PLUGINS = "scheduling.x-k8s.io PodGroup"
    #: A ``podgroups.scheduling.k8s.io`` object and ``spec.schedulingGroup``.
    UPSTREAM = "scheduling.k8s.io PodGroup"
    #: A ``podgroups.scheduling.volcano.sh`` object and the ``scheduling.k8s.io/group-name``
    #: annotation.
    VOLCANO = "scheduling.volcano.sh PodGroup"
    #: Kueue's ``pod-group-name`` label and ``pod-group-total-count`` annotation.
    KUEUE = "kueue pod-group label"

    @property
    def key(self) -> str:
        """The name ``--gang-apis`` takes, koordgang's own name of the API."""
        return KEYS.get(self, "none")

    @property
    def api_version(self) -> str:
        """The group object's ``apiVersion`` ("" when the API has none)."""
        return GROUP_API_VERSIONS.get(self, "")


#: ``--gang-apis`` names (those of koordgang's ``apis`` modules) -> API.
BY_KEY: Mapping[str, GangApi] = {
    "koordinator": GangApi.KOORDINATOR,
    "scheduler-plugins": GangApi.SCHEDULER_PLUGINS,
    "kubernetes": GangApi.UPSTREAM,
    "volcano": GangApi.VOLCANO,
    "kueue": GangApi.KUEUE,
}
KEYS: Mapping[GangApi, str] = {api: key for key, api in BY_KEY.items()}
#: The APIs with a group object, and its apiVersion.
GROUP_API_VERSIONS: Mapping[GangApi, str] = {
    GangApi.SCHEDULER_PLUGINS: f"{COSCHEDULING_GROUP}/{COSCHEDULING_VERSION}",
    GangApi.UPSTREAM: UPSTREAM_API_VERSION,
    GangApi.VOLCANO: VOLCANO_API_VERSION,
}


def parse_gang_apis(text: str) -> list[GangApi]:
    """``"volcano,koordinator"`` -> [KOORDINATOR, VOLCANO]: Koordinator's annotations always
    come first (they are what the other APIs are compared with), then the others as listed;
    "all" is every API."""
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    if wanted == ["all"]:
        wanted = list(BY_KEY)
    unknown = [name for name in wanted if name not in BY_KEY]
    if unknown:
        raise ValueError(f"unknown gang APIs {unknown}; known: {', '.join(BY_KEY)}")
    chosen = [GangApi.KOORDINATOR, *(BY_KEY[name] for name in wanted)]
    return list(dict.fromkeys(chosen))


def pod_manifest(plan: PodPlan, api: GangApi) -> dict[str, Any]:
    """The pod to POST for ``plan``, its gang membership declared the way ``api`` reads it."""
    manifest = plan.manifest()
    if plan.gang is None or api is GangApi.KOORDINATOR:
        return manifest
    metadata = manifest["metadata"]
    annotations = metadata.get("annotations") or {}
    for key in (GANG_NAME, GANG_MIN):
        annotations.pop(key, None)
    name, minimum = plan.gang.name, plan.gang.min_available
    if api is GangApi.SCHEDULER_PLUGINS:
        metadata["labels"][COSCHEDULING_LABEL] = name
    elif api is GangApi.UPSTREAM:
        manifest["spec"][UPSTREAM_POD_FIELD] = {"podGroupName": name}
    elif api is GangApi.VOLCANO:
        annotations[VOLCANO_ANNOTATION] = name
    elif api is GangApi.KUEUE:
        metadata["labels"][KUEUE_LABEL] = name
        annotations[KUEUE_COUNT] = str(minimum)
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return manifest


def pod_groups(
    gangs: Mapping[str, int],
    api: GangApi,
    composites: Sequence[CompositePlan] = (),
    claims: Mapping[str, ClaimUse] | None = None,
) -> list[dict[str, Any]]:
    """The group objects ``api`` needs besides the pods (gang name -> min-available), labelled
    as the bench's so that leftovers can be found; for upstream's API, the CompositePodGroups
    first, then the PodGroups naming them, and naming the claim their members share
    (``claims``: gang name -> claim; Kubernetes 1.37's PodGroup claims)."""
    if api not in GROUP_API_VERSIONS:
        return []
    parent = {child: c for c in composites for child in c.children}
    objects = [composite_object(c) for c in composites] if api is GangApi.UPSTREAM else []
    for name, minimum in sorted(gangs.items()):
        spec = _group_spec(api, minimum)
        if api is GangApi.UPSTREAM and name in parent:
            composite = parent[name]
            spec["parentCompositePodGroupName"] = composite.name
            spec["workloadRef"] = {"workloadName": composite.name, "templateName": "child"}
            if composite.child_key:
                spec["schedulingConstraints"] = {"topology": [{"key": composite.child_key}]}
        shared = (claims or {}).get(name)
        if api is GangApi.UPSTREAM and shared is not None:
            spec["resourceClaims"] = [{"name": shared.name, "resourceClaimName": shared.claim}]
        objects.append(
            {
                "apiVersion": api.api_version,
                "kind": "PodGroup",
                "metadata": {"name": name, "labels": {BENCH_LABEL: "1"}},
                "spec": spec,
            }
        )
    return objects


def composite_object(plan: CompositePlan) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "workloadRef": {"workloadName": plan.name, "templateName": "root"},
        "schedulingPolicy": {"gang": {"minGroupCount": plan.min_groups}},
    }
    if plan.key:
        spec["schedulingConstraints"] = {"topology": [{"key": plan.key}]}
    return {
        "apiVersion": COMPOSITE_API_VERSION,
        "kind": "CompositePodGroup",
        "metadata": {"name": plan.name, "labels": {BENCH_LABEL: "1"}},
        "spec": spec,
    }


def _group_spec(api: GangApi, minimum: int) -> dict[str, Any]:
    if api is GangApi.UPSTREAM:
        return {"schedulingPolicy": {"gang": {"minCount": minimum}}}
    return {"minMember": minimum}


def group_paths(namespace: str) -> Sequence[str]:
    """Where the group objects of every API live in ``namespace`` (some may not be served)."""
    return [
        f"/apis/{version}/namespaces/{namespace}/podgroups"
        for version in GROUP_API_VERSIONS.values()
    ]
