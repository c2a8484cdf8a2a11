"""kopf runs the operator: lifecycle, credentials, and the low-volume custom resources the
plugins declare (PodGroups of every gang API, the ClusterNetworkTopology). kopf watches a
declared resource only where the API server serves it, and starts when its CRD appears.
SIGTERM and SIGINT are handled here (``StopSignals``), not by kopf.

kopf must write nothing to pods. Posting of Events is off, progress and diff-base storages are
no-ops, and only ``on.event`` handlers exist (they keep no state on objects); the handlers
return None, because a returned value would be patched into the object's status.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import kopf
import structlog
from kopf._core.engines.peering import Identity  # a NewType of str; kopf exports no name

from koordgang.clients.config import Connection
from koordgang.framework.report import WatchedResource

log = structlog.get_logger("koordgang.kopf")

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


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignals:
    """SIGTERM and SIGINT, any number of them and in any order, stop the operator once.

    kopf's own handlers call ``set_result`` on a future of its own; a second signal handled
    before our cleanup hook runs (two that arrive together: a process-group or cgroup kill,
    SIGTERM with Ctrl-C) sets it again, and asyncio prints an ``InvalidStateError``
    traceback. These handlers take kopf's place: the first signal raises the stop flag, which
    kopf obeys exactly as it obeys a signal (root tasks stop, cleanup handlers run), and any
    later one is only logged.
    """

    def __init__(self, stop_flag: asyncio.Event, *, kill_after: float | None = None) -> None:
        self._stop_flag = stop_flag
        #: kopf arms a SIGKILL this long after a signal, in case shutdown hangs; with the
        #: stop flag raised instead, it would not, so this does.
        self._kill_after = kill_after
        self.kill_timer: asyncio.TimerHandle | None = None
        self.received: list[signal.Signals] = []

    def install(self) -> bool:
        """Handles the signals from now on (in place of kopf's or anyone's); False where the
        loop cannot (not the main thread, or no Unix signals)."""
        if threading.current_thread() is not threading.main_thread():
            return False
        loop = asyncio.get_running_loop()
        try:
            for sig in STOP_SIGNALS:
                loop.add_signal_handler(sig, self._received, sig)
        except (NotImplementedError, RuntimeError):
            return False
        return True

    def _received(self, sig: signal.Signals) -> None:
        self.received.append(sig)
        if self._stop_flag.is_set():
            log.info("already shutting down", signal=sig.name)
            return
        # The flag and the timer first: nothing that follows (a log line) may keep them unset.
        self._stop_flag.set()
        if self._kill_after is not None:
            self.kill_timer = asyncio.get_running_loop().call_later(
                self._kill_after, os.kill, os.getpid(), signal.SIGKILL
            )
        log.info("signal received: stopping", signal=sig.name)


async def run_operator(registry: kopf.OperatorRegistry, stop_flag: asyncio.Event) -> None:
    """Runs kopf until SIGTERM/SIGINT or ``stop_flag``; returns after cleanup handlers ran.

    This is ``kopf.operator`` (its ``spawn_tasks`` then ``run_tasks``) with our signal
    handlers (``StopSignals``) in place of kopf's: they are installed before kopf's tasks
    exist, and again the moment ``spawn_tasks`` has put kopf's own in, before the loop can
    handle one signal with kopf's.
    """
    settings = kopf.OperatorSettings()
    signals = StopSignals(stop_flag, kill_after=settings.process.ultimate_exiting_timeout)
    signals.install()
    current = asyncio.current_task()
    existing = {task for task in asyncio.all_tasks() if task is not current}
    tasks = await kopf.spawn_tasks(
        registry=registry,
        settings=settings,
        standalone=True,
        clusterwide=True,
        stop_flag=stop_flag,
        # Given, not detected: kopf would ask the user database for this uid's name, and the
        # image's user (65532) has no entry there: the daemon then died at start.
        identity=Identity(f"koordgang@{socket.gethostname()}"),
    )
    signals.install()
    await kopf.run_tasks(tasks, ignored=existing)
