"""Which gangs a scheduling group is made of: the name its held places and nominations are
filed under, from one cycle to the next."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ALONE", "GroupKey"]


@dataclass(frozen=True, slots=True, order=True)
class GroupKey:
    """The keys (``namespace/name``) of a group's gangs, sorted; none for a pod that goes
    alone (falsy, like an empty name)."""

    gangs: tuple[str, ...] = ()

    @staticmethod
    def of(gangs: Iterable[str]) -> GroupKey:
        return GroupKey(tuple(sorted(set(gangs))))

    def __bool__(self) -> bool:
        return bool(self.gangs)

    def __str__(self) -> str:
        """As users read it: ``ns/a + ns/b``."""
        return " + ".join(self.gangs)


#: The key of a pod that goes alone.
ALONE = GroupKey()
