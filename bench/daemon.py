"""The scheduler under test as a child process: its readiness, its Prometheus counters, and
its CPU time and memory from /proc. ``BenchDaemon`` is koordgang (``python -m koordgang run``);
the peers (``bench.peers.process``) share the rest."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bench import procstats
from harness.daemon import REPO, free_port

#: Counters worth keeping per scenario: what the daemon did besides binding; its claims
#: allocated and batches given up over a device (DRA); and kube-scheduler's pod group cycles
#: (only with its gang gates on: its gangs were scheduled as groups).
COUNTERS = (
    "koordgang_binds",
    "scheduler_schedule_attempts",
    "koordgang_api_writes",
    "koordgang_dra_allocations",
    "koordgang_dra_conflicts",
    "scheduler_podgroup_schedule_attempts",
)
#: Histograms whose mean is worth keeping: how long a bind and a scheduling cycle take, and
#: how long a job held nodes (starvation guard) before it was bound; a pod's devices chosen.
HISTOGRAMS = (
    "koordgang_binding_duration_seconds",
    "scheduler_scheduling_attempt_duration_seconds",
    "koordgang_reservation_wait_seconds",
    "koordgang_dra_allocation_seconds",
)


class DaemonFailed(RuntimeError):
    pass


class SchedulerProcess:
    """One scheduler run as a child process, logging to ``log_path``."""

    #: How it is called in messages.
    name = "scheduler"
    #: The path answering 200 once it schedules (``/readyz``; ``/healthz`` where there is none).
    ready_path = "/readyz"

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> float:
        """Spawns the scheduler; returns time.monotonic() just before the spawn."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        argv = self.argv()
        with self.log_path.open("ab") as log:
            self.started_at = time.monotonic()
            self.process = subprocess.Popen(
                argv,
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        return self.started_at

    def check_alive(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise DaemonFailed(f"{self.name} exited with {self.process.returncode}:\n{tail}")

    async def wait_ready(self, session: aiohttp.ClientSession, timeout: float = 180) -> float:
        """Polls ``ready_path`` every 20 ms; returns time.monotonic() of the first 200."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                async with session.get(
                    self.url + self.ready_path,
                    timeout=aiohttp.ClientTimeout(total=1),
                    ssl=False,
                ) as reply:
                    await reply.read()
                    if reply.status == 200:
                        return time.monotonic()
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(0.02)
        raise DaemonFailed(f"{self.name} not ready after {timeout:.0f} s; see {self.log_path}")

    def cpu_seconds(self) -> float | None:
        return procstats.cpu_seconds(self.pid)

    def peak_rss_mb(self) -> float | None:
        return procstats.memory_mb(self.pid, "VmHWM")

    async def counters(self, session: aiohttp.ClientSession) -> dict[str, float]:
        """Selected Prometheus counters, as ``name{label=value}`` -> value, and the mean of
        selected histograms in milliseconds, as ``name_mean_ms{label=value}``."""
        try:
            async with session.get(
                self.url + "/metrics", timeout=aiohttp.ClientTimeout(total=5), ssl=False
            ) as reply:
                text = await reply.text()
        except (aiohttp.ClientError, TimeoutError):
            return {}
        values: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            if family.name in COUNTERS:
                for sample in family.samples:
                    if sample.name.endswith("_total"):
                        values[f"{family.name}{{{_labels(sample.labels)}}}"] = sample.value
            elif family.name in HISTOGRAMS:
                sums = {
                    _labels(s.labels): s.value for s in family.samples if s.name.endswith("_sum")
                }
                for sample in family.samples:
                    labels = _labels(sample.labels)
                    if sample.name.endswith("_count") and sample.value and labels in sums:
                        mean_ms = 1000 * sums[labels] / sample.value
                        values[f"{family.name}_mean_ms{{{labels}}}"] = round(mean_ms, 2)
        return values

    async def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM, as Kubernetes does; SIGKILL if it has not exited after ``timeout``."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.to_thread(self.process.wait, timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


class BenchDaemon(SchedulerProcess):
    """koordgang, from this checkout."""

    name = "koordgang"

    def __init__(self, kubeconfig: Path, log_path: Path, extra_args: Sequence[str] = ()) -> None:
        super().__init__(log_path)
        self.kubeconfig = kubeconfig
        self.extra_args = tuple(extra_args)

    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "koordgang",
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--http-port",
            str(self.port),
            "--http-host",
            "127.0.0.1",
            "--log-format",
            "json",
            "--log-level",
            "warning",
            *self.extra_args,
        ]


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
