"""kube-scheduler of the pinned release (``KUBE``) as a child process of an e2e test, beside
koordgang on the same nodes, as it runs on every real cluster.

It runs its default profile (``default-scheduler``: the pods that do not name another
scheduler), with leader election off and its client's QPS and burst raised (the shipped 50/100
would pace it at about 50 binds/s, far from what a busy cluster's scheduler does), from a
configuration file of its own next to its log, reaching the test's cluster through the
kubeconfig it is given. Its secure port is a free loopback port with a self-signed certificate;
``/readyz`` and ``/metrics`` are open to the test without credentials.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from controlplane.ports import free_loopback_ports
from controlplane.progress import Reporter
from harness.clients.build import KUBE_SCHEDULER
from harness.clients.process import ClientProcess

#: Its default profile's name: the pods it schedules name it, or no scheduler at all.
DEFAULT_SCHEDULER = "default-scheduler"
#: Client QPS and burst (as the bench runs the peers raised).
RAISED_QPS = 5000


def scheduler_configuration(kubeconfig: Path, qps: int = RAISED_QPS) -> dict[str, Any]:
    """A KubeSchedulerConfiguration with the release's defaults but for the connection."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": qps, "burst": qps},
        "profiles": [{"schedulerName": DEFAULT_SCHEDULER}],
    }


class KubeScheduler(ClientProcess):
    """One kube-scheduler; ``start()`` returns once it answers ``/readyz`` (its informers have
    synced and it schedules)."""

    binary_spec = KUBE_SCHEDULER

    def __init__(
        self,
        kubeconfig: Path | str,
        log_path: Path | str,
        *,
        qps: int = RAISED_QPS,
        binary: Path | None = None,
        reporter: Reporter | None = None,
    ) -> None:
        super().__init__(kubeconfig, log_path, binary=binary, reporter=reporter)
        self.qps = qps
        (self.port,) = free_loopback_ports(1)
        self.config_path = self.log_path.with_suffix(".config.yaml")

    def describe(self) -> str:
        return f"starting kube-scheduler {KUBE_SCHEDULER.version} (QPS {self.qps})"

    def argv(self) -> list[str]:
        assert self.binary is not None
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        config = scheduler_configuration(self.kubeconfig, self.qps)
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        return [
            str(self.binary),
            f"--config={self.config_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={self.log_path.with_suffix('.certs')}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        ]

    def not_started_yet(self) -> str | None:
        return None if self._get("/readyz") is not None else "/readyz does not answer 200"

    def metrics(self) -> str:
        """Its Prometheus text (``scheduler_preemption_victims`` and the like)."""
        text = self._get("/metrics")
        if text is None:
            raise AssertionError(f"kube-scheduler's /metrics does not answer; log {self.log_path}")
        return text

    def _get(self, path: str) -> str | None:
        # Its serving certificate is self-signed, made at start-up: nothing to verify it with.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as reply:
                return reply.read().decode() if reply.status == 200 else None
        except (urllib.error.URLError, OSError):
            return None
