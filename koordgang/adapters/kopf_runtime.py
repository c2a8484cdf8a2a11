"""kopf runs the operator: lifecycle, signals, credentials, and the low-volume custom resources.

kopf must write nothing to pods. Posting of Events is off, progress and diff-base storages are
no-ops, and only ``on.event`` handlers exist (they keep no state on objects); the handlers
return None, because a returned value would be patched into the object's status.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import kopf

from koordgang.clients.config import Connection

PODGROUPS = ("scheduling.sigs.k8s.io", "v1alpha1", "podgroups")
TOPOLOGIES = ("scheduling.koordinator.sh", "v1alpha1", "clusternetworktopologies")

CustomResourceHandler = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class OperatorHooks:
    connection: Connection
    #: Starts the daemon's own tasks (informers, scheduling loop, HTTP endpoints).
    start: Callable[[], Awaitable[None]]
    #: Stops them gracefully (binds in flight finish).
    stop: Callable[[], Awaitable[None]]
    on_podgroup: CustomResourceHandler | None = None
    on_topology: CustomResourceHandler | None = None


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

    if hooks.on_podgroup is not None:
        on_podgroup = hooks.on_podgroup

        @kopf.on.event(*PODGROUPS, registry=registry)
        async def podgroup_event(event: kopf.RawEvent, **_: Any) -> None:
            on_podgroup(str(event.get("type") or ""), dict(event.get("object") or {}))

    if hooks.on_topology is not None:
        on_topology = hooks.on_topology

        @kopf.on.event(*TOPOLOGIES, registry=registry)
        async def topology_event(event: kopf.RawEvent, **_: Any) -> None:
            on_topology(str(event.get("type") or ""), dict(event.get("object") or {}))

    return registry


def quiet_kopf_logs() -> None:
    """kopf logs a line per handled event at INFO; keep its warnings only."""
    for name in ("kopf", "kopf.objects", "kopf.activities", "kopf._core", "kopf._cogs"):
        logging.getLogger(name).setLevel(logging.WARNING)


async def run_operator(registry: kopf.OperatorRegistry, stop_flag: asyncio.Event) -> None:
    """Runs kopf until SIGTERM/SIGINT or ``stop_flag``; returns after cleanup handlers ran."""
    await kopf.operator(registry=registry, standalone=True, clusterwide=True, stop_flag=stop_flag)
