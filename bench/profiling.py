"""Optional (``--profile``): py-spy samples the daemon while it schedules, and the benchmark
prints the functions where it spent its time.

py-spy attaches to the running daemon (``--nonblocking``: it does not pause it) once it is
ready (at its start for a start-up scenario), and writes collapsed stacks when the scenario is
over. Sampling costs a few percent of a core, so figures of a profiled run are a little lower
than those of a plain one.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

RATE_HZ = 50
_LINE_NUMBER = re.compile(r":\d+\)$")
#: The event loop waiting for I/O: the top frame of an idle sample.
_IDLE = ("(selectors.py)",)


def py_spy() -> str | None:
    beside_python = Path(sys.executable).with_name("py-spy")
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("py-spy")


class Profiler:
    def __init__(self, pid: int, output: Path) -> None:
        self.pid = pid
        self.output = output
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self, attempts: int = 6) -> bool:
        """Attaches py-spy; retries while the daemon's interpreter is still starting up (py-spy
        cannot find it yet). False if py-spy is missing or never attached."""
        binary = py_spy()
        if binary is None:
            return False
        self.output.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(attempts):
            self.process = self._spawn(binary)
            await asyncio.sleep(0.4)
            if self.process.poll() is None:
                return True
        self.process = None
        return False

    def _spawn(self, binary: str) -> subprocess.Popen[bytes]:
        with self.output.with_suffix(".log").open("ab") as log:
            return subprocess.Popen(
                [
                    binary,
                    "record",
                    "--pid",
                    str(self.pid),
                    "--rate",
                    str(RATE_HZ),
                    "--format",
                    "raw",
                    "--nonblocking",
                    # Keep samples of the loop waiting, so that shares are of wall time.
                    "--idle",
                    "--output",
                    str(self.output),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        """Ends sampling now (py-spy writes its file on SIGINT), so that the daemon's shutdown
        is not part of the profile."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)

    async def finish(self, timeout: float = 20) -> None:
        """Waits for py-spy to write its file."""
        if self.process is None:
            return
        try:
            await asyncio.to_thread(self.process.wait, timeout)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait()


def _frames(stack: str) -> list[str]:
    return [_LINE_NUMBER.sub(")", frame) for frame in stack.split(";") if frame]


#: koordgang frames that only start things (the entry point and the event loop's runner).
_ENTRY = ("(koordgang/__main__.py)", "(koordgang/cli.py)", "(koordgang/app.py)")


def _requester(frames: list[str]) -> str:
    """The deepest koordgang function outside the API client on the stack: who asked for the
    work being done (the binder, the reporter, the informer, a scheduling cycle, ...)."""
    for frame in reversed(frames):
        if "(koordgang/" in frame and "(koordgang/clients/" not in frame:
            if frame.endswith(_ENTRY):
                break
            return frame
    for frame in reversed(frames):
        if "(koordgang/clients/" in frame:
            return frame
    return "(event loop callbacks: socket, TLS and HTTP reading in aiohttp)"


def _other_thread(frames: list[str]) -> bool:
    """Stacks of threads other than the event loop's (an idle executor worker, mostly)."""
    return frames[0].startswith("Thread._bootstrap")


def top_entries(collapsed: Path, count: int = 15) -> list[str]:
    """The functions with the most samples: by own time (the frame on top of the stack) and by
    total time (anywhere on the stack), with the idle event loop set apart."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    caller: Counter[str] = Counter()
    samples = 0
    idle = 0
    try:
        lines = collapsed.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        stack, _, number = line.rpartition(" ")
        if not number.isdigit():
            continue
        hits = int(number)
        frames = _frames(stack)
        if not frames or _other_thread(frames):
            continue
        samples += hits
        if frames[-1].endswith(_IDLE):
            idle += hits
            continue
        own[frames[-1]] += hits
        caller[_requester(frames)] += hits
        for frame in set(frames):
            total[frame] += hits
    if not samples:
        return []
    report = [
        f"{samples} samples of the event loop's thread at {RATE_HZ} Hz, "
        f"{100 * idle / samples:.0f}% of them waiting in epoll (shares below are of all samples)"
    ]
    report.append("by requester (the deepest koordgang function outside clients/, calls included):")
    report += [f"  {100 * n / samples:5.1f}%  {name}" for name, n in caller.most_common(count)]
    report.append("own time:")
    report += [f"  {100 * n / samples:5.1f}%  {name}" for name, n in own.most_common(count)]
    report.append("total time (excluding the event loop's own frames):")
    busy = [
        (name, n)
        for name, n in total.most_common(count * 4)
        if not name.startswith(("<module>", "run (", "_run_module", "_run_code", "main ("))
        and "asyncio/" not in name
    ]
    report += [f"  {100 * n / samples:5.1f}%  {name}" for name, n in busy[:count]]
    return report
