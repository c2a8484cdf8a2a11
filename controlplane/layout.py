"""Where the control plane keeps its files: the state directory and the binary cache.

Everything a running cluster writes goes under one state directory (by default `<repo>/.cluster/`,
which is gitignored), so that `down` plus deleting that directory leaves the checkout clean.
Built binaries live outside the checkout because they are large and shared between checkouts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
GOMOD_DIR = PACKAGE_DIR / "gomod"
DEFAULT_NODES_FILE = PACKAGE_DIR / "nodes.yaml"
DEFAULT_STATE_DIR = REPO_ROOT / ".cluster"


def cache_dir() -> Path:
    """`$KOORDGANG_CACHE`, else `~/.cache/koordgang`."""
    configured = os.environ.get("KOORDGANG_CACHE")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "koordgang"


@dataclass(frozen=True)
class StateDir:
    """Paths inside one control plane's state directory."""

    root: Path

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def cluster_file(self) -> Path:
        """Ports and token of the running cluster, so that another process can check on it."""
        return self.root / "cluster.json"

    @property
    def lock_file(self) -> Path:
        return self.root / ".lock"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd-data"

    @property
    def cert_dir(self) -> Path:
        """The API server's --cert-dir: it writes its self-signed serving cert and CA here."""
        return self.root / "certs"

    @property
    def auth_dir(self) -> Path:
        return self.root / "auth"

    @property
    def token_file(self) -> Path:
        return self.auth_dir / "tokens.csv"

    @property
    def service_account_key(self) -> Path:
        return self.auth_dir / "service-account.key"

    @property
    def kwok_workdir(self) -> Path:
        """KWOK_WORKDIR: keeps kwok from reading a user's ~/.kwok/kwok.yaml."""
        return self.root / "kwok"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def pid_dir(self) -> Path:
        return self.root / "pids"

    @property
    def audit_policy(self) -> Path:
        return self.auth_dir / "audit-policy.yaml"

    @property
    def audit_log(self) -> Path:
        """Who wrote what (create, update, patch, delete), when the plane audits."""
        return self.log_dir / "audit.log"

    def log_file(self, process: str) -> Path:
        return self.log_dir / f"{process}.log"

    def pid_file(self, process: str) -> Path:
        return self.pid_dir / f"{process}.pid"
