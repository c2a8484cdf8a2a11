"""Per-attempt scratch space that plugins share during one scheduling cycle."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")

#: A GroupPreFilter that rejects a group may leave here what each member is told
#: (``dict[pod uid, str]``); members it does not name are told the rejection's message.
UNPLACED_MESSAGES = "framework/unplaced-messages"
#: A PreFilter whose plugin's verdicts depend on more than the pod's shape (the claims it
#: asks for, say) leaves here a hashable value for that more: pods share their per-node
#: verdicts only when shape and this value are equal.
SHAPE_DETAIL = "framework/shape-detail"
#: Filters may add here what they noticed about the pod as a whole while looking at the
#: nodes (``list[str]``): it follows the per-node reasons when no node fits.
POD_NOTES = "framework/pod-notes"
#: A filter that failed on a node for a reason that is not the node's verdict (an error in
#: what the pod or a class asks, met while evaluating it) leaves its ERROR status here: the
#: pod's attempt fails with it, whatever other nodes said, and is retried with backoff.
FILTER_ERROR = "framework/filter-error"


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
