"""Build recipe details that decide whether a cached binary is reused (no Go build here)."""

from __future__ import annotations

import re
from pathlib import Path

from controlplane.build import BINARIES, go_env, required_version


def test_each_binary_is_named_after_its_pinned_release() -> None:
    versions = {b.name: b.version for b in BINARIES}
    assert set(versions) == {"etcd", "kube-apiserver", "kube-controller-manager", "kwok", "helm"}
    # The controller manager comes from the same Kubernetes release as the API server.
    assert versions["kube-controller-manager"] == versions["kube-apiserver"]
    assert all(re.fullmatch(r"v\d+\.\d+\.\d+", v) for v in versions.values()), versions


def test_the_cached_file_name_is_stable_and_carries_a_12_digit_fingerprint() -> None:
    for binary in BINARIES:
        path = binary.cached_path(Path("/cache"))
        assert re.fullmatch(rf"{binary.name}-[0-9a-f]{{12}}", path.name)
        assert binary.cached_path(Path("/cache")) == path


def test_required_version_reads_single_line_and_block_requires(tmp_path: Path) -> None:
    go_mod = tmp_path / "go.mod"
    go_mod.write_text(
        "module m\n\nrequire a.io/x v1.2.3\n\nrequire (\n\tb.io/y v0.4.0 // indirect\n)\n"
    )
    assert required_version(go_mod, "a.io/x") == "v1.2.3"
    assert required_version(go_mod, "b.io/y") == "v0.4.0"


def test_the_apiserver_reports_its_release_version() -> None:
    (apiserver,) = [b for b in BINARIES if b.name == "kube-apiserver"]
    assert f"gitVersion={apiserver.version}" in apiserver.ldflags()


def test_go_never_downloads_a_toolchain_nor_rewrites_go_sum() -> None:
    env = go_env({"GOFLAGS": "-mod=mod -buildvcs=false", "PATH": "/usr/bin"})
    assert env["GOTOOLCHAIN"] == "local"
    assert env["CGO_ENABLED"] == "0"
    assert env["GOFLAGS"] == "-buildvcs=false"
    assert "GOFLAGS" not in go_env({"GOFLAGS": "-mod=vendor"})
