"""Build the peers (cached outside the checkout, rebuilt only when a pin changes) and find the
files their releases ship: CRDs and scheduler configurations, read from the module cache."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from controlplane.build import BuildError, GoBinary, ensure_built, go_env
from controlplane.progress import Reporter
from harness.clients.build import KUBE_SCHEDULER as KUBE_SCHEDULER

GOMOD = Path(__file__).resolve().parent / "gomod"

# KUBE_SCHEDULER: the release of the plane the bench runs on (``KUBE``), pinned per release
# like kube-apiserver (``gomod/v<release>/kube-scheduler``); the e2e tests run it too.
COSCHEDULING = GoBinary("coscheduling", "main.go", ".", "sigs.k8s.io/scheduler-plugins", GOMOD)
KOORD_SCHEDULER = GoBinary(
    "koord-scheduler", "main.go", ".", "github.com/koordinator-sh/koordinator", GOMOD
)
PEER_BINARIES: tuple[GoBinary, ...] = (KUBE_SCHEDULER, COSCHEDULING, KOORD_SCHEDULER)


def ensure_peers(names: set[str], reporter: Reporter | None = None) -> dict[str, Path]:
    """Builds the named peers that are not cached yet; returns their paths."""
    return ensure_built(reporter, names, PEER_BINARIES)


def module_source(binary: GoBinary) -> Path:
    """Where the pinned module's release files are (downloading them if needed)."""
    reply = subprocess.run(
        ["go", "mod", "download", "-json", binary.pinned_module],
        cwd=binary.module_dir,
        env=go_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        directory = json.loads(reply.stdout).get("Dir", "")
    except ValueError:
        directory = ""
    if reply.returncode != 0 or not directory:
        raise BuildError(
            f"cannot locate {binary.pinned_module} {binary.version}: "
            f"{(reply.stderr or reply.stdout).strip()[-500:]}"
        )
    return Path(directory)


@dataclass
class PeerFiles:
    """The built peers and their releases' files, by peer name."""

    binaries: dict[str, Path] = field(default_factory=dict)
    sources: dict[str, Path] = field(default_factory=dict)


def prepare(names: set[str], reporter: Reporter | None = None) -> PeerFiles:
    """Builds the named peers if needed and locates their shipped files."""
    if not names:
        return PeerFiles()
    files = PeerFiles(binaries=ensure_peers(names, reporter))
    for binary in PEER_BINARIES:
        if binary.name in names and binary is not KUBE_SCHEDULER:
            files.sources[binary.name] = module_source(binary)
    return files
