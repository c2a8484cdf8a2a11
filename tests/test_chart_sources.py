"""The Helm chart and the plain manifests install the same thing: the CRDs and the RBAC rules
exist once in each, and must not drift apart. The CRDs are also checked for what the API
server demands of them (a structural schema), and the rules for the gang APIs read."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from koordgang.gangapis import GANG_APIS

ROOT = Path(__file__).resolve().parents[1]
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


CRDS = ROOT / "manifests" / "crds"


def test_kustomize_installs_every_crd() -> None:
    kustomization = yaml.safe_load((ROOT / "manifests" / "kustomization.yaml").read_text())
    listed = sorted(r for r in kustomization["resources"] if r.startswith("crds/"))
    assert listed == sorted(f"crds/{p.name}" for p in CRDS.glob("*.yaml"))


def test_each_gang_apis_crd_is_installed_as_it_declares() -> None:
    """A gang API with a CRD names its file and its chart switch (``GangApi.crd``,
    ``crd_value``): the file is in both places, a switch is a value of the chart that the CRD
    template obeys, and the CRD serves the version the API reads."""
    template = (CHART / "templates" / "crds.yaml").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())["crds"]
    switched = dict(re.findall(r'"([\w.-]+\.yaml)" "(\w+)"', template))
    declared = {api.crd: api.crd_value for api in GANG_APIS if api.crd}
    assert {crd: value for crd, value in declared.items() if value} == switched
    for crd, value in declared.items():
        assert (CRDS / crd).exists() and (CHART / "files" / "crds" / crd).exists(), crd
        assert value == "" or values.get(value) is True, (crd, value)
    for api in GANG_APIS:
        if not api.crd:
            continue
        assert api.resource is not None
        (crd,) = [d for d in yaml.safe_load_all((CRDS / api.crd).read_text()) if d]
        assert crd["metadata"]["name"] == f"{api.resource.plural}.{api.resource.group}"
        served = {v["name"] for v in crd["spec"]["versions"] if v.get("served")}
        assert api.resource.version in served, (api.name, served)


def test_each_crd_file_is_named_after_its_crd_and_has_a_structural_schema() -> None:
    for path in sorted(CRDS.glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        assert len(docs) == 1, path.name
        crd = docs[0]
        assert crd["kind"] == "CustomResourceDefinition", path.name
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
        assert path.name == f"{crd['metadata']['name']}.yaml"
        assert [v["name"] for v in spec["versions"] if v["storage"]], path.name
        for version in spec["versions"]:
            _assert_structural(version["schema"]["openAPIV3Schema"], f"{path.name}:")


def _assert_structural(schema: dict[str, Any], where: str) -> None:
    """Every node states its type (an int-or-string quantity, or a sub-tree kept as written,
    may instead say so), as the API server requires of a structural schema."""
    assert (
        "type" in schema
        or schema.get("x-kubernetes-int-or-string")
        or schema.get("x-kubernetes-preserve-unknown-fields")
    ), where
    assert not {"$ref", "oneOf", "not"} & set(schema), where
    for name, sub in schema.get("properties", {}).items():
        _assert_structural(sub, f"{where}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        _assert_structural(schema["additionalProperties"], f"{where}.*")
    if "items" in schema:
        _assert_structural(schema["items"], f"{where}[]")
    if schema.get("type") == "object":
        assert (
            "properties" in schema
            or "additionalProperties" in schema
            or schema.get("x-kubernetes-preserve-unknown-fields")
            or where.endswith(".metadata")
        ), where


def test_each_optional_crd_of_the_chart_has_its_value() -> None:
    # templates/crds.yaml maps the other projects' CRD files to a value under `crds:`.
    template = (CHART / "templates" / "crds.yaml").read_text()
    pairs = dict(re.findall(r'"([\w.-]+\.yaml)"\s+"(\w+)"', template))
    assert pairs == {
        "podgroups.scheduling.x-k8s.io.yaml": "schedulerPlugins",
        "podgroups.scheduling.volcano.sh.yaml": "volcano",
    }
    for name in pairs:
        assert (CHART / "files" / "crds" / name).exists(), name
    values = yaml.safe_load((CHART / "values.yaml").read_text())["crds"]
    assert values == {"install": True, "schedulerPlugins": True, "volcano": True}


def _grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_scheduler_may_read_every_gang_api_and_write_its_status_and_no_more() -> None:
    """The rules follow what the gang APIs declare: each group object is read, and its status
    written (through the status subresource, or into the object for a kind without one)."""
    rules = yaml.safe_load((CHART / "files" / "clusterrole-rules.yaml").read_text())
    grants = _grants(rules)
    assert not [g for g in grants if "*" in g]
    for api in GANG_APIS:
        resource = api.resource
        if resource is None:
            continue
        group, plural = resource.group, resource.plural
        for verb in ("get", "list", "watch"):
            assert (group, plural, verb) in grants, (api.name, verb)
        status = f"{plural}/status" if resource.status_subresource else plural
        assert (group, status, "patch") in grants, api.name
        if api.name == "koordinator":
            continue  # koordgang's own API
        # The other projects' objects are read, never written, apart from their status.
        written = {
            (r, v)
            for g, r, v in grants
            if g == group
            and v not in ("get", "list", "watch")
            and (r, v) != (status, "patch")
            and (r, v) != (status, "update")
            and (r, v) not in {(f"{x.plural}/status", "patch") for x in api.related}
        }
        assert not written, (api.name, written)
    for api in GANG_APIS:
        for related in api.related:
            for verb in ("get", "list", "watch"):
                assert (related.group, related.plural, verb) in grants, (related.id, verb)
            assert (related.group, f"{related.plural}/status", "patch") in grants, related.id
            others = {
                (r, v)
                for g, r, v in grants
                if g == related.group
                and r.startswith(related.plural)
                and v not in ("get", "list", "watch")
            }
            assert others == {(f"{related.plural}/status", "patch")}, (related.id, others)
