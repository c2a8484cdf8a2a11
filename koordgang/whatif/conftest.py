"""The engine's fixtures (a whole Scheduler over a fake API and clock), for what-ifs on it."""

from koordgang.engine.conftest import (  # noqa: F401
    api,
    clock,
    instant_retries,
    make_scheduler,
    sched,
)
