"""The labels of every namespace (pod affinity terms may select namespaces by label)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from koordgang.model.namespace import NamespaceInfo
from koordgang.state.store import StoreChange

__all__ = ["Namespaces"]


class Namespaces:
    def __init__(self) -> None:
        self._labels: dict[str, Mapping[str, str]] = {}

    def upsert(self, info: NamespaceInfo) -> StoreChange:
        changed = self._labels.get(info.name) != info.labels
        self._labels[info.name] = info.labels
        return StoreChange(changed=changed)

    def remove(self, key: str) -> StoreChange:
        return StoreChange(changed=self._labels.pop(key, None) is not None)

    def replace(self, items: Iterable[NamespaceInfo]) -> StoreChange:
        self._labels = {info.name: info.labels for info in items}
        return StoreChange(changed=True)

    def labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of namespace ``name``; None when it is not known (yet)."""
        return self._labels.get(name)
