"""The namespaces' store: labels by name, and whether an update changed them."""

from __future__ import annotations

from koordgang.model.namespace import NamespaceInfo
from koordgang.state.namespaces import Namespaces


def test_namespace_labels_are_kept_and_report_whether_they_changed() -> None:
    store = Namespaces()
    assert store.labels("a") is None
    assert store.upsert(NamespaceInfo("a", {"env": "prod"})).changed
    assert not store.upsert(NamespaceInfo("a", {"env": "prod"})).changed
    assert store.upsert(NamespaceInfo("a", {"env": "dev"})).changed
    assert store.labels("a") == {"env": "dev"}

    assert store.remove("a").changed
    assert not store.remove("never-seen").changed
    assert store.labels("a") is None

    store.upsert(NamespaceInfo("old", {}))
    store.replace([NamespaceInfo("b", {"team": "x"}), NamespaceInfo("c", {})])
    assert store.labels("old") is None
    assert (store.labels("b"), store.labels("c")) == ({"team": "x"}, {})
