"""The watched objects (group objects of the gang APIs, the ClusterNetworkTopology) as plugins
last heard of them: the what-if replays them into a framework of its own.

Pure. Objects are kept by resource id and ``namespace/name``; a DELETED event drops one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class WatchedObjects:
    def __init__(self) -> None:
        self._objects: dict[tuple[str, str], Mapping[str, Any]] = {}

    def record(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        key = (kind, f"{meta.get('namespace') or ''}/{meta.get('name') or ''}")
        if event == "DELETED":
            self._objects.pop(key, None)
        else:
            self._objects[key] = obj

    def items(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """(resource id, object), in the order they were first seen."""
        return ((kind, obj) for (kind, _), obj in self._objects.items())

    def __len__(self) -> int:
        return len(self._objects)
