"""Build kube-apiserver, kube-controller-manager, etcd and kwok (and helm, for the chart) from
the pinned Go modules under `gomod/` (the two Kubernetes components under `gomod/v<release>/`,
one folder per release the plane runs: see `releases.py`).

Each binary is cached as `<cache>/bin/<name>-<fingerprint>`, where the fingerprint covers the
module's go.mod, go.sum and main file plus the build recipe below. Changing a pin therefore
produces a new file name and a rebuild; anything else reuses the cached binary.

Builds run one at a time, under a lock shared by every checkout using the same cache: the
kube-apiserver build alone needs about 2.5 GB and both cores of our machines. Builds for older
pins are kept (another branch may still use them); delete `<cache>/bin` to reclaim the space.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .layout import GOMOD_DIR, cache_dir
from .locking import exclusive_lock
from .progress import Reporter, format_seconds
from .releases import KubeRelease, selected_release

HEARTBEAT_SECONDS = 15.0

# Part of the fingerprint: editing the recipe must invalidate binaries built with the old one.
_RECIPE_VERSION = "1"


class BuildError(RuntimeError):
    """`go build` failed; the message carries the end of its output and where the full log is."""


@dataclass(frozen=True)
class GoBinary:
    """One binary built from one small Go module under `gomod/`."""

    name: str
    main_file: str
    package: str
    # The module whose required version names the build ("kube-apiserver v1.36.3").
    pinned_module: str
    # The folder holding the module folder `<name>/` (the bench keeps its peers elsewhere).
    root: Path = GOMOD_DIR

    @property
    def module_dir(self) -> Path:
        return self.root / self.name

    @property
    def version(self) -> str:
        return required_version(self.module_dir / "go.mod", self.pinned_module)

    def ldflags(self) -> str:
        # -s -w: no symbol table or DWARF; smaller binaries and a faster link (panics still
        # print stack traces). Kubernetes components' version variables are what release builds set
        # through hack/lib/version.sh; without them /version reports v0.0.0-master.
        flags = ["-s", "-w"]
        if self.pinned_module == "k8s.io/kubernetes":
            version = self.version
            major, minor = version.lstrip("v").split(".")[:2]
            pkg = "k8s.io/component-base/version"
            flags += [
                f"-X {pkg}.gitVersion={version}",
                f"-X {pkg}.gitMajor={major}",
                f"-X {pkg}.gitMinor={minor}",
                f"-X {pkg}.gitTreeState=clean",
            ]
        return " ".join(flags)

    def go_build_args(self, output: Path) -> list[str]:
        return [
            "go",
            "build",
            "-trimpath",
            f"-ldflags={self.ldflags()}",
            "-o",
            str(output),
            self.package,
        ]

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        recipe = f"{_RECIPE_VERSION} {self.package} {self.ldflags()}".encode()
        parts = [recipe] + [
            (self.module_dir / f).read_bytes() for f in ("go.mod", "go.sum", self.main_file)
        ]
        for part in parts:
            # Length prefixes keep two different splits of the same bytes apart.
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
        return digest.hexdigest()[:12]

    def cached_path(self, bin_dir: Path) -> Path:
        return bin_dir / f"{self.name}-{self.fingerprint()}"


def control_plane_binaries(release: KubeRelease | None = None) -> tuple[GoBinary, ...]:
    """What the plane of `release` (by default the one `KUBE` selects) runs, plus helm."""
    release = release or selected_release()
    return (
        GoBinary("etcd", "main.go", ".", "go.etcd.io/etcd/server/v3"),
        GoBinary("kube-apiserver", "main.go", ".", "k8s.io/kubernetes", release.gomod_dir),
        GoBinary("kube-controller-manager", "main.go", ".", "k8s.io/kubernetes", release.gomod_dir),
        GoBinary("kwok", "tools.go", "sigs.k8s.io/kwok/cmd/kwok", "sigs.k8s.io/kwok"),
        # Not part of the control plane: lints and renders charts/koordgang in `make test`.
        GoBinary("helm", "tools.go", "helm.sh/helm/v3/cmd/helm", "helm.sh/helm/v3"),
    )


def required_version(go_mod: Path, module: str) -> str:
    """The version of `module` that go.mod requires (single-line or block form)."""
    pattern = re.compile(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", re.MULTILINE)
    match = pattern.search(go_mod.read_text())
    if match is None:
        raise BuildError(f"{go_mod} does not require {module}")
    return match.group(1)


def bin_dir() -> Path:
    return cache_dir() / "bin"


def binary_paths(release: KubeRelease | None = None) -> dict[str, Path]:
    """Where each binary is (or would be) cached; does not build."""
    directory = bin_dir()
    return {b.name: b.cached_path(directory) for b in control_plane_binaries(release)}


def missing_binaries(release: KubeRelease | None = None) -> list[str]:
    return [name for name, path in binary_paths(release).items() if not os.access(path, os.X_OK)]


def ensure_built(
    reporter: Reporter | None = None,
    names: Iterable[str] | None = None,
    binaries: Sequence[GoBinary] | None = None,
) -> dict[str, Path]:
    """Build whatever is missing from the cache, one binary at a time; return all paths.
    `binaries` defaults to the control plane of the release `KUBE` selects."""
    reporter = reporter or Reporter()
    binaries = control_plane_binaries() if binaries is None else binaries
    wanted = set(names) if names is not None else {b.name for b in binaries}
    directory = bin_dir()
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    started = time.monotonic()
    built = 0
    cached = {b.name: b.cached_path(directory) for b in binaries if b.name in wanted}
    if all(os.access(target, os.X_OK) for target in cached.values()):
        # Nothing to build: no need to wait for a build of other binaries under the lock.
        for binary in binaries:
            if binary.name in cached:
                reporter.line(f"reusing {binary.name} {binary.version}: {cached[binary.name]}")
        return cached
    with exclusive_lock(
        directory / ".build.lock",
        on_wait=lambda: reporter.line("waiting for another build to finish ..."),
    ):
        for binary in binaries:
            if binary.name not in wanted:
                continue
            target = binary.cached_path(directory)
            paths[binary.name] = target
            if os.access(target, os.X_OK):
                reporter.line(f"reusing {binary.name} {binary.version}: {target}")
                continue
            _build(binary, target, reporter)
            built += 1
    if built:
        reporter.line(f"build total: {format_seconds(time.monotonic() - started)}")
    return paths


def go_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for `go build`: no toolchain download, no cgo, go.sum as committed."""
    env = dict(os.environ if base is None else base)
    env["GOTOOLCHAIN"] = "local"
    env["CGO_ENABLED"] = "0"
    # A go.work somewhere above the checkout must not override these modules' pins.
    env["GOWORK"] = "off"
    # -mod=mod would let go rewrite go.mod/go.sum; the default -mod=readonly keeps the
    # committed hashes authoritative.
    flags = [f for f in env.get("GOFLAGS", "").split() if not f.startswith("-mod=")]
    if flags:
        env["GOFLAGS"] = " ".join(flags)
    else:
        env.pop("GOFLAGS", None)
    return env


def _build(binary: GoBinary, target: Path, reporter: Reporter) -> None:
    if shutil.which("go") is None:
        raise BuildError("the Go toolchain is not on PATH (the modules under gomod/ need go 1.26)")
    # go writes its output in place; building to a temporary name and renaming means an
    # interrupted build never leaves a truncated binary under the name we would reuse.
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    log_path = cache_dir() / "logs" / f"build-{binary.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    label = f"{binary.name} {binary.version}"
    env = go_env()
    reporter.line(f"building {label} -> {target}")
    started = time.monotonic()
    try:
        returncode = _run_with_heartbeat(binary, partial, env, log_path, label, reporter)
        output = log_path.read_text(errors="replace")
        if returncode != 0 and _checksum_db_unreachable(output) and env.get("GOSUMDB") != "off":
            # Only the lookup of hashes missing from go.sum needs the checksum database;
            # every hash we rely on is in the committed go.sum, which go still enforces.
            reporter.line("checksum database unreachable; retrying with GOSUMDB=off")
            env["GOSUMDB"] = "off"
            returncode = _run_with_heartbeat(binary, partial, env, log_path, label, reporter)
            output = log_path.read_text(errors="replace")
        if returncode != 0:
            tail = "\n".join(output.splitlines()[-30:])
            raise BuildError(
                f"building {label} failed (exit {returncode}); full log: {log_path}\n{tail}"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    reporter.line(f"built {label} in {format_seconds(time.monotonic() - started)}")


def _run_with_heartbeat(
    binary: GoBinary,
    output: Path,
    env: dict[str, str],
    log_path: Path,
    label: str,
    reporter: Reporter,
) -> int:
    started = time.monotonic()
    with log_path.open("w") as log:
        process = subprocess.Popen(
            binary.go_build_args(output),
            cwd=binary.module_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            while True:
                try:
                    return process.wait(timeout=HEARTBEAT_SECONDS)
                except subprocess.TimeoutExpired:
                    elapsed = format_seconds(time.monotonic() - started)
                    reporter.line(f"building {label} ... {elapsed}")
        finally:
            if process.poll() is None:  # interrupted: do not leave go compiling on its own
                process.kill()
                process.wait()


def _checksum_db_unreachable(output: str) -> bool:
    if "SECURITY ERROR" in output:  # a real hash mismatch: never retry without verification
        return False
    return "sum.golang.org" in output or "checksum database" in output
