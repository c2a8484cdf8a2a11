"""Named, guarded tasks: nothing that runs for the daemon's whole life may die silently.

A task that fails (raises, or returns while it should run on) is logged with its traceback and
started again after a backoff, at most ``max_restarts`` times within ``window`` seconds; one more
failure and the daemon gives up: ``on_fatal`` stops it, and it exits non-zero. Meanwhile
``problems()`` names the task (``/healthz`` answers 500 with it), until it has run a whole
window without failing again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import structlog

log = structlog.get_logger("koordgang.tasks")

TaskFactory = Callable[[], Coroutine[Any, Any, None]]


@dataclass(slots=True)
class _Guarded:
    name: str
    factory: TaskFactory
    task: asyncio.Task[None] | None = None
    #: Monotonic times of recent failures (within the window).
    failures: list[float] = field(default_factory=list)
    last_error: str = ""
    restart: asyncio.TimerHandle | None = None


class Supervisor:
    def __init__(
        self,
        *,
        on_fatal: Callable[[str, str], None],
        clock: Callable[[], float],
        max_restarts: int = 3,
        window: float = 300.0,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
    ) -> None:
        self._on_fatal = on_fatal
        self._clock = clock
        self._max_restarts = max_restarts
        self._window = window
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._tasks: dict[str, _Guarded] = {}
        #: One-shot tasks (see ``start_once``), until they end.
        self._once: dict[str, asyncio.Task[None]] = {}
        self._stopping = False

    def spawn(self, name: str, factory: TaskFactory) -> None:
        """Runs ``factory()`` as task ``name`` until ``stop``, restarting it when it fails."""
        guarded = self._tasks.get(name)
        if guarded is None:
            guarded = self._tasks[name] = _Guarded(name, factory)
        self._start(guarded)

    def start_once(self, name: str, factory: TaskFactory) -> None:
        """Runs ``factory()`` once as task ``name``, for work that helps but that the daemon
        does not need (opening connections ahead of a burst): a failure is logged, not
        retried, and is no problem for ``/healthz``. Cancelled by ``stop`` if still running."""
        if name in self._once:
            return
        task = asyncio.create_task(factory(), name=name)
        self._once[name] = task
        task.add_done_callback(lambda done: self._once_ended(name, done))

    def _once_ended(self, name: str, task: asyncio.Task[None]) -> None:
        self._once.pop(name, None)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            # An API server out of reach is said in a line; anything else is a bug: traced.
            expected = isinstance(error, (OSError, TimeoutError))
            log.warning(
                "one-shot task failed",
                task=name,
                error=repr(error),
                exc_info=None if expected else error,
            )

    def _start(self, guarded: _Guarded) -> None:
        guarded.restart = None
        task = asyncio.create_task(guarded.factory(), name=guarded.name)
        guarded.task = task
        task.add_done_callback(lambda done: self._ended(guarded, done))

    def _ended(self, guarded: _Guarded, task: asyncio.Task[None]) -> None:
        if self._stopping or task.cancelled() or guarded.task is not task:
            return
        error = task.exception()
        reason = repr(error) if error is not None else "ended while it should run on"
        now = self._clock()
        guarded.failures = [t for t in guarded.failures if now - t < self._window]
        guarded.failures.append(now)
        guarded.last_error = reason
        restarts_left = self._max_restarts - (len(guarded.failures) - 1)
        if restarts_left <= 0:
            log.error(
                "task failed too often; stopping the daemon",
                task=guarded.name,
                failures=len(guarded.failures),
                window_seconds=self._window,
                error=reason,
                exc_info=error,
            )
            self._on_fatal(guarded.name, reason)
            return
        delay = min(self._max_backoff, self._backoff * 2 ** (len(guarded.failures) - 1))
        log.error(
            "task failed; restarting it",
            task=guarded.name,
            retry_in=delay,
            restarts_left=restarts_left,
            error=reason,
            exc_info=error,
        )
        guarded.restart = asyncio.get_running_loop().call_later(delay, self._start, guarded)

    def stand_down(self) -> None:
        """A graceful stop begins: tasks that end from now on are not failures."""
        self._stopping = True
        for guarded in self._tasks.values():
            if guarded.restart is not None:
                guarded.restart.cancel()
                guarded.restart = None

    def problems(self) -> list[str]:
        """One line per task that is down or failed within the window, for ``/healthz``."""
        now = self._clock()
        lines = []
        for guarded in self._tasks.values():
            recent = [t for t in guarded.failures if now - t < self._window]
            down = guarded.task is None or guarded.task.done()
            if recent or (down and not self._stopping):
                state = "restarting" if down else "running again"
                lines.append(
                    f"task {guarded.name} failed {len(recent)} time(s) in the last "
                    f"{int(self._window)} s ({state}; last error: {guarded.last_error})"
                )
        return lines

    def names(self) -> list[str]:
        return list(self._tasks)

    async def stop(self, timeout: float = 5.0) -> None:
        """Cancels every task (callers first let them finish their work, see each owner)."""
        self.stand_down()
        tasks = [task for task in self._once.values() if not task.done()]
        for task in tasks:
            task.cancel()
        for guarded in self._tasks.values():
            if guarded.task is not None and not guarded.task.done():
                guarded.task.cancel()
                tasks.append(guarded.task)
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
