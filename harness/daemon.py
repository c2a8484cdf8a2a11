"""Runs the scheduler for e2e tests: as a local process (local control plane) or as the
in-cluster Deployment (kind, KOORDGANG_E2E_DAEMON=deployment)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Protocol

from harness.kube import Cluster, wait_until
from harness.rbac import NAMESPACE

REPO = Path(__file__).resolve().parent.parent
#: The Deployment's ``--http-port`` (manifests/deployment.yaml).
HTTP_PORT = 10251


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Daemon(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def kill(self) -> None: ...
    def logs(self) -> str: ...
    def metrics(self) -> str: ...


def wait_for_metric(daemon: Daemon, sample: str, value: float) -> None:
    """Waits until the daemon's ``/metrics`` shows ``sample`` (a name with its labels, as
    Prometheus prints them) at ``value``: what it has seen, as an operator reads it."""
    line = f"{sample} {value!r}"
    wait_until(
        lambda: line in daemon.metrics().splitlines(), what=f"the daemon's metrics to show {line}"
    )


class DaemonFactory(Protocol):
    """Makes a daemon (not started yet) that runs with ``extra_args`` on its command line."""

    def __call__(self, *extra_args: str) -> Daemon: ...


class LocalDaemon:
    """``python -m koordgang run`` against the test cluster, logs to a file.

    ``kubeconfig`` is the scheduler's own (the ``scheduler_kubeconfig`` fixture: a token of its
    ServiceAccount). POD_NAMESPACE is the namespace of manifests/, as the Deployment's downward
    API sets it: leader election takes its Lease there, where the manifests' Role allows it.
    """

    def __init__(self, kubeconfig: str, log_dir: Path, *extra_args: str) -> None:
        self.kubeconfig = kubeconfig
        self.port = free_port()
        self.log_path = log_dir / f"koordgang-{self.port}.log"
        self.extra_args = extra_args
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, *, piped: bool = False) -> None:
        """``piped``: its output goes to a pipe (``process.stdout``) instead of the log file."""
        self.starts += 1
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "koordgang",
                "run",
                "--kubeconfig",
                self.kubeconfig,
                "--http-port",
                str(self.port),
                "--http-host",
                "127.0.0.1",
                "--log-format",
                "console",
                *self.extra_args,
            ],
            cwd=REPO,
            stdout=subprocess.PIPE if piped else log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "POD_NAMESPACE": NAMESPACE},
        )
        log.close()
        wait_until(self._ready, timeout=60, interval=0.1, what="koordgang /readyz")

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(
                f"koordgang exited with {self.process.returncode}:\n{self.logs()[-4000:]}"
            )
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=1) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False

    def role(self) -> str:
        """``leader`` or ``follower``, as /readyz says it."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as reply:
            text: str = reply.read().decode()
        return text.strip().removeprefix("ok (").removesuffix(")")

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as reply:
            text: str = reply.read().decode()
            return text

    def what_if(self, text: str) -> tuple[int, dict[str, Any]]:
        """The HTTP status and JSON body of ``POST /whatif`` with ``text`` (a file's
        contents)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/whatif", data=text.encode(), method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def stop(self) -> None:
        """SIGTERM, as Kubernetes does; returns the exit code in ``returncode``."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("koordgang did not stop within 30 s of SIGTERM") from None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    def logs(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


class DeploymentDaemon:
    """The Deployment applied from manifests/ (kind). Start = wait for a ready pod; kill =
    force-delete the pod (the container gets SIGKILL); the Deployment starts a new one."""

    namespace = NAMESPACE
    selector = "app.kubernetes.io/name=koordgang"

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def _pods(self) -> list[object]:
        return list(
            self.cluster.core.list_namespaced_pod(
                self.namespace, label_selector=self.selector
            ).items
        )

    def start(self) -> None:
        def ready() -> bool:
            for pod in self._pods():
                conditions = getattr(getattr(pod, "status", None), "conditions", None) or []
                if any(c.type == "Ready" and c.status == "True" for c in conditions):
                    return True
            return False

        wait_until(ready, timeout=120, what="the koordgang Deployment to be ready")

    def stop(self) -> None:
        """The Deployment keeps running between tests."""

    def kill(self) -> None:
        for pod in self._pods():
            meta = pod.metadata  # type: ignore[attr-defined]
            self.cluster.force_delete(meta.namespace, meta.name)
        time.sleep(1)

    def metrics(self) -> str:
        """Through the API server's proxy to a ready pod of the Deployment."""
        for pod in self._pods():
            meta = pod.metadata  # type: ignore[attr-defined]
            text: str = self.cluster.core.connect_get_namespaced_pod_proxy_with_path(
                f"{meta.name}:{HTTP_PORT}", meta.namespace, "metrics"
            )
            return text
        raise RuntimeError("no koordgang pod to read metrics from")

    def logs(self) -> str:
        out = []
        for pod in self._pods():
            meta = pod.metadata  # type: ignore[attr-defined]
            try:
                out.append(self.cluster.core.read_namespaced_pod_log(meta.name, meta.namespace))
            except Exception as error:  # logs are diagnostics only
                out.append(f"(no logs from {meta.name}: {error})")
        return "\n".join(out)
