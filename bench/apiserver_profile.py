"""``--apiserver-profile``: CPU profiles of kube-apiserver over each measurement window, and
the share of them its garbage collector took.

Why: ``apiserver_stats`` reads the collector from ``/metrics``, where the runtime adds a cycle
(and its CPU) only once the cycle completes, so a cycle still marking when a window ends shows
as none. In contention's windows of about a second, one collection or none made the
difference between about 600 and 950 pods/s, and only profiles showed it. Go's profile
endpoint samples for a fixed time, so profiles of one second are taken back to back from the
scheduler's readiness until the window ends (the last one runs up to a second past it), and
``go tool pprof`` merges them.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bench.cluster import BenchCluster

#: Seconds each profile samples.
CHUNK_SECONDS = 1
#: Where the collector's CPU is rooted in a Go profile: background marking and the marking
#: allocating goroutines are made to do.
GC_ROOTS = ("runtime.gcBgMarkWorker", "runtime.gcAssistAlloc")
#: Note keys.
SAMPLED_KEY = "apiserver_profile_cpu_s"
GC_KEY = "apiserver_profile_gc_cpu_s"

_TOTAL = re.compile(r"Total samples = ([0-9.]+)(ms|s)\b")
_AMOUNT = re.compile(r"^([0-9.]+)(ms|s)$")


@dataclass
class ApiServerProfiler:
    """Takes one-second CPU profiles of the API server until stopped, each to a file."""

    cluster: BenchCluster
    folder: Path
    stem: str
    paths: list[Path] = field(default_factory=list)
    problem: str = ""
    _stopping: bool = False
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"apiserver-profile-{self.stem}"
        )

    async def stop(self) -> list[Path]:
        """Lets the profile under way finish (up to CHUNK_SECONDS) and returns the files."""
        self._stopping = True
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout=CHUNK_SECONDS + 15)
            except TimeoutError:
                self.problem = self.problem or "the API server's profile did not come back"
        return self.paths

    async def _run(self) -> None:
        path = f"/debug/pprof/profile?seconds={CHUNK_SECONDS}"
        while not self._stopping:
            try:
                status, data = await self.cluster.get_raw(
                    path, "application/octet-stream", CHUNK_SECONDS + 10
                )
            except (aiohttp.ClientError, TimeoutError) as error:
                self.problem = f"the API server's profile failed: {error!r}"
                return
            if status >= 400:
                self.problem = (
                    f"the API server refused a profile ({status}: "
                    f"{data[:200].decode(errors='replace')})"
                )
                return
            saved = self.folder / f"{self.stem}-{len(self.paths)}.pb.gz"
            saved.write_bytes(data)
            self.paths.append(saved)


def _seconds(text: str) -> float | None:
    match = _AMOUNT.match(text)
    if match is None:
        return None
    value = float(match.group(1))
    return value / 1000 if match.group(2) == "ms" else value


def gc_share(top: str) -> tuple[float, float] | None:
    """(CPU seconds sampled, of which the collector's) from ``go tool pprof -top -cum``'s
    text; None when it holds no total."""
    total = _TOTAL.search(top)
    if total is None:
        return None
    sampled = float(total.group(1)) / (1000 if total.group(2) == "ms" else 1)
    collector = 0.0
    for line in top.splitlines():
        columns = line.split()
        # flat flat% sum% cum cum% name
        if len(columns) >= 6 and columns[5] in GC_ROOTS:
            collector += _seconds(columns[3]) or 0.0
    return sampled, collector


async def summarise(paths: Sequence[Path]) -> tuple[float, float] | str:
    """The profiles merged by ``go tool pprof``: (sampled, collector's) CPU seconds, or why
    there is no figure."""
    go = shutil.which("go")
    if go is None:
        return "no figure: go is not on PATH (the profiles are kept)"
    if not paths:
        return "no figure: no profile came back"

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [go, "tool", "pprof", "-top", "-cum", "-nodefraction=0", *map(str, paths)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    try:
        done = await asyncio.to_thread(run)
    except subprocess.TimeoutExpired:
        return "no figure: go tool pprof took more than 120 s"
    share = gc_share(done.stdout)
    if share is None:
        return f"no figure: go tool pprof said {done.stderr.strip()[:200]!r}"
    return share
