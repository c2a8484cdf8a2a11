"""The status of the gangs' group objects, written by the engine as each gang API words it.

A controller, not a plugin: once a second it asks each API what the group objects of the gangs
touched since (``GangRegistry.touch``) should say, and what upstream's CompositePodGroups
should, and runs Volcano's enqueue (a PodGroup is ``Inqueue`` once its minResources could fit
the free room: its clients make their pods only then). The status writer sends what differs
from what it wrote before."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from koordgang.framework.report import StatusUpdate
from koordgang.gangapis import GANG_APIS, GangApi
from koordgang.gangapis.composite import Composites
from koordgang.gangapis.enqueue import enqueue, promised
from koordgang.gangapis.kubernetes import API as KUBERNETES
from koordgang.gangapis.min_resources import free_in_cluster
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.snapshot import Snapshot


class GangStatus:
    def __init__(
        self,
        gangs: GangRegistry,
        cache: SchedulerCache,
        clock: Callable[[], float],
        wall: Callable[[], float],
        apis: Sequence[GangApi] = GANG_APIS,
    ) -> None:
        self.gangs = gangs
        self.cache = cache
        self.clock = clock
        self.wall = wall
        self.apis = {api.name: api for api in apis}
        self.composites = Composites(gangs, gangs.composites)

    def updates(self) -> list[StatusUpdate]:
        self._enqueue()
        updates = []
        now = self.wall()
        for key in self.gangs.take_touched():
            gang = self.gangs.get(key)
            if gang is None or gang.podgroup is None:
                continue
            api = self.apis.get(gang.api)
            if api is None or api.resource is None:
                continue
            status = api.status(gang, now)
            if status is None:
                continue
            updates.append(
                StatusUpdate(
                    # Back in the version it was read in (what the API server serves).
                    gang.podgroup.api_version or api.resource.api_version,
                    api.resource.plural,
                    gang.podgroup.namespace,
                    gang.podgroup.name,
                    status,
                    subresource=api.resource.status_subresource,
                    observed=gang.podgroup.status,
                )
            )
        if KUBERNETES in self.apis:
            updates += self.composites.status_updates(now)
        return updates

    def _enqueue(self) -> None:
        """Gangs of APIs whose clients wait for the gang to be enqueued (``enqueue.py``)."""
        waiting = [
            g
            for g in self.gangs.gangs()
            if not g.enqueued
            and g.podgroup is not None
            and g.is_gang()
            and (api := self.apis.get(g.api)) is not None
            and api.awaits_enqueue(g.podgroup)
        ]
        if not waiting:
            return
        names: set[str] = set()
        for g in waiting:
            if g.podgroup is not None and g.podgroup.min_resources is not None:
                names.update(g.podgroup.min_resources.names())
        now = self.clock()
        free = free_in_cluster(Snapshot(self.cache), names)
        promises = promised(self.gangs.gangs(), now)
        for gang in enqueue(waiting, free, promises, now):
            self.gangs.touch(gang.key)
