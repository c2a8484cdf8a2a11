"""The daemon as its image and manifests run it, without Docker: as uid/gid 65532 (the
Dockerfile's USER), on a read-only root file system (the Deployment's
readOnlyRootFilesystem) with an empty, writable directory as HOME and TMPDIR (its emptyDir),
and with no bytecode written (PYTHONDONTWRITEBYTECODE, as the image sets). A private mount namespace
(``unshare -m``) remounts / read-only for the daemon alone; ``setpriv`` drops to the user.

It must start, schedule a gang, and stop cleanly on SIGTERM, with no write refused in its log.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import pytest

from harness.daemon import REPO, free_port
from harness.gangs import GangBook, wait_bound
from harness.kube import Cluster, wait_until
from harness.rbac import NAMESPACE

#: The Dockerfile's ``USER``.
IMAGE_UID = 65532
#: What the root file system refused, as Python or the daemon would log it.
REFUSED = ("Read-only file system", "Permission denied")

pytestmark = pytest.mark.skipif(
    os.environ.get("KOORDGANG_E2E_DAEMON") == "deployment",
    reason="runs a daemon process of its own, as the image would",
)


def _ready(port: int, process: subprocess.Popen[bytes], log: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(
            f"the daemon exited with {process.returncode}:\n{log.read_text()[-4000:]}"
        )
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def _python_under(mount: Path) -> Path:
    """The test's interpreter as seen under the bind mount ``mount`` of the checkout."""
    executable = Path(sys.executable)
    try:
        return mount / executable.relative_to(REPO)
    except ValueError:
        return executable


def test_the_daemon_runs_as_uid_65532_on_a_read_only_root_file_system(
    clean_nodes: Cluster,
    namespace: str,
    scheduler_kubeconfig: str,
    gang_book: GangBook,
    tmp_path: Path,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["ro-1", "ro-2"], {"cpu": "4", "memory": "8Gi"})
    # The kubeconfig where the user can read it once / is read-only and /tmp is replaced:
    # /dev/shm is a mount of its own (as in a pod), left writable by the remount.
    shared = Path(tempfile.mkdtemp(prefix="koordgang-ro-", dir="/dev/shm"))
    try:
        kubeconfig = shared / "kubeconfig"
        shutil.copyfile(scheduler_kubeconfig, kubeconfig)
        shared.chmod(0o755)
        kubeconfig.chmod(0o644)
        port = free_port()
        # The checkout seen through a bind mount under ``shared``: uid 65532 may not traverse
        # the directories above it (a clone in ``mktemp -d``'s 0700 directory), and an image
        # has its code at a path its user can read anyway.
        mount = shared / "code"
        mount.mkdir(mode=0o755)
        python = _python_under(mount)
        daemon = " ".join(
            [
                str(python),
                "-m",
                "koordgang",
                "run",
                "--kubeconfig",
                str(kubeconfig),
                "--http-port",
                str(port),
                "--log-format",
                "console",
            ]
        )
        # Its own empty, writable home and temporary directory (the Deployment's emptyDir);
        # everything on the root mount read-only. (Not a tmpfs over /tmp: the checkout may
        # live there, as a CI clone does.)
        home = shared / "home"
        home.mkdir(mode=0o777)
        home.chmod(0o777)
        script = (
            f"mount --make-rprivate / && mount --bind {REPO} {mount} && "
            "mount -o remount,bind,ro / && "
            f"exec setpriv --reuid {IMAGE_UID} --regid {IMAGE_UID} --clear-groups "
            f"--inh-caps=-all {daemon}"
        )
        log = tmp_path / "koordgang.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["unshare", "-m", "sh", "-c", script],
                cwd=shared,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "HOME": str(home),
                    "TMPDIR": str(home),
                    "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTHONUNBUFFERED": "1",
                    # Ahead of the editable install's finder, which names the checkout's own path.
                    "PYTHONPATH": str(mount),
                    "POD_NAMESPACE": NAMESPACE,
                },
            )
        try:
            wait_until(lambda: _ready(port, process, log), timeout=60, what="koordgang /readyz")
            status = Path(f"/proc/{process.pid}/status").read_text()
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            assert uid_line.split()[1:] == [str(IMAGE_UID)] * 4, uid_line
            gang = gang_book.gang("ro", 2, requests={"cpu": "1"})
            gang_book.create(gang)
            assert len(wait_bound(cluster, gang, timeout=60)) == 2
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=30)
        text = log.read_text(errors="replace")
        assert code == 0, f"exit {code} after SIGTERM:\n{text[-4000:]}"
        refused = [line for line in text.splitlines() if any(r in line for r in REFUSED)]
        assert not refused, "\n".join(refused)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
