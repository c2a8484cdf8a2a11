"""Build the clients (cached outside the checkout like the control plane's binaries, rebuilt only
when a pin changes) and find the files their releases ship, read from the Go module cache:
their CRDs and webhook configurations, and the PodGroup CRDs of the gang APIs they write; and
kube-scheduler, run beside koordgang. The first build of the five operators takes about 8
minutes on two cores, kube-scheduler's 3 more; later runs reuse them.

    python -m harness.clients.build          # build (or reuse) every client, print the paths
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from controlplane.build import BuildError, GoBinary, ensure_built, go_env
from controlplane.progress import Reporter
from controlplane.releases import selected_release

GOMOD = Path(__file__).resolve().parent / "gomod"
#: kube-scheduler is pinned per release, like kube-apiserver, in the module the bench built it
#: from first (``bench/peers/gomod/v<release>/kube-scheduler``): one pin, one cached binary.
KUBE_SCHEDULER_GOMOD = Path(__file__).resolve().parents[2] / "bench" / "peers" / "gomod"

TRAINING_OPERATOR = GoBinary(
    "training-operator",
    "tools.go",
    "github.com/kubeflow/training-operator/cmd/training-operator.v1",
    "github.com/kubeflow/training-operator",
    GOMOD,
)
MPI_OPERATOR = GoBinary(
    "mpi-operator",
    "tools.go",
    "github.com/kubeflow/mpi-operator/cmd/mpi-operator",
    "github.com/kubeflow/mpi-operator",
    GOMOD,
)
RAY_OPERATOR = GoBinary(
    "ray-operator",
    "tools.go",
    "github.com/ray-project/kuberay/ray-operator",
    "github.com/ray-project/kuberay/ray-operator",
    GOMOD,
)
KUEUE = GoBinary("kueue", "tools.go", "sigs.k8s.io/kueue/cmd/kueue", "sigs.k8s.io/kueue", GOMOD)
KARPENTER = GoBinary(
    "karpenter-kwok", "tools.go", "sigs.k8s.io/karpenter/kwok", "sigs.k8s.io/karpenter", GOMOD
)
#: The release of the plane the tests run on (``KUBE``).
KUBE_SCHEDULER = GoBinary(
    "kube-scheduler",
    "main.go",
    ".",
    "k8s.io/kubernetes",
    KUBE_SCHEDULER_GOMOD / f"v{selected_release().name}",
)
CLIENT_BINARIES: tuple[GoBinary, ...] = (
    TRAINING_OPERATOR,
    MPI_OPERATOR,
    RAY_OPERATOR,
    KUEUE,
    KARPENTER,
    KUBE_SCHEDULER,
)

# The scheduler-plugins release whose API the operator links (its go.mod requires it, so the
# version comes from our go.mod and the hash from our go.sum).
SCHEDULER_PLUGINS = "sigs.k8s.io/scheduler-plugins"


@dataclass(frozen=True)
class PinnedModule:
    """A module that no client links but whose release files we read; its hash is pinned here
    because no go.sum of ours covers it."""

    path: str
    version: str
    sum: str


# Volcano's PodGroup CRD: the operator links volcano.sh/apis v1.7.0 (types only, no CRDs); the
# CRDs of that release are in the volcano.sh/volcano module of the same version.
VOLCANO = PinnedModule(
    "volcano.sh/volcano", "v1.7.0", "h1:1Rrskf2x2cLOAYjn/xifAV8JNpYjYhgNP9emVLmiUCk="
)


def ensure_clients(
    names: Iterable[str] | None = None, reporter: Reporter | None = None
) -> dict[str, Path]:
    """Builds the named clients (default: all) that are not cached yet; returns their paths."""
    return ensure_built(reporter, names, CLIENT_BINARIES)


def module_source(binary: GoBinary, module: str | None = None) -> Path:
    """Where `module` (default: the binary's pinned module), at the version the binary's go.mod
    requires, is unpacked in the module cache; downloads it if needed."""
    return _download(module or binary.pinned_module, binary.module_dir)


def pinned_module_source(module: PinnedModule) -> Path:
    """Where a `PinnedModule` is unpacked; downloads it if needed and checks its hash."""
    with tempfile.TemporaryDirectory(prefix="koordgang-gomod-") as empty:
        # Outside any module: `go mod download path@version` fetches just that module.
        info = _download_info(f"{module.path}@{module.version}", Path(empty))
    if info.get("Sum") != module.sum:
        raise BuildError(
            f"{module.path} {module.version} has hash {info.get('Sum')!r}, "
            f"pinned {module.sum!r}: refusing to use it"
        )
    return Path(info["Dir"])


def training_operator_crds(names: Iterable[str] | None = None) -> list[Path]:
    """The CRDs the training-operator release ships (manifests/base/crds), all or the named
    files ("kubeflow.org_pytorchjobs.yaml")."""
    directory = module_source(TRAINING_OPERATOR) / "manifests" / "base" / "crds"
    if names is None:
        return sorted(directory.glob("kubeflow.org_*.yaml"))
    paths = [directory / name for name in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise BuildError(f"{directory} has no {', '.join(missing)}")
    return paths


def release_file(binary: GoBinary, *parts: str) -> Path:
    """A file the binary's pinned release ships (its CRDs, its webhook configurations), read
    from the Go module cache."""
    return _existing(module_source(binary).joinpath(*parts))


def scheduler_plugins_podgroup_crd() -> Path:
    """``podgroups.scheduling.x-k8s.io`` from the scheduler-plugins release the operator links."""
    source = module_source(TRAINING_OPERATOR, SCHEDULER_PLUGINS)
    return _existing(source / "config" / "crd" / "bases" / "scheduling.x-k8s.io_podgroups.yaml")


def volcano_podgroup_crd() -> Path:
    """``podgroups.scheduling.volcano.sh`` from the Volcano release whose API the operator links."""
    source = pinned_module_source(VOLCANO)
    return _existing(source / "config" / "crd" / "bases" / "scheduling.volcano.sh_podgroups.yaml")


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise BuildError(f"{path} is missing from the module cache")
    return path


def _download(module: str, cwd: Path) -> Path:
    return Path(_download_info(module, cwd)["Dir"])


def _download_info(module: str, cwd: Path) -> dict[str, str]:
    reply = subprocess.run(
        ["go", "mod", "download", "-json", module],
        cwd=cwd,
        env=go_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    info: dict[str, str]
    try:
        info = json.loads(reply.stdout)
    except ValueError:
        info = {}
    if reply.returncode != 0 or not info.get("Dir"):
        detail = info.get("Error") or reply.stderr or reply.stdout
        raise BuildError(f"cannot locate {module}: {str(detail).strip()[-500:]}")
    return info


def main() -> None:
    for name, path in ensure_clients().items():
        print(f"{name}: {path}")


if __name__ == "__main__":
    main()
