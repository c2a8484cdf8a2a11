"""Jobs seen failing for room, and whose turn it is to hold room when a place comes free."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass

__all__ = ["Waiting", "ahead"]


@dataclass(slots=True)
class Waiting:
    """A job seen failing: since when, and when last; its place in the queue (priority, then
    age), the members it still needs, and whether holding room would let it fit when it
    last asked."""

    first: float
    last: float
    priority: int = 0
    created: float = 0.0
    members: tuple[str, ...] = ()
    could_hold: bool = True

    def ahead_of(self, other: Waiting) -> bool:
        return (-self.priority, self.created) < (-other.priority, other.created)


def ahead(
    waiting: Mapping[str, Waiting],
    key: str,
    reserving: Collection[str],
    now: float,
    reserve_after: float,
) -> Iterator[Waiting]:
    """The jobs that go before ``key`` when a place to hold room comes free: ahead of it in
    queue order, not holding room already, waiting ``reserve_after`` too, and able to hold
    room when they last asked (one that could not would keep the place from everyone). The
    caller checks that they still wait."""
    mine = waiting[key]
    for other_key, other in waiting.items():
        if (
            other_key != key
            and other_key not in reserving
            and other.could_hold
            and other.ahead_of(mine)
            and now - other.first >= reserve_after
        ):
            yield other
