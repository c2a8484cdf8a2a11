"""Kueue's plain pod groups: the pod label ``kueue.x-k8s.io/pod-group-name`` names the group and
the annotation ``kueue.x-k8s.io/pod-group-total-count`` gives its size, which is the gang's
minimum. Kueue admits a group by removing its scheduling gate from the pods; the scheduler then
places the group whole. No object: nothing is written back but the pods' own conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.framework.report import WatchedResource
from koordgang.model import gang_keys
from koordgang.model.gang import GangName, GangSource, NameIn, PodGroupInfo, podgroup_info
from koordgang.state.gangs import Gang

API = "kueue"
GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"


class KueueApi:
    name = API
    resource: WatchedResource | None = None

    related: tuple[WatchedResource, ...] = ()
    pod_keys: tuple[str, ...] = gang_keys.KUEUE
    names: tuple[GangName, ...] = (
        GangName(
            NameIn.LABEL, GROUP_NAME_LABEL, GangSource.LABELS, min_annotation=TOTAL_COUNT_ANNOTATION
        ),
    )
    crd = ""
    crd_value = ""

    def parse(self, obj: Mapping[str, Any]) -> PodGroupInfo:
        return podgroup_info(obj, min_member=None, issues=[], api=API)

    def status(self, gang: Gang, now: float) -> dict[str, Any] | None:
        return None

    def awaits_enqueue(self, podgroup: PodGroupInfo) -> bool:
        return False  # its clients make their pods at once
