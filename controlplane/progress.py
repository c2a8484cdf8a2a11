"""Progress lines for humans: `starting etcd ... ok (0.8 s)` and build heartbeats.

Steps print their label first and their outcome when done, so a slow step shows what it is
waiting for while it waits. If something else must be said meanwhile, the open line is ended first.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO


def format_seconds(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


@dataclass
class StepOutcome:
    """What a step reports when it ends without an exception; the step body may change it."""

    word: str = "ok"


class Reporter:
    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        # None means "sys.stdout at the time of writing", so pytest's capture keeps working.
        self._stream = stream
        self._quiet = quiet
        self._open_label: str | None = None

    def line(self, text: str) -> None:
        self._close_open_line()
        self._write(text + "\n")

    @contextmanager
    def step(self, label: str) -> Iterator[StepOutcome]:
        self._close_open_line()
        self._write(f"{label} ... ")
        self._open_label = label
        outcome = StepOutcome()
        started = time.monotonic()
        try:
            yield outcome
        except BaseException:
            self._end(label, "failed")
            raise
        self._end(label, f"{outcome.word} ({format_seconds(time.monotonic() - started)})")

    def _end(self, label: str, text: str) -> None:
        if self._open_label == label:
            self._open_label = None
            self._write(text + "\n")
        else:
            self._write(f"{label}: {text}\n")

    def _close_open_line(self) -> None:
        if self._open_label is not None:
            self._open_label = None
            self._write("\n")

    def _write(self, text: str) -> None:
        if self._quiet:
            return
        stream = self._stream if self._stream is not None else sys.stdout
        stream.write(text)
        stream.flush()
