"""The gang APIs the scheduler reads, in the order that decides which gang a pod belongs to
when it names gangs in more than one (the first wins, and the pod is warned): a new API is one
module here and one line in :data:`GANG_APIS`.

Upstream's comes last: from Kubernetes 1.37 the Job controller points the pods of every Job at
a PodGroup of its own (``basic``, no gang, unless the Job asks for one), so a Job whose pods
declare a gang in another API names two; the other API's gang is the one meant."""

from __future__ import annotations

from collections.abc import Sequence

from koordgang.gangapis.base import GangApi
from koordgang.gangapis.koordinator import KoordinatorApi
from koordgang.gangapis.kubernetes import KubernetesApi
from koordgang.gangapis.kueue import KueueApi
from koordgang.gangapis.scheduler_plugins import SchedulerPluginsApi
from koordgang.gangapis.volcano import VolcanoApi
from koordgang.model.gang import GangRef
from koordgang.model.pod import PodInfo

GANG_APIS: tuple[GangApi, ...] = (
    KoordinatorApi(),
    SchedulerPluginsApi(),
    VolcanoApi(),
    KueueApi(),
    KubernetesApi(),
)


class Resolve:
    """Every gang a pod names, one per API at most, in the APIs' order: read from what each
    API declares (:attr:`GangApi.names`), without asking the APIs themselves."""

    def __init__(self, apis: tuple[GangApi, ...]) -> None:
        self.apis = apis
        self._names = tuple((api.name, api.names) for api in apis)

    def __call__(self, pod: PodInfo) -> Sequence[GangRef]:
        refs = []
        for api, names in self._names:
            for way in names:
                ref = way.ref_of(pod, api)
                if ref is not None:
                    refs.append(ref)
                    break
        return refs


__all__ = ["GANG_APIS", "GangApi", "Resolve"]
