"""The kind table: every kind the informers watch may be read as installed, and is read and
keyed as its store expects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from koordgang.engine.kinds import KINDS, LISTED_KINDS, Relevance, WatchedKind

ROOT = Path(__file__).resolve().parents[2]


def _granted() -> dict[tuple[str, str], set[str]]:
    """(API group, resource) -> the verbs manifests/rbac.yaml's ClusterRole grants."""
    docs = [d for d in yaml.safe_load_all((ROOT / "manifests" / "rbac.yaml").read_text()) if d]
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


def _group_and_resource(path: str) -> tuple[str, str]:
    parts = path.strip("/").split("/")
    return ("", parts[2]) if parts[0] == "api" else (parts[1], parts[3])


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_the_daemon_may_list_and_watch_every_kind_it_watches(kind: WatchedKind[Any]) -> None:
    verbs = _granted().get(_group_and_resource(kind.path), set())
    assert {"list", "watch"} <= verbs, f"manifests/rbac.yaml does not grant {kind.path}"


def test_each_kind_is_declared_once_and_the_first_cycle_waits_for_them_all() -> None:
    names = [kind.name for kind in KINDS]
    assert len(names) == len(set(names))
    assert set(names) == LISTED_KINDS
    # The cache keeps nodes and pods itself; every other kind lives in a store.
    assert {k.name for k in KINDS if k.store is None} == {"nodes", "pods"}
    assert all((k.store is None) == (k.relevance is Relevance.OWN) for k in KINDS)


@pytest.mark.parametrize(
    ("name", "meta", "key"),
    [
        ("pods", {"name": "p", "namespace": "ns", "uid": "u-1"}, "u-1"),
        ("nodes", {"name": "n1"}, "n1"),
        ("claims", {"name": "data", "namespace": "ns"}, "ns/data"),
        ("resourceclaims", {"name": "gpu"}, "default/gpu"),
        ("devicetaintrules", {"name": "drain"}, "drain"),
        ("budgets", {}, ""),
    ],
)
def test_a_deleted_object_is_named_by_its_stores_key(
    name: str, meta: dict[str, str], key: str
) -> None:
    kind = next(k for k in KINDS if k.name == name)
    assert kind.key(meta) == key
