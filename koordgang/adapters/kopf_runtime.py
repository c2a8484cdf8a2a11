"""kopf runs the operator: lifecycle, signals, credentials, and the low-volume custom resources
the plugins declare (PodGroups of every gang API, the ClusterNetworkTopology). kopf watches a
declared resource only where the API server serves it, and starts when its CRD appears.

kopf must write nothing to pods. Posting of Events is off, progress and diff-base storages are
no-ops, and only ``on.event`` handlers exist (they keep no state on objects); the handlers
return None, because a returned value would be patched into the object's status.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import kopf

from koordgang.clients.config import Connection
from koordgang.framework.report import WatchedResource

#: (resource id, event type, object): what a watched resource's event becomes.
ObjectHandler = Callable[[str, str, dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class OperatorHooks:
    connection: Connection
    #: Starts the daemon's own tasks (informers, scheduling loop, HTTP endpoints).
    start: Callable[[], Awaitable[None]]
    #: Stops them gracefully (binds in flight finish).
    stop: Callable[[], Awaitable[None]]
    #: The resources to watch, and who hears of them.
    resources: Sequence[WatchedResource] = ()
    on_object: ObjectHandler | None = None


class _NoProgressStorage(kopf.ProgressStorage):
    """kopf keeps no handler progress on objects: our handlers are stateless events."""

    def fetch(self, **_: Any) -> None:
        return None

    def store(self, **_: Any) -> None:
        pass

    def purge(self, **_: Any) -> None:
        pass

    def touch(self, **_: Any) -> None:
        pass

    def clear(self, *, essence: Any) -> Any:
        return essence


class _NoDiffBaseStorage(kopf.DiffBaseStorage):
    def fetch(self, **_: Any) -> None:
        return None

    def store(self, **_: Any) -> None:
        pass


def build_registry(hooks: OperatorHooks) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        conn = hooks.connection
        return kopf.ConnectionInfo(
            server=conn.server,
            ca_path=conn.ca_path,
            insecure=conn.insecure,
            token=conn.current_token(),
            certificate_path=conn.cert_path,
            private_key_path=conn.key_path,
        )

    @kopf.on.startup(registry=registry)
    async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.persistence.progress_storage = _NoProgressStorage()
        settings.persistence.diffbase_storage = _NoDiffBaseStorage()
        settings.peering.standalone = True
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330
        settings.watching.connect_timeout = 10
        settings.scanning.disabled = False
        await hooks.start()

    @kopf.on.cleanup(registry=registry)
    async def cleanup(**_: Any) -> None:
        await hooks.stop()

    if hooks.on_object is not None:
        for resource in hooks.resources:
            _watch(registry, resource, hooks.on_object)

    return registry


def _watch(registry: kopf.OperatorRegistry, resource: WatchedResource, sink: ObjectHandler) -> None:
    resource_id = resource.id

    @kopf.on.event(
        resource.group, resource.version, resource.plural, registry=registry, id=resource_id
    )
    async def object_event(event: kopf.RawEvent, **_: Any) -> None:
        sink(resource_id, str(event.get("type") or ""), dict(event.get("object") or {}))


def quiet_kopf_logs() -> None:
    """kopf logs a line per handled event at INFO; keep its warnings only."""
    for name in ("kopf", "kopf.objects", "kopf.activities", "kopf._core", "kopf._cogs"):
        logging.getLogger(name).setLevel(logging.WARNING)


async def run_operator(registry: kopf.OperatorRegistry, stop_flag: asyncio.Event) -> None:
    """Runs kopf until SIGTERM/SIGINT or ``stop_flag``; returns after cleanup handlers ran."""
    await kopf.operator(registry=registry, standalone=True, clusterwide=True, stop_flag=stop_flag)
