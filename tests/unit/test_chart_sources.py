"""The Helm chart and the plain manifests install the same thing: the CRDs and the RBAC rules
exist once in each, and must not drift apart."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "koordgang"


def test_the_chart_carries_the_same_crds_as_the_manifests() -> None:
    manifests = sorted(p.name for p in (ROOT / "manifests" / "crds").glob("*.yaml"))
    chart = sorted(p.name for p in (CHART / "files" / "crds").glob("*.yaml"))
    assert chart == manifests
    for name in manifests:
        assert (CHART / "files" / "crds" / name).read_text() == (
            ROOT / "manifests" / "crds" / name
        ).read_text(), name


def test_the_chart_grants_the_same_rights_as_the_manifests() -> None:
    docs = [d for d in yaml.safe_load_all((ROOT / "manifests" / "rbac.yaml").read_text()) if d]
    cluster_role = next(d for d in docs if d["kind"] == "ClusterRole")
    role = next(d for d in docs if d["kind"] == "Role")
    chart_rules = yaml.safe_load((CHART / "files" / "clusterrole-rules.yaml").read_text())
    lease_rules = yaml.safe_load((CHART / "files" / "leader-election-rules.yaml").read_text())
    assert chart_rules == cluster_role["rules"]
    assert lease_rules == role["rules"]
