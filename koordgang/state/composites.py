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

    # -- feeding -------------------------------------------------------------------------------

    def upsert(self, composite: CompositeInfo) -> None:
        self._composites[composite.key] = composite

    def delete(self, key: str) -> CompositeInfo | None:
        return self._composites.pop(key, None)

    def link_podgroup(self, key: str, namespace: str, parent: str) -> None:
        """``key`` (a PodGroup) names ``parent`` as its CompositePodGroup ("" for none)."""
        if parent:
            self._podgroup_parent[key] = f"{namespace}/{parent}"
        else:
            self._podgroup_parent.pop(key, None)

    def unlink_podgroup(self, key: str) -> None:
        self._podgroup_parent.pop(key, None)

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
        namespace, _, name = key.partition("/")
        return sorted(
            c.key
            for c in self._composites.values()
            if c.namespace == namespace and c.policy.parent == name
        )

    def child_podgroups(self, key: str) -> list[str]:
        return sorted(pg for pg, parent in self._podgroup_parent.items() if parent == key)

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
