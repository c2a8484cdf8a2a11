"""Per-attempt scratch space that plugins share during one scheduling cycle."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")

#: A GroupPreFilter that rejects a group may leave here what each member is told
#: (``dict[pod uid, str]``); members it does not name are told the rejection's message.
UNPLACED_MESSAGES = "framework/unplaced-messages"


class CycleState:
    """A typed bag of values, created anew for every scheduling attempt.

    Plugins compute something once in PreFilter (say, the pod's parsed gang) and read it in
    Filter and Score for each node, without recomputing it per node.
    """

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}

    def write(self, key: str, value: object) -> None:
        self._data[key] = value

    def read(self, key: str, kind: type[T]) -> T | None:
        value = self._data.get(key)
        if value is None:
            return None
        if not isinstance(value, kind):
            raise TypeError(
                f"cycle state {key!r} holds {type(value).__name__}, not {kind.__name__}"
            )
        return value
