"""Start the control plane's processes detached, find them again from pid files, stop them.

Each process runs in a session of its own, so that `make cluster-up` can return while they keep
running and a Ctrl-C in the terminal does not reach them. A pid file records the pid together
with the process's start time from /proc, so that a pid reused by an unrelated process after a
reboot or a crash is never mistaken for ours (and never signalled).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

# Processes this Python process started: polling them reaps them, so a stopped child does not
# linger as a zombie that still looks alive to kill(pid, 0).
_children: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class ProcessRecord:
    name: str
    pid: int
    # Field 22 of /proc/<pid>/stat (clock ticks after boot); None where /proc is unavailable.
    start_ticks: int | None
    log_file: str

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self)) + "\n")

    @classmethod
    def load(cls, path: Path) -> ProcessRecord | None:
        try:
            data = json.loads(path.read_text())
            return cls(
                name=str(data["name"]),
                pid=int(data["pid"]),
                start_ticks=None if data["start_ticks"] is None else int(data["start_ticks"]),
                log_file=str(data["log_file"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None


def start_process(
    name: str,
    argv: Sequence[str],
    *,
    log_file: Path,
    pid_file: Path,
    cwd: Path,
    extra_env: Mapping[str, str] | None = None,
) -> ProcessRecord:
    log_file.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(extra_env or {})
    with log_file.open("ab") as log:
        child = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _children[child.pid] = child
    record = ProcessRecord(
        name=name, pid=child.pid, start_ticks=_start_ticks(child.pid), log_file=str(log_file)
    )
    record.save(pid_file)
    return record


def is_running(record: ProcessRecord) -> bool:
    child = _children.get(record.pid)
    if child is not None and child.poll() is not None:
        del _children[record.pid]
        return False
    stat = _read_stat(record.pid)
    if stat is None:
        if Path("/proc/self/stat").exists():
            return False
        return _signal_reaches(record.pid)  # no /proc: best effort
    state, start_ticks = stat
    if state in ("Z", "X"):
        return False
    return record.start_ticks is None or start_ticks == record.start_ticks


def stop_process(record: ProcessRecord, timeout: float = 15.0) -> str:
    """SIGTERM, wait up to `timeout`, then SIGKILL. Returns what happened, for the user."""
    if not is_running(record):
        return "was not running"
    started = time.monotonic()
    _signal_group(record.pid, signal.SIGTERM)
    if _wait_gone(record, timeout):
        return f"stopped ({time.monotonic() - started:.1f} s)"
    _signal_group(record.pid, signal.SIGKILL)
    if _wait_gone(record, 5.0):
        return f"killed after {timeout:.0f} s without exiting on SIGTERM"
    raise RuntimeError(f"{record.name} (pid {record.pid}) survived SIGKILL")


def signal_process(record: ProcessRecord, signum: int) -> None:
    """Sends ``signum`` to a running process of ours and its group (SIGSTOP/SIGCONT freeze
    and thaw it); does nothing if it is not running."""
    if is_running(record):
        _signal_group(record.pid, signum)


def executable(record: ProcessRecord) -> Path | None:
    """The file the process runs, or None if that cannot be told (no /proc, or it was deleted)."""
    try:
        target = os.readlink(f"/proc/{record.pid}/exe")
    except OSError:
        return None
    return None if target.endswith(" (deleted)") else Path(target)


def arguments(record: ProcessRecord) -> list[str] | None:
    """The process's command-line arguments, or None if they cannot be told (no /proc)."""
    try:
        raw = Path(f"/proc/{record.pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def log_tail(record: ProcessRecord, lines: int = 25) -> str:
    try:
        text = Path(record.log_file).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _signal_group(pid: int, signum: int) -> None:
    # The process leads its own session and group (start_new_session), so signalling the
    # group also reaches anything it may have spawned.
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, signum)


def _wait_gone(record: ProcessRecord, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_running(record):
            return True
        time.sleep(0.05)
    return not is_running(record)


def _read_stat(pid: int) -> tuple[str, int] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses; fields after it do not.
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def _start_ticks(pid: int) -> int | None:
    stat = _read_stat(pid)
    return None if stat is None else stat[1]


def _signal_reaches(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
