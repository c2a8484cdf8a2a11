"""SIGTERM and SIGINT, any number at once, give one clean shutdown: no traceback, exit 0.

kopf's own handlers resolve a future, and a second signal handled before our cleanup hook
(two that arrive together: a process-group or cgroup kill) resolved it again: asyncio printed
an ``InvalidStateError`` traceback. ``StopSignals`` takes their place.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from koordgang.adapters.kopf_runtime import StopSignals

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix signals")


def _signal_main_thread(*signals: signal.Signals) -> None:
    """Each signal is handled by the C handler before the next is sent (a thread-directed
    signal to oneself is delivered before ``pthread_kill`` returns), so none coalesce, and
    the loop sees them all in one read of its wake-up pipe: "at once"."""
    for sig in signals:
        signal.pthread_kill(threading.get_ident(), sig)


def _run_with_signals(install: Callable[[asyncio.Event], Any]) -> tuple[Any, list[Any]]:
    """Installs handlers, sends SIGTERM, SIGTERM and SIGINT at once, lets the loop run; the
    handlers' owner and what the loop's exception handler was given."""
    errors: list[Any] = []

    async def main() -> Any:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: errors.append(context))
        owner = install(asyncio.Event())
        _signal_main_thread(signal.SIGTERM, signal.SIGTERM, signal.SIGINT)
        await asyncio.sleep(0.05)
        return owner

    return asyncio.run(main()), errors


def test_the_signals_at_once_stop_once_and_raise_nothing() -> None:
    def install(stop_flag: asyncio.Event) -> tuple[StopSignals, asyncio.Event]:
        signals = StopSignals(stop_flag, kill_after=600)
        assert signals.install()
        return signals, stop_flag

    (signals, stop_flag), errors = _run_with_signals(install)
    assert signals.received == [signal.SIGTERM, signal.SIGTERM, signal.SIGINT]
    assert stop_flag.is_set()
    assert errors == []
    # kopf's last resort, armed once (it never fires here: the loop is closed).
    assert signals.kill_timer is not None
    assert signals.kill_timer.when() - time.monotonic() > 590


def test_kopfs_way_of_handling_them_is_what_failed() -> None:
    """The same signals, handled as kopf does: the second one is the traceback."""

    def install(_: asyncio.Event) -> asyncio.Future[signal.Signals]:
        loop = asyncio.get_running_loop()
        flag: asyncio.Future[signal.Signals] = loop.create_future()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, flag.set_result, sig)
        return flag

    flag, errors = _run_with_signals(install)
    assert flag.result() is signal.SIGTERM
    assert [type(e.get("exception")) for e in errors] == [asyncio.InvalidStateError] * 2


def test_a_signal_after_a_stop_for_another_reason_is_only_logged() -> None:
    async def main() -> StopSignals:
        stop_flag = asyncio.Event()
        stop_flag.set()  # e.g. a guarded task failed
        signals = StopSignals(stop_flag, kill_after=600)
        assert signals.install()
        _signal_main_thread(signal.SIGTERM)
        await asyncio.sleep(0.05)
        return signals

    signals = asyncio.run(main())
    assert signals.received == [signal.SIGTERM]
    assert signals.kill_timer is None  # whoever raised the flag stops the daemon


# -- the daemon itself ---------------------------------------------------------------------


@pytest.fixture
def unreachable_kubeconfig(tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig whose API server refuses connections (a port bound, never listened on)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = tmp_path / "kubeconfig"
        config.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\n"
            "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        )
        yield config


def _wait_for(path: Path, text: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        assert process.poll() is None, path.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, f"no {text!r} in {timeout} s"
        time.sleep(0.1)


def test_the_daemon_shuts_down_once_and_cleanly_on_signals_at_once(
    unreachable_kubeconfig: Path, tmp_path: Path
) -> None:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("KOORDGANG_") and k != "KUBECONFIG"
    }
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "koordgang", "run", "--http-port", "0", "--log-format",
             "console", "--kubeconfig", str(unreachable_kubeconfig)],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=env,
        )  # fmt: skip
        try:
            # Logged by our startup hook, which kopf runs after installing its handlers, once
            # the first listings are over (failed: nothing listens) and the scheduler started.
            _wait_for(stderr, "scheduling from now on", process, timeout=60)
            # Stopped, the daemon receives them all together when it continues (two SIGTERMs
            # pending at once are one; SIGTERM and SIGINT are two, which was the traceback).
            process.send_signal(signal.SIGSTOP)
            for sig in (signal.SIGTERM, signal.SIGTERM, signal.SIGINT):
                process.send_signal(sig)
            process.send_signal(signal.SIGCONT)
            returncode = process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    logs = stderr.read_text(errors="replace")
    assert "Traceback" not in logs, logs[-3000:]
    assert "InvalidStateError" not in logs
    assert logs.count("signal received: stopping") == 1
    assert "already shutting down" in logs
    assert logs.count("scheduler stopped") == 1
    assert returncode == 0
