"""Log lines go to stderr; a stream that will not take them loses them, nothing raises."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from koordgang.logs import configure_logging
from koordgang.settings import LogFormat


class BrokenPipe(io.StringIO):
    """stderr after whoever read it went away."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    config = structlog.get_config()
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.configure(**config)


def test_json_lines_go_to_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    configure_logging(LogFormat.JSON, "info")

    structlog.get_logger("t").info("bound", pod="p")
    logging.getLogger("kopf").warning("from a library")

    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert (first["event"], first["pod"], first["level"]) == ("bound", "p", "info")
    assert (second["event"], second["logger"]) == ("from a library", "kopf")


def test_a_stream_that_takes_no_more_lines_loses_them_and_raises_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stderr", BrokenPipe())
    configure_logging(LogFormat.JSON, "info")

    structlog.get_logger("t").info("signal received: stopping", signal="SIGTERM")
    logging.getLogger("kopf").error("from a library")
