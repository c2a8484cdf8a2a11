"""The daemon's ``POST /whatif``: the file read, PriorityClasses looked up (a GET), then the
synchronous what-if on a fork of the daemon's state (``fork.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import structlog

from koordgang.clients.api import KubeApi
from koordgang.settings import Settings
from koordgang.whatif.cluster import read_priorities
from koordgang.whatif.fork import DaemonState, what_if
from koordgang.whatif.inputs import priority_class_names, read_input


class WhatIfService:
    def __init__(
        self,
        settings: Settings,
        api: KubeApi,
        state: Callable[[], DaemonState],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._api = api
        self._state = state
        self._clock = clock
        self._wall = wall

    async def answer(self, text: str) -> dict[str, Any]:
        """The answer for a file's contents; raises ``WhatIfError`` for a file it cannot
        answer for."""
        parsed = read_input(text, self._settings.scheduler_names)
        priorities, warning = await read_priorities(self._api, priority_class_names(parsed.pods))
        # From here on nothing awaits: the daemon's state cannot change under the what-if.
        # What its plugins log is marked as a what-if's (a "gang group placed" of a job that
        # was never submitted must not read as a real placement).
        with structlog.contextvars.bound_contextvars(whatif=True):
            answer = what_if(
                self._settings,
                self._state(),
                parsed,
                priorities,
                clock=self._clock,
                wall=self._wall,
            )
        answer["sources"] = parsed.sources
        if warning:
            answer["warnings"].append(warning)
        return answer
