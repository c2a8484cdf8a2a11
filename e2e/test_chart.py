"""The Helm chart: it lints, and what it renders is accepted by a real API server (a
server-side dry run of every object, in the release's namespace created first)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane.build import binary_paths
from harness.kube import Cluster, ServerSideApply, name_of
from harness.rbac import kubectl

CHART = Path(__file__).resolve().parent.parent / "charts" / "koordgang"
MANIFESTS = Path(__file__).resolve().parent.parent / "manifests"
NAMESPACE = "koordgang-chart-test"


def helm(*args: str) -> str:
    path = binary_paths()["helm"]
    if not path.exists():
        pytest.fail(f"helm is not built ({path}): run `make build-controlplane`")
    result = subprocess.run(
        [str(path), *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def rendered(*args: str) -> list[dict[str, Any]]:
    text = helm("template", "koordgang", str(CHART), "--namespace", NAMESPACE, *args)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def test_the_chart_lints() -> None:
    assert "0 chart(s) failed" in helm("lint", str(CHART))


@pytest.mark.upstream
def test_every_rendered_object_passes_a_server_side_dry_run(cluster: Cluster) -> None:
    if not _exists(cluster, NAMESPACE):
        cluster.create_namespace(NAMESPACE)  # the release's namespace comes first
    applier = ServerSideApply(cluster.api_client, "koordgang-chart-test")
    objects = rendered()
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        *["CustomResourceDefinition"] * 4,
        "Deployment",
        "PodDisruptionBudget",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    for obj in objects:
        applier.apply(
            obj,
            dry_run="All",
            # The e2e fixtures apply manifests/rbac.yaml (kubectl), whose cluster-scoped
            # ClusterRole and binding share these names: who owns a field is not in question.
            force_conflicts=True,
        )


@pytest.mark.upstream
def test_the_kustomization_passes_a_server_side_dry_run(kubeconfig: str) -> None:
    """`kubectl apply -k manifests/`, as the README has it, on this release's API server (its
    RBAC names kinds 1.36 does not serve; the API server takes them all the same)."""
    # A dry run creates nothing: the namespace its namespaced objects go into must exist.
    kubectl(kubeconfig, "apply", "-f", str(MANIFESTS / "namespace.yaml"))
    out = kubectl(kubeconfig, "apply", "-k", str(MANIFESTS), "--dry-run=server")
    assert "clusterrole.rbac.authorization.k8s.io/koordgang" in out, out
    assert "deployment.apps/koordgang" in out, out


def test_optional_objects_follow_their_values() -> None:
    # The ServiceMonitor only where its CRD exists; the CRDs only when asked for.
    assert not [o for o in rendered("--set", "serviceMonitor.enabled=true")
                if o["kind"] == "ServiceMonitor"]  # fmt: skip
    with_crd = ("--api-versions", "monitoring.coreos.com/v1/ServiceMonitor")
    monitor = rendered("--set", "serviceMonitor.enabled=true", *with_crd)
    assert [o["kind"] for o in monitor].count("ServiceMonitor") == 1
    assert not [o for o in rendered("--set", "crds.install=false")
                if o["kind"] == "CustomResourceDefinition"]  # fmt: skip
    # Other projects' CRDs each have a value, for clusters where that project installed them.
    assert _crds(rendered()) == {
        "podgroups.scheduling.sigs.k8s.io",
        "clusternetworktopologies.scheduling.koordinator.sh",
        "podgroups.scheduling.x-k8s.io",
        "podgroups.scheduling.volcano.sh",
    }
    without_volcano = _crds(rendered("--set", "crds.volcano=false"))
    assert "podgroups.scheduling.volcano.sh" not in without_volcano
    assert "podgroups.scheduling.x-k8s.io" in without_volcano
    without_plugins = _crds(rendered("--set", "crds.schedulerPlugins=false"))
    assert "podgroups.scheduling.x-k8s.io" not in without_plugins
    assert "podgroups.scheduling.volcano.sh" in without_plugins
    # Values from before the switches existed (helm upgrade --reuse-values): only our own.
    old_values = ("--set", "crds.schedulerPlugins=null", "--set", "crds.volcano=null")
    assert _crds(rendered(*old_values)) == {
        "podgroups.scheduling.sigs.k8s.io",
        "clusternetworktopologies.scheduling.koordinator.sh",
    }
    pdb = rendered("--set", "podDisruptionBudget.enabled=false")
    assert [o["kind"] for o in pdb].count("PodDisruptionBudget") == 0
    # Without an election, one scheduler at a time: Recreate.
    single = rendered("--set", "config.leaderElect=false", "--set", "replicaCount=1")
    strategy = next(o for o in single if o["kind"] == "Deployment")["spec"]["strategy"]
    assert strategy == {"type": "Recreate"}
    config = next(o for o in rendered("--set", "config.scoreStrategy=MostAllocated")
                  if o["kind"] == "ConfigMap")  # fmt: skip
    assert yaml.safe_load(config["data"]["koordgang.yaml"])["scoreStrategy"] == "MostAllocated"


def _crds(objects: list[dict[str, Any]]) -> set[str]:
    return {o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"}


def _exists(cluster: Cluster, name: str) -> bool:
    return any(name_of(n) == name for n in cluster.core.list_namespace().items)


def test_the_kind_path_installs_with_the_chart() -> None:
    # kind needs Docker, which this suite cannot count on: check the script and its values.
    script = CHART.parent.parent / "e2e" / "kind" / "run.sh"
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    assert 'upgrade --install koordgang "${ROOT}/charts/koordgang"' in script.read_text()
    values = str(script.parent / "values.yaml")
    deployment = next(o for o in rendered("--values", values) if o["kind"] == "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"koordgang.e2e/infra": "true"}
    assert {t["key"] for t in spec["tolerations"]} == {
        "node.kubernetes.io/unschedulable",
        "node-role.kubernetes.io/control-plane",
    }
