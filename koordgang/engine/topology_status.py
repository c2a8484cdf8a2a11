"""The status controller of the ``default`` ClusterNetworkTopology: whether its layers form
one chain, and its domains over the current nodes (``status.detailStatus``), from the one place
that knows them (:class:`~koordgang.state.network_topology.ClusterTopology`). The status writer
writes it when it differs from what it last wrote."""

from __future__ import annotations

from koordgang.framework.report import StatusUpdate
from koordgang.model.topology import DEFAULT_NAME
from koordgang.plugins.networktopology import RESOURCE
from koordgang.state.cache import SchedulerCache
from koordgang.state.network_topology import ClusterTopology


class TopologyStatus:
    def __init__(self, topology: ClusterTopology, cache: SchedulerCache) -> None:
        self._topology = topology
        self._cache = cache

    def updates(self) -> list[StatusUpdate]:
        status = self._topology.status(self._cache)
        if status is None:
            return []
        return [StatusUpdate(RESOURCE.api_version, RESOURCE.plural, "", DEFAULT_NAME, status)]
