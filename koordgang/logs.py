"""structlog set-up: JSON lines for clusters, readable lines for people."""

from __future__ import annotations

import logging
import sys
import threading
from typing import TextIO

import structlog

from koordgang.settings import LogFormat


class StreamLogger:
    """structlog's ``PrintLogger``, except that a line the stream will not take is lost
    rather than raised: when whoever reads the daemon's output goes away (a broken pipe), a
    log call must not stop the daemon from scheduling, nor from stopping on SIGTERM."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def msg(self, message: str) -> None:
        with self._lock:
            try:
                self._stream.write(message + "\n")
                self._stream.flush()
            except (OSError, ValueError):  # a broken pipe, a closed stream
                pass

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


def configure_logging(fmt: LogFormat, level: str) -> None:
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    renderer: structlog.types.Processor
    if fmt is LogFormat.JSON:
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    stream = StreamLogger(sys.stderr)  # one for every logger: one lock around the stream
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=lambda *_: stream,
        cache_logger_on_first_use=True,
    )
    # Libraries (kopf, aiohttp) log through the standard library: same format, same stream.
    handler = _QuietStreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)


class _QuietStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The standard library's handler reports a failed write with a traceback on the same
    stream; one that will not take lines (see ``StreamLogger``) loses them quietly."""

    def handleError(self, record: logging.LogRecord) -> None:
        pass
