"""What the engine's parts (intake, loop, bind outcomes) share: the scheduler's state and the
writers they report through. Built once by ``engine/scheduler.py``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from koordgang.engine.pending import PendingRule
from koordgang.engine.reporter import Reporter
from koordgang.engine.signals import Signals
from koordgang.framework.framework import Framework
from koordgang.state.cache import SchedulerCache
from koordgang.state.queue import SchedulingQueue
from koordgang.state.stores import Stores


@dataclass(frozen=True, slots=True)
class EngineParts:
    #: Nodes and pods, and the stores of every other watched kind.
    cache: SchedulerCache
    stores: Stores
    queue: SchedulingQueue
    framework: Framework
    reporter: Reporter
    pending: PendingRule
    signals: Signals
    #: Monotonic seconds.
    clock: Callable[[], float]


class EnginePart:
    """Base of a part: the shared state as attributes of its own, looked up once."""

    def __init__(self, parts: EngineParts) -> None:
        self._cache = parts.cache
        self._queue = parts.queue
        self._framework = parts.framework
        self._waiting = parts.framework.waiting
        self._reporter = parts.reporter
        self._pending = parts.pending
        self._signals = parts.signals
        self._clock = parts.clock
