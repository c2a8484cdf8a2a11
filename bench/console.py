"""Progress lines, each stamped with the time since the benchmark started."""

from __future__ import annotations

import sys
import time

_STARTED = time.monotonic()


def say(text: str) -> None:
    elapsed = time.monotonic() - _STARTED
    sys.stdout.write(f"[{elapsed:7.1f} s] {text}\n")
    sys.stdout.flush()


class Ticker:
    """Says something at most every ``interval`` seconds, and always on the last item."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._last = time.monotonic()

    def due(self, final: bool = False) -> bool:
        now = time.monotonic()
        if final or now - self._last >= self.interval:
            self._last = now
            return True
        return False
