"""CPU time and memory of processes, from /proc (Linux).

``CpuSampler`` reads the CPU time of several processes (daemon, kube-apiserver, etcd, kwok,
this benchmark) and of the whole machine twice a second, so a run can say how busy each was: on
a 2-core machine, a daemon at 100% of one core is the bottleneck; an API server and etcd sharing
both cores mean the ceiling is reached; and "others" (whatever else runs on the machine, such
as someone's test suite) says how much the figures are to be trusted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: The pseudo-process "the whole machine" in samples; ``others`` = machine - tracked processes.
MACHINE = "machine"
OTHERS = "others"


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of the process (its threads included), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; fields after it are space-separated.
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / CLOCK_TICKS


def machine_busy_seconds() -> float:
    """CPU time all cores spent on anything but idling since boot (first line of /proc/stat)."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    # guest time is already counted in user time.
    return (sum(fields[:8]) - idle) / CLOCK_TICKS


def memory_mb(pid: int, key: str = "VmHWM") -> float | None:
    """A line of /proc/<pid>/status in MB: VmHWM is the peak resident set, VmRSS the current."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return None


@dataclass
class CpuSampler:
    """Samples the CPU time of named processes every ``interval`` seconds."""

    pids: dict[str, int]
    interval: float = 0.5
    #: (time.monotonic(), {name: cpu seconds}).
    samples: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    def sample(self) -> float:
        """Takes a sample now; returns its time."""
        now = time.monotonic()
        values: dict[str, float] = {MACHINE: machine_busy_seconds()}
        for name, pid in self.pids.items():
            seconds = cpu_seconds(pid)
            if seconds is not None:
                values[name] = seconds
        self.samples.append((now, values))
        return now

    async def _run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(self.interval)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="cpu-sampler")

    async def stop(self) -> None:
        self.sample()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def cores(self, start: float, end: float) -> dict[str, float]:
        """Average cores each process used between two times, from the last sample at or
        before ``start`` to the first at or after ``end`` (take samples at both to be exact)."""
        if not self.samples or end <= start:
            return {}
        before = [s for s in self.samples if s[0] <= start + 1e-6] or self.samples[:1]
        after = [s for s in self.samples if s[0] >= end - 1e-6] or self.samples[-1:]
        first, last = before[-1], after[0]
        span = last[0] - first[0]
        if span <= 0:
            return {}
        cores = {
            name: (last[1][name] - first[1][name]) / span for name in last[1] if name in first[1]
        }
        machine = cores.pop(MACHINE, None)
        if machine is not None:
            cores[OTHERS] = max(0.0, machine - sum(cores.values()))
        return {name: round(value, 2) for name, value in cores.items()}

    def recent(self, seconds: float = 1.0) -> dict[str, float]:
        """Cores used over about the last ``seconds``."""
        if len(self.samples) < 2:
            return {}
        end = self.samples[-1][0]
        return self.cores(end - seconds, end)


def describe_cores(cores: Mapping[str, float]) -> str:
    return ", ".join(f"{name} {value:.2f}" for name, value in cores.items())
