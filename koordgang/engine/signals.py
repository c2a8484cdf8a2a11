"""How the parts of the engine tell the scheduling loop that there is work: ``wake`` (a pod was
queued) and ``request_move`` (the cluster changed in a way that may let parked pods fit)."""

from __future__ import annotations

import asyncio
import contextlib


class Signals:
    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._move_requested = False

    def wake(self) -> None:
        self._event.set()

    def request_move(self) -> None:
        self._move_requested = True
        self._event.set()

    def take_move(self) -> bool:
        """Whether a move was requested since the last call."""
        requested, self._move_requested = self._move_requested, False
        return requested

    async def wait(self, timeout: float) -> None:
        """Until woken, or ``timeout`` seconds."""
        self._event.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout=max(timeout, 0.001))
