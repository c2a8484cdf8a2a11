"""PersistentVolumeClaims by ``namespace/name``: whether a pod's volumes are bound yet."""

from __future__ import annotations

from collections.abc import Iterable

from koordgang.model.volumes import ClaimInfo
from koordgang.state.store import StoreChange

__all__ = ["VolumeClaims"]


class VolumeClaims:
    def __init__(self) -> None:
        self._claims: dict[str, ClaimInfo] = {}

    def upsert(self, claim: ClaimInfo) -> StoreChange:
        """Changed: the claim is new, or its phase or volume changed."""
        changed = self._claims.get(claim.key) != claim
        self._claims[claim.key] = claim
        return StoreChange(changed=changed)

    def remove(self, key: str) -> StoreChange:
        return StoreChange(changed=self._claims.pop(key, None) is not None)

    def replace(self, items: Iterable[ClaimInfo]) -> StoreChange:
        self._claims = {claim.key: claim for claim in items}
        return StoreChange(changed=True)

    def claim(self, namespace: str, name: str) -> ClaimInfo | None:
        return self._claims.get(f"{namespace}/{name}")
