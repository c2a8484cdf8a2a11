"""The pytest fixtures over the engine fake, for the conftest.py files of the tests that run
the engine (they import them; pytest finds fixtures by name in a conftest):

- ``instant_retries`` (autouse where imported): ``with_retries`` waits nothing between
  attempts (its backoff is patched to zero), so a transient error costs a few event-loop
  turns, not seconds;
- ``clock``, ``api``: a ``FakeClock`` and a ``FakeApi`` of the test's own;
- ``make_scheduler``: makes harnesses over them (a restart is a second one), closed after the
  test; ``sched``: one made with the defaults.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import tenacity

from koordgang.clients import retry
from koordgang.settings import Settings
from koordgang.testing.api import FakeApi
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness, MakeScheduler


@pytest.fixture(autouse=True)
def instant_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """``with_retries`` backs off with tenacity's jittered exponential wait (0.1 s and up, real
    time); here it waits zero: tenacity then only yields to the event loop."""
    monkeypatch.setattr(retry, "wait_exponential_jitter", lambda **_: tenacity.wait_none())


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
async def make_scheduler(api: FakeApi, clock: FakeClock) -> AsyncIterator[MakeScheduler]:
    """Makes harnesses over the test's API and clock (a restart is a second one); settings are
    the defaults, with ``Settings`` fields given as keywords, except that a pod is told why it
    waits at once (``explain_after=0``) unless a test asks for the hold. Writers run unless
    told not to."""
    made: list[Harness] = []

    def make(
        *,
        writers: bool = True,
        workers: int | None = None,
        event_workers: int | None = None,
        **overrides: Any,
    ) -> Harness:
        harness = Harness(api, clock, Settings(**{"explain_after": 0.0, **overrides}))
        if writers:
            harness.start_writers(workers, event_workers)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.close()


@pytest.fixture
async def sched(make_scheduler: MakeScheduler) -> Harness:
    return make_scheduler()
