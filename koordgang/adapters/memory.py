"""Where the daemon's memory goes, for leak hunts and soak tests (``traceMemory``).

With the setting on, ``tracemalloc`` runs from start-up and ``/debug/memory`` answers the
Python heap now and at the first look, and the allocation sites that grew most in between (by
file and line): a growth that does not level off over hours points at its line. Tracing costs
CPU and memory (roughly a third more of each), so it is off unless asked for.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

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
