"""scheduler-plugins' Coscheduling (current): a ``scheduling.x-k8s.io/v1alpha1`` PodGroup named
by the pod label ``scheduling.x-k8s.io/pod-group``, with ``minMember``, ``minResources`` and
``scheduleTimeoutSeconds`` (unset or 0: the daemon's default waiting time). Written by Kubeflow
training-operator, MPI operator and KubeRay. Status as scheduler-plugins keeps it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from koordgang.framework.report import WatchedResource
from koordgang.gangapis.status import podgroup_status
from koordgang.model import gang_keys
from koordgang.model.gang import GangName, GangSource, NameIn, PodGroupInfo
from koordgang.model.koordinator import parse_podgroup
from koordgang.state.gangs import Gang

API = "scheduler-plugins"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


class SchedulerPluginsApi:
    name = API
    resource: WatchedResource | None = WatchedResource(
        "scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup"
    )

    related: tuple[WatchedResource, ...] = ()
    pod_keys: tuple[str, ...] = gang_keys.NONE
    names: tuple[GangName, ...] = (GangName(NameIn.LABEL, POD_GROUP_LABEL, GangSource.POD_GROUP),)
    crd = "podgroups.scheduling.x-k8s.io.yaml"
    crd_value = "schedulerPlugins"

    def parse(self, obj: Mapping[str, Any]) -> PodGroupInfo:
        return replace(parse_podgroup(obj), api=API)

    def status(self, gang: Gang, now: float) -> dict[str, Any] | None:
        return podgroup_status(gang)

    def awaits_enqueue(self, podgroup: PodGroupInfo) -> bool:
        return False  # its clients make their pods at once
