"""One real client as a child process of a test: built if needed (cached), spawned with its
output in a log file, considered started once it says so, and stopped with SIGTERM (SIGKILL
after a grace period). Each client module says how it is run (``argv``, ``environment``) and
how it shows that it has started (``not_started_yet``)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from controlplane.build import GoBinary, ensure_built
from controlplane.progress import Reporter


class ClientFailed(RuntimeError):
    """The client exited, or did not start in time."""


class ClientProcess:
    """Base of every client runner. Subclasses set ``binary_spec`` and implement ``argv`` and
    ``not_started_yet``."""

    binary_spec: GoBinary

    def __init__(
        self,
        kubeconfig: Path | str,
        log_path: Path | str,
        *,
        binary: Path | None = None,
        extra_args: Sequence[str] = (),
        reporter: Reporter | None = None,
    ) -> None:
        self.kubeconfig = Path(kubeconfig)
        self.log_path = Path(log_path)
        self.binary = binary
        self.extra_args = list(extra_args)
        self.reporter = reporter or Reporter()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def name(self) -> str:
        return self.binary_spec.name

    # -- what a client says of itself ----------------------------------------------------------

    def argv(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        """The child's environment: ours, with KUBECONFIG pointing at the test's cluster (several
        clients read it before their flags)."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        return env

    def not_started_yet(self) -> str | None:
        """None once the client has started its controllers; else what it has not done yet."""
        raise NotImplementedError

    def describe(self) -> str:
        """What ``start`` shows while it waits."""
        return f"starting {self.name}"

    def before_start(self) -> None:
        """Checks made before spawning (a port the client binds that we cannot choose)."""

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, timeout: float = 90.0) -> None:
        if self.binary is None:
            self.binary = ensure_built(self.reporter, [self.name], (self.binary_spec,))[self.name]
        self.before_start()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.reporter.step(self.describe()):
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    self.argv(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.environment(),
                )
            try:
                self._wait_started(timeout)
            except BaseException:
                self.stop()
                raise

    def _wait_started(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            missing = self.not_started_yet()
            if missing is None:
                return
            if time.monotonic() > deadline:
                raise ClientFailed(
                    f"{self.name} did not start within {timeout:.0f} s: {missing}; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.2)

    def check_alive(self) -> None:
        if self.process is None:
            raise ClientFailed(f"{self.name} was not started")
        if self.process.poll() is not None:
            raise ClientFailed(
                f"{self.name} exited with {self.process.returncode}; "
                f"log {self.log_path}:\n{self.log_tail()}"
            )

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit code (None: not started)."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return process.returncode

    # -- reading what it said --------------------------------------------------------------------

    def log_lines(self) -> list[str]:
        try:
            return self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []

    def logged(self, *fragments: str) -> bool:
        """Whether one line of the log holds every fragment."""
        return any(all(f in line for f in fragments) for line in self.log_lines())

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def __enter__(self) -> ClientProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def http_ok(url: str) -> bool:
    """Whether ``url`` answers 200 (a client's health or readiness endpoint)."""
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def without(env: Mapping[str, str], *names: str) -> dict[str, str]:
    """``env`` without the named variables (ones that would narrow a client behind our back)."""
    return {k: v for k, v in env.items() if k not in names}
