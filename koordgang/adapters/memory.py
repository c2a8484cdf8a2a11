"""Where the daemon's memory goes, for leak hunts and soak tests (``traceMemory``), and the
free memory the C allocator keeps, given back to the OS (``AllocatorTrim``).

With the setting on, ``tracemalloc`` runs from start-up and ``/debug/memory`` answers the
Python heap now and at the first look, and the allocation sites that grew most in between (by
file and line): a growth that does not level off over hours points at its line. Tracing costs
CPU and memory (roughly a third more of each), so it is off unless asked for.
"""

from __future__ import annotations

import asyncio
import ctypes
import tracemalloc
from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger("koordgang.memory")

#: Frames kept per allocation: the caller's line is what points at the cause.
FRAMES = 1


class MemoryTracer:
    def __init__(self, top: int = 25) -> None:
        self._top = top
        self._baseline: tracemalloc.Snapshot | None = None

    def start(self) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start(FRAMES)

    def stop(self) -> None:
        if tracemalloc.is_tracing():
            tracemalloc.stop()

    def report(self) -> dict[str, Any]:
        """The heap now, and the sites that grew most since the first report (the first one
        sets the baseline: ask once right after start-up, then whenever you like)."""
        if not tracemalloc.is_tracing():
            return {"tracing": False}
        snapshot = tracemalloc.take_snapshot().filter_traces(
            (tracemalloc.Filter(False, tracemalloc.__file__),)
        )
        current, peak = tracemalloc.get_traced_memory()
        if self._baseline is None:
            self._baseline = snapshot
        diff = sorted(
            snapshot.compare_to(self._baseline, "lineno"),
            key=lambda stat: stat.size_diff,
            reverse=True,
        )
        grown = [
            {
                "site": str(stat.traceback[0]),
                "bytes": stat.size,
                "growth": stat.size_diff,
                "count": stat.count,
                "countGrowth": stat.count_diff,
            }
            for stat in diff[: self._top]
        ]
        return {"tracing": True, "bytes": current, "peakBytes": peak, "grown": grown}


#: How often free memory goes back to the OS (``malloc_trim``): about a millisecond of a
#: worker thread at a few hundred MB of heap.
RELEASE_EVERY = 60.0


class AllocatorTrim:
    """Gives the C allocator's free pages back to the operating system.

    Python returns what it frees to glibc's malloc, which keeps it: freed blocks below the top
    of a heap, and buffers of a size glibc has learnt to serve from the heap rather than from
    ``mmap`` (asyncio's 256 KiB SSL buffers, one per connection, after connections were
    opened anew when the API server restarted), stay in the process's RSS. The soak showed the
    daemon's RSS rising in steps at each API server fault while the Python heap stayed flat.
    ``malloc_trim(0)`` releases those pages; where there is no glibc it does nothing.
    """

    def __init__(self, library: str = "libc.so.6") -> None:
        self._trim: Callable[[int], int] | None = None
        try:
            libc = ctypes.CDLL(library)
            self._trim = libc.malloc_trim
        except (OSError, AttributeError):
            self._trim = None

    @property
    def available(self) -> bool:
        return self._trim is not None

    def trim(self) -> bool:
        """True when the allocator gave memory back."""
        return self._trim is not None and bool(self._trim(0))


async def release_free_memory(trimmer: AllocatorTrim, every: float = RELEASE_EVERY) -> None:
    """Runs for the daemon's life (a guarded task): trims the allocator every ``every``
    seconds, in a worker thread, since ctypes lets go of the GIL and the event loop goes on."""
    if not trimmer.available:
        log.info("the C allocator cannot be trimmed here: free memory stays with the process")
        await asyncio.Event().wait()
    while True:
        await asyncio.sleep(every)
        await asyncio.to_thread(trimmer.trim)
