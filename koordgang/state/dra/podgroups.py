"""The claims of the upstream PodGroups seen (``scheduling.k8s.io``), by namespace and name:
which of a member's claim entries are its PodGroup's, and the PodGroup's uid, which a claim
reserved for it names. Fed by the DynamicResources plugin from the PodGroup events it asks
for; each framework's plugin (the daemon's, a what-if's) keeps its own."""

from __future__ import annotations

from koordgang.model.dra import PodGroupClaims

__all__ = ["PodGroupClaimStore"]


class PodGroupClaimStore:
    __slots__ = ("_groups",)

    def __init__(self) -> None:
        self._groups: dict[str, PodGroupClaims] = {}

    def get(self, namespace: str, name: str) -> PodGroupClaims | None:
        return self._groups.get(f"{namespace}/{name}")

    def upsert(self, group: PodGroupClaims) -> bool:
        """Keeps ``group``; True when what its members' claims depend on changed (a new
        PodGroup, other claims, a claim made for it)."""
        before = self._groups.get(group.key)
        self._groups[group.key] = group
        return before != group

    def remove(self, key: str) -> bool:
        return self._groups.pop(key, None) is not None

    def __len__(self) -> int:
        return len(self._groups)
