"""The monotonic clock the engine is given: it moves only when a test moves it."""

from __future__ import annotations

#: The monotonic clock when a test starts, and the wall clock at monotonic 0.
START = 1_000.0
WALL0 = 1_700_000_000.0


class FakeClock:
    """Monotonic seconds; moves only when a test moves it. ``wall`` is the matching wall clock
    (seconds since the epoch), ``wall0`` at monotonic 0."""

    def __init__(self, start: float = START, *, wall0: float = WALL0) -> None:
        self.now = start
        self.wall0 = wall0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now

    def wall(self) -> float:
        return self.wall0 + self.now
