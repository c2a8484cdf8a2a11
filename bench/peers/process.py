"""A peer scheduler as a child process: its configuration written next to its log, its secure
port on a free local port (a self-signed certificate of its own), readiness, metrics and
health open to the bench without credentials (no delegated authentication: the bench's
requests are anonymous, and those paths are always allowed)."""

from __future__ import annotations

from pathlib import Path

import yaml

from bench.daemon import SchedulerProcess
from bench.peers.config import bench_config, peer_flags


class PeerProcess(SchedulerProcess):
    def __init__(
        self,
        peer: str,
        binary: Path,
        source: Path | None,
        kubeconfig: Path,
        log_path: Path,
        qps: int | None,
        ready_path: str,
        *,
        job_features: bool = False,
        upstream_gangs: bool = False,
    ) -> None:
        super().__init__(log_path)
        self.name = peer
        self.ready_path = ready_path
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.config_path = log_path.with_suffix(".config.yaml")
        self.job_features = job_features
        self.upstream_gangs = upstream_gangs
        self.config = bench_config(peer, source, kubeconfig, qps, job_features=job_features)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(yaml.safe_dump(self.config, sort_keys=False))
        certs = self.log_path.with_suffix(".certs")
        return [
            str(self.binary),
            f"--config={self.config_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={certs}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            *peer_flags(
                self.name, job_features=self.job_features, upstream_gangs=self.upstream_gangs
            ),
        ]
