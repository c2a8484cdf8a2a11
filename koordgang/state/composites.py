"""The forest of CompositePodGroups: which composite is whose parent, which PodGroups hang
under each, and whether a hierarchy can be used (no cycle, not too deep, no missing parent).

One owner: the coscheduling plugin feeds it from the API server's events; whoever needs a
gang's hierarchy asks it. PodGroups are known here by key and parent only: the gangs, their
members and their PodGroups stay in :class:`~koordgang.state.gangs.GangRegistry`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from koordgang.model.composite import MAX_COMPOSITE_LEVELS, CompositeInfo


@dataclass(frozen=True, slots=True)
class Ancestry:
    """The composites above a group, nearest first, or what makes its hierarchy unusable."""

    chain: tuple[CompositeInfo, ...] = ()
    problem: str = ""


class CompositeForest:
    def __init__(self) -> None:
        self._composites: dict[str, CompositeInfo] = {}
        #: PodGroup key -> the key of the composite it names as parent.
        self._podgroup_parent: dict[str, str] = {}
        #: Parent key -> the PodGroups, and the composites, naming it (kept with the above).
        self._podgroups_of: dict[str, set[str]] = {}
        self._composites_of: dict[str, set[str]] = {}
        #: What the members of each composite were last told while it could not be placed
        #: (what its condition says).
        self.last_message: dict[str, str] = {}

    # -- feeding -------------------------------------------------------------------------------

    def upsert(self, composite: CompositeInfo) -> None:
        self._unindex(composite.key)
        self._composites[composite.key] = composite
        if composite.policy.parent:
            parent = f"{composite.namespace}/{composite.policy.parent}"
            self._composites_of.setdefault(parent, set()).add(composite.key)

    def delete(self, key: str) -> CompositeInfo | None:
        self.last_message.pop(key, None)
        self._unindex(key)
        return self._composites.pop(key, None)

    def _unindex(self, key: str) -> None:
        composite = self._composites.get(key)
        if composite is not None and composite.policy.parent:
            _discard(self._composites_of, f"{composite.namespace}/{composite.policy.parent}", key)

    def link_podgroup(self, key: str, namespace: str, parent: str) -> None:
        """``key`` (a PodGroup) names ``parent`` as its CompositePodGroup ("" for none)."""
        self.unlink_podgroup(key)
        if parent:
            self._podgroup_parent[key] = f"{namespace}/{parent}"
            self._podgroups_of.setdefault(f"{namespace}/{parent}", set()).add(key)

    def unlink_podgroup(self, key: str) -> None:
        parent = self._podgroup_parent.pop(key, None)
        if parent is not None:
            _discard(self._podgroups_of, parent, key)

    # -- reading -------------------------------------------------------------------------------

    def get(self, key: str) -> CompositeInfo | None:
        return self._composites.get(key)

    def composites(self) -> Iterable[CompositeInfo]:
        return self._composites.values()

    def parent_of_podgroup(self, key: str) -> str:
        return self._podgroup_parent.get(key, "")

    def ancestry(self, namespace: str, parent: str) -> Ancestry:
        """The composites above a group whose parent is ``parent`` (in ``namespace``)."""
        chain: list[CompositeInfo] = []
        seen: list[str] = []
        name = parent
        while name:
            key = f"{namespace}/{name}"
            if key in seen:
                loop = " -> ".join([*seen[seen.index(key) :], key])
                return Ancestry(tuple(chain), f"its CompositePodGroups form a cycle ({loop})")
            composite = self._composites.get(key)
            if composite is None:
                where = f" (parent of {seen[-1]})" if seen else ""
                return Ancestry(
                    tuple(chain), f"CompositePodGroup {key}{where} does not exist (yet)"
                )
            seen.append(key)
            chain.append(composite)
            if len(chain) > MAX_COMPOSITE_LEVELS:
                return Ancestry(
                    tuple(chain),
                    f"it is nested under more than {MAX_COMPOSITE_LEVELS} CompositePodGroups "
                    f"({' -> '.join(seen)})",
                )
            name = composite.policy.parent
        return Ancestry(tuple(chain))

    def child_composites(self, key: str) -> list[str]:
        return sorted(self._composites_of.get(key, ()))

    def child_podgroups(self, key: str) -> list[str]:
        return sorted(self._podgroups_of.get(key, ()))

    def leaves(self, key: str) -> list[str]:
        """Every PodGroup under composite ``key``, at any depth (a cycle is walked once)."""
        found: list[str] = []
        seen: set[str] = set()
        stack = [key]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            found += self.child_podgroups(current)
            stack += self.child_composites(current)
        return sorted(found)


def _discard(index: dict[str, set[str]], parent: str, key: str) -> None:
    children = index.get(parent)
    if children is not None:
        children.discard(key)
        if not children:
            del index[parent]
