"""Supervisor: guarded tasks are restarted with backoff, a few times per window, then the daemon
gives up; ``problems()`` (what /healthz serves) names a failing task until a window passed.

Restarts are timed by the event loop (``call_later``), failures are counted on the clock given
to the Supervisor (a FakeClock here); backoffs are a few milliseconds."""

from __future__ import annotations

import asyncio

from koordgang.engine.tasks import Supervisor
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import node, pod
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import MakeScheduler, until

BACKOFF = 0.002
WINDOW = 300.0


class Crashes:
    """A task factory whose task fails at once (``fail``) or runs until cancelled."""

    def __init__(self, clock: FakeClock, *, fail: int = 10**9, step: float = 0.0) -> None:
        self.clock = clock
        self.starts: list[float] = []  # event-loop times of each start
        self.fail = fail
        self.step = step
        self.cancelled = 0

    async def __call__(self) -> None:
        self.starts.append(asyncio.get_running_loop().time())
        if len(self.starts) <= self.fail:
            self.clock.advance(self.step)
            raise RuntimeError(f"boom {len(self.starts)}")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


class Fatal:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.event = asyncio.Event()

    def __call__(self, name: str, reason: str) -> None:
        self.calls.append((name, reason))
        self.event.set()


def supervisor(
    clock: FakeClock, fatal: Fatal, *, max_restarts: int = 3, backoff: float = BACKOFF
) -> Supervisor:
    return Supervisor(
        on_fatal=fatal,
        clock=clock,
        max_restarts=max_restarts,
        window=WINDOW,
        backoff=backoff,
        max_backoff=1.0,
    )


async def test_a_failing_task_is_restarted_with_backoff_then_the_daemon_gives_up(
    clock: FakeClock,
) -> None:
    fatal = Fatal()
    crashes = Crashes(clock)
    guard = supervisor(clock, fatal)

    guard.spawn("writer", crashes)
    # A bound for a machine starved of CPU, not a timing: the backoffs are milliseconds.
    await asyncio.wait_for(fatal.event.wait(), timeout=30.0)

    assert len(crashes.starts) == 4  # the first run and max_restarts restarts
    gaps = [b - a for a, b in zip(crashes.starts, crashes.starts[1:], strict=False)]
    for gap, expected in zip(gaps, (BACKOFF, 2 * BACKOFF, 4 * BACKOFF), strict=True):
        assert gap >= expected * 0.9, f"restarted after {gap:.4f} s, backoff {expected}"
    assert fatal.calls == [("writer", "RuntimeError('boom 4')")]
    [line] = guard.problems()
    assert line.startswith("task writer failed 4 time(s) in the last 300 s (restarting;")
    assert "boom 4" in line

    await asyncio.sleep(8 * BACKOFF)
    assert len(crashes.starts) == 4  # given up: not started again
    await guard.stop()


async def test_failures_older_than_the_window_do_not_count(clock: FakeClock) -> None:
    fatal = Fatal()
    crashes = Crashes(clock, fail=6, step=WINDOW)  # each failure a whole window after the last
    guard = supervisor(clock, fatal)

    guard.spawn("loop", crashes)
    for _ in range(200):
        if len(crashes.starts) == 7:
            break
        await asyncio.sleep(BACKOFF)

    assert len(crashes.starts) == 7
    assert fatal.calls == []
    await guard.stop()


async def test_problems_name_a_failing_task_until_a_window_passed_without_failure(
    clock: FakeClock,
) -> None:
    fatal = Fatal()
    crashes = Crashes(clock, fail=1)
    guard = supervisor(clock, fatal)
    quiet = Crashes(clock, fail=0)

    guard.spawn("status-writer", crashes)
    guard.spawn("reporter-0", quiet)
    for _ in range(100):
        if len(crashes.starts) == 2:
            break
        await asyncio.sleep(BACKOFF)
    assert len(crashes.starts) == 2

    [line] = guard.problems()
    assert line.startswith("task status-writer failed 1 time(s)")
    assert "running again" in line and "boom 1" in line

    clock.advance(WINDOW - 0.001)
    assert len(guard.problems()) == 1
    clock.advance(0.001)
    assert guard.problems() == []
    assert fatal.calls == []
    assert sorted(guard.names()) == ["reporter-0", "status-writer"]
    await guard.stop()


async def test_a_task_that_returns_while_it_should_run_on_counts_as_failed(
    clock: FakeClock,
) -> None:
    fatal = Fatal()
    guard = supervisor(clock, fatal, max_restarts=0)
    runs = 0

    async def returns() -> None:
        nonlocal runs
        runs += 1

    guard.spawn("scheduling-loop", returns)
    await asyncio.wait_for(fatal.event.wait(), timeout=30.0)

    assert runs == 1
    assert fatal.calls == [("scheduling-loop", "ended while it should run on")]
    assert "ended while it should run on" in guard.problems()[0]
    await guard.stop()


async def test_stop_cancels_running_tasks_and_restarts_nothing(clock: FakeClock) -> None:
    fatal = Fatal()
    guard = supervisor(clock, fatal, backoff=0.005)
    running = Crashes(clock, fail=0)
    failing = Crashes(clock)

    guard.spawn("runs", running)
    guard.spawn("fails", failing)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(failing.starts) == 1  # failed; its restart is due in 5 ms

    await guard.stop()
    assert running.cancelled == 1
    await asyncio.sleep(0.015)
    assert len(failing.starts) == 1
    assert len(running.starts) == 1
    assert fatal.calls == []
    [line] = guard.problems()  # the task that failed; the one stopped is no problem
    assert line.startswith("task fails failed 1 time(s)")


async def test_a_task_that_ends_on_its_own_while_stopping_is_not_counted_as_failed(
    clock: FakeClock,
) -> None:
    fatal = Fatal()
    guard = supervisor(clock, fatal, max_restarts=0)
    started = asyncio.Event()

    async def finishes_its_work_when_cancelled() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return  # swallows the cancellation: the task ends normally

    guard.spawn("reporter-0", finishes_its_work_when_cancelled)
    await started.wait()
    await guard.stop()
    await asyncio.sleep(0)

    assert fatal.calls == []
    assert guard.problems() == []


async def test_a_graceful_stop_is_not_taken_for_its_tasks_failing(
    make_scheduler: MakeScheduler, api: FakeApi, clock: FakeClock
) -> None:
    sched = make_scheduler(writers=False)
    fatal = Fatal()
    guard = supervisor(clock, fatal, backoff=0.001)  # the daemon's 1 s, scaled down
    gate = api.hold(lambda call: call.path.endswith("/binding"))
    sched.list(nodes=[node("n1")], pods=[pod("p")])
    sched.scheduler.start(guard)
    assert await until(lambda: api.active["bind"] == 1)

    # As App.stop does: the supervisor stands down, the scheduler stops (binds drain for a
    # while, its tasks end), then the supervisor cancels whatever is left.
    guard.stand_down()
    stopping = asyncio.create_task(sched.scheduler.stop(grace=5.0))
    await asyncio.sleep(0.05)  # the bind takes 50 ms more
    gate.set()
    await asyncio.wait_for(stopping, timeout=30.0)
    await guard.stop()

    assert fatal.calls == []


async def test_a_one_shot_task_that_fails_is_neither_restarted_nor_a_problem() -> None:
    clock, fatal = FakeClock(), Fatal()
    sup = supervisor(clock, fatal)
    crashes = Crashes(clock, fail=1)
    sup.start_once("warm", crashes)
    await asyncio.sleep(BACKOFF * 20)
    assert len(crashes.starts) == 1
    assert sup.problems() == [] and fatal.calls == []
    sup.start_once("warm", crashes)  # ended: may run again
    await asyncio.sleep(BACKOFF * 5)
    assert len(crashes.starts) == 2
    await sup.stop()


async def test_a_one_shot_task_runs_once_at_a_time_and_is_cancelled_at_stop() -> None:
    clock, fatal = FakeClock(), Fatal()
    sup = supervisor(clock, fatal)
    runs = Crashes(clock, fail=0)
    sup.start_once("warm", runs)
    sup.start_once("warm", runs)
    await asyncio.sleep(BACKOFF * 5)
    assert len(runs.starts) == 1
    await sup.stop()
    assert runs.cancelled == 1
