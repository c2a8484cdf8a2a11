"""Build recipe details that decide whether a cached binary is reused (no Go build here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controlplane import build
from controlplane.build import control_plane_binaries, go_env, required_version
from controlplane.releases import RELEASES, UnknownRelease, selected_release

BINARIES = control_plane_binaries()


def test_each_binary_is_named_after_its_pinned_release() -> None:
    versions = {b.name: b.version for b in BINARIES}
    assert set(versions) == {"etcd", "kube-apiserver", "kube-controller-manager", "kwok", "helm"}
    # The controller manager comes from the same Kubernetes release as the API server.
    assert versions["kube-controller-manager"] == versions["kube-apiserver"]
    assert all(re.fullmatch(r"v\d+\.\d+\.\d+", v) for v in versions.values()), versions


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_each_release_builds_its_components_from_its_own_pins(name: str) -> None:
    binaries = {b.name: b for b in control_plane_binaries(RELEASES[name])}
    for component in ("kube-apiserver", "kube-controller-manager"):
        assert binaries[component].version.startswith(f"v{name}."), binaries[component]
    other = next(r for r in RELEASES if r != name)
    theirs = {b.name: b for b in control_plane_binaries(RELEASES[other])}
    # Both stay cached side by side: the two builds have different file names.
    assert binaries["kube-apiserver"].fingerprint() != theirs["kube-apiserver"].fingerprint()
    assert binaries["etcd"].fingerprint() == theirs["etcd"].fingerprint()


def test_kube_selects_the_release_and_defaults_to_1_37() -> None:
    assert selected_release({}).name == "1.37"
    assert selected_release({"KUBE": "1.36"}).name == "1.36"
    assert selected_release({"KUBE": "v1.36.3"}).name == "1.36"
    with pytest.raises(UnknownRelease, match=r"KUBE=1\.30: the control plane runs 1\.36, 1\.37"):
        selected_release({"KUBE": "1.30"})


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


def test_podgroup_claims_are_switched_on_for_1_37_alone() -> None:
    # Beta and off by default in 1.37 (an alpha gate in 1.36, left off there).
    assert "DRAWorkloadResourceClaims=true" in RELEASES["1.37"].feature_gates.split(",")
    assert "DRAWorkloadResourceClaims" not in RELEASES["1.36"].feature_gates


def test_binaries_all_cached_are_reused_without_waiting_for_a_build_of_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another checkout building other binaries holds the cache's lock for minutes: a run
    whose binaries are all there does not wait for it."""
    monkeypatch.setenv("KOORDGANG_CACHE", str(tmp_path))
    cache = tmp_path / "bin"
    cache.mkdir()
    for binary in BINARIES:
        target = binary.cached_path(cache)
        target.write_text("#!/bin/sh\n")
        target.chmod(0o755)

    def held(*args: object, **kwargs: object) -> None:
        raise AssertionError("waited for the build lock with every binary cached")

    monkeypatch.setattr(build, "exclusive_lock", held)
    paths = build.ensure_built(binaries=BINARIES)
    assert paths == {b.name: b.cached_path(cache) for b in BINARIES}
    # One missing: that one is built, under the lock.
    BINARIES[0].cached_path(cache).unlink()
    with pytest.raises(AssertionError, match="waited for the build lock"):
        build.ensure_built(binaries=BINARIES)
