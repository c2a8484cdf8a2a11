"""State of other kinds that follows the cache's pods onto nodes, and its part of a snapshot.

Devices are the one such kind: a pod placed on a node takes the devices its claims are given
there, and a pod taken away in a what-if gives them back. The cache keeps nodes and pods only;
a :class:`CacheExtension` (the DRA manager) keeps the rest in a store of its own, is told when
the cache gives a pod up, and gives every snapshot a :class:`SnapshotView`: its part of that
what-if, forked and committed with the snapshot, which marks the nodes it changes on the
snapshot (``Snapshot.touch``) so that every index of them is redone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from koordgang.state.store import StoreChange

if TYPE_CHECKING:
    from koordgang.state.snapshot import Placement, Snapshot

__all__ = ["CacheExtension", "SnapshotView"]


class SnapshotView(Protocol):
    """An extension's part of one snapshot."""

    def fork(self, snapshot: Snapshot) -> SnapshotView:
        """Its part of ``snapshot``, a fork of the snapshot this view belongs to."""
        ...

    def rebase(self, parent: Snapshot) -> None:
        """The fork this view belongs to was committed: the view is ``parent``'s now."""
        ...

    def unplaced(self, uid: str) -> None:
        """A pod placed in this view was taken away again."""
        ...

    def removed(self, uid: str) -> None:
        """A pod of the cache left this view (a victim in a dry run)."""
        ...

    def restored(self, uid: str) -> None:
        """A pod removed in this view came back."""
        ...

    def release_left_behind(self) -> None:
        """What pods that are gone or going still hold (claims not yet given back) counts as
        free in this view: room on its way."""
        ...

    def commit(self, placements: Sequence[Placement]) -> StoreChange:
        """The root snapshot is committed with these placements: what this view made for them
        becomes the extension's (assumed, until seen written)."""
        ...


class CacheExtension(Protocol):
    def pod_released(self, uid: str) -> StoreChange:
        """The cache gave up the pod (its placement forgotten, the pod ended or gone): what
        was assumed for it holds nothing any more."""
        ...

    def new_view(self, snapshot: Snapshot) -> SnapshotView:
        """Its part of a root snapshot, as the extension is now."""
        ...
