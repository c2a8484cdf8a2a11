"""Upstream Kubernetes (1.36, alpha): a ``scheduling.k8s.io/v1alpha2`` PodGroup named by the
pod's ``spec.schedulingGroup.podGroupName``; ``spec.schedulingPolicy.gang.minCount`` makes it a
gang (a ``basic`` policy is not one). The Job controller writes it, with a Workload, for an
Indexed Job with ``parallelism == completions > 1``. Status: the ``PodGroupScheduled``
condition as kube-scheduler writes it, True/``Scheduled`` or False/``Unschedulable``, and never
back from True to False.

Kubernetes 1.37 moves the API to ``v1beta1``; a version is the resource and the field paths
here, nothing else."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.framework.report import WatchedResource
from koordgang.model.gang import (
    ConfigIssue,
    GangRef,
    GangSource,
    PodGroupInfo,
    mapping,
    parse_minimum,
    podgroup_info,
)
from koordgang.model.pod import PodInfo
from koordgang.plugins.coscheduling.apis.base import condition, conditions_of
from koordgang.state.gangs import Gang

API = "kubernetes"
MIN_COUNT_FIELD = "spec.schedulingPolicy.gang.minCount"
POD_FIELD = "spec.schedulingGroup.podGroupName"
CONDITION = "PodGroupScheduled"
SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"


class KubernetesApi:
    name = API
    resource: WatchedResource | None = WatchedResource(
        "scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup"
    )

    def ref_of(self, pod: PodInfo) -> GangRef | None:
        if not pod.scheduling_group:
            return None
        return GangRef(
            pod.namespace, pod.scheduling_group, GangSource.POD_GROUP, api=API, named_by=POD_FIELD
        )

    def parse(self, obj: Mapping[str, Any]) -> PodGroupInfo:
        policy = mapping(mapping(obj.get("spec")).get("schedulingPolicy"))
        issues: list[ConfigIssue] = []
        gang = policy.get("gang")
        if gang is None and "basic" in policy:
            return podgroup_info(
                obj, min_member=1, issues=issues, api=API, min_field=MIN_COUNT_FIELD, is_gang=False
            )
        minimum = parse_minimum(mapping(gang).get("minCount"), MIN_COUNT_FIELD, issues)
        return podgroup_info(
            obj, min_member=minimum, issues=issues, api=API, min_field=MIN_COUNT_FIELD
        )

    def status(self, gang: Gang, now: float) -> dict[str, Any] | None:
        podgroup = gang.podgroup
        if podgroup is None or not podgroup.is_gang:
            return None
        conditions = conditions_of(podgroup.status)
        current = next((c for c in conditions if c.get("type") == CONDITION), None)
        if current is not None and current.get("status") == "True":
            return None  # never back from True to False; nothing more to say once True
        if gang.satisfied:
            wanted = ("True", SCHEDULED, "the gang's minimum was placed and bound")
        elif gang.first_attempt is not None and gang.last_message:
            wanted = ("False", UNSCHEDULABLE, gang.last_message)
        else:
            return None
        if (
            current is not None
            and (
                current.get("status"),
                current.get("reason"),
                current.get("message"),
            )
            == wanted
        ):
            return None
        others = [c for c in conditions if c.get("type") != CONDITION]
        return {"conditions": [*others, condition(CONDITION, *wanted, conditions, now)]}

    def awaits_enqueue(self, podgroup: PodGroupInfo) -> bool:
        return False  # its clients make their pods at once
