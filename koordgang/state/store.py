"""What every store of a watched kind offers the intake, and what a change to one says.

Nodes and pods live in the cache; every other kind the daemon watches (namespaces, volume
claims, disruption budgets, the Dynamic Resource Allocation kinds) lives in a store of its own,
declared once with its kind (``engine/kinds.py``). The intake hands each store what the
informers deliver, through the three calls of :class:`Store`, and learns from the returned
:class:`StoreChange` what else to do: which nodes to mark changed in the cache (a kind some
nodes' state derives from, such as devices), and what to log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

__all__ = ["Store", "StoreChange", "StoreOf"]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


@dataclass(slots=True)
class StoreChange:
    """What one update of a store changed."""

    #: What the store holds changed (not only an object's version).
    changed: bool = False
    #: Nodes whose state derives from the kind and changed (their devices, or the use of
    #: them): every view and index of them is redone.
    nodes: set[str] = field(default_factory=set)
    #: Those nodes only got fuller (devices taken): nothing that did not fit there fits now.
    grew: bool = False
    #: The object was not known before (a claim made for a pod waiting for it).
    added: bool = False
    #: Something pods may have waited for was given back (a claim's allocation, wherever
    #: its devices were): they may go elsewhere now.
    released: bool = False
    #: Problems the update revealed, for the log: (message, fields).
    warnings: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    @property
    def roomier(self) -> bool:
        """Some node may have more room now than before."""
        return bool(self.nodes) and not self.grew


class Store(Protocol[T_contra]):
    """A store of one watched kind, fed by its informer: one object at a time, or a whole
    fresh LIST (after a start or a relist) that replaces what the store holds."""

    def upsert(self, item: T_contra) -> StoreChange: ...

    def remove(self, key: str) -> StoreChange: ...

    def replace(self, items: Iterable[T_contra]) -> StoreChange: ...


class StoreOf(Generic[T]):
    """A store made of three calls of an object that keeps more than one kind (the DRA
    manager), or that does more than keep it (the intake, for pods and nodes)."""

    __slots__ = ("remove", "replace", "upsert")

    def __init__(
        self,
        upsert: Callable[[T], StoreChange],
        remove: Callable[[str], StoreChange],
        replace: Callable[[Iterable[T]], StoreChange],
    ) -> None:
        self.upsert = upsert
        self.remove = remove
        self.replace = replace
