"""Koordinator: a ``scheduling.sigs.k8s.io/v1alpha1`` PodGroup named by the pod label
``pod-group.scheduling.sigs.k8s.io``, the lightweight labels, or the
``gang.scheduling.koordinator.sh/*`` annotations. Status: phase and member counts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.framework.report import WatchedResource
from koordgang.gangapis.status import podgroup_status
from koordgang.model import gang_keys
from koordgang.model.gang import KOORDINATOR, GangName, PodGroupInfo
from koordgang.model.koordinator import GANG_NAMES, parse_podgroup
from koordgang.state.gangs import Gang


class KoordinatorApi:
    name = KOORDINATOR
    resource: WatchedResource | None = WatchedResource(
        "scheduling.sigs.k8s.io", "v1alpha1", "podgroups", "PodGroup"
    )

    related: tuple[WatchedResource, ...] = ()
    pod_keys: tuple[str, ...] = gang_keys.KOORDINATOR
    crd = "podgroups.scheduling.sigs.k8s.io.yaml"
    crd_value = ""
    names: tuple[GangName, ...] = GANG_NAMES

    def parse(self, obj: Mapping[str, Any]) -> PodGroupInfo:
        return parse_podgroup(obj)

    def status(self, gang: Gang, now: float) -> dict[str, Any] | None:
        return podgroup_status(gang)

    def awaits_enqueue(self, podgroup: PodGroupInfo) -> bool:
        return False  # its clients make their pods at once
