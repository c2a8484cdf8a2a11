"""The cost guard of one evaluation: calls into the Python functions of Kubernetes' libraries
are counted, and fail past Kubernetes' limit (cel-expr-python has no cost accounting)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from koordgang.model.cel.errors import FunctionFailed

__all__ = ["budget", "counted"]


class _Budget:
    """Counts calls into the Python functions of one evaluation.

    cel-expr-python has no cost accounting, so the Kubernetes limit (1,000,000 units, at least
    one per function call) cannot be enforced as such. Each call below costs at least one
    unit in Kubernetes too, so refusing past the limit never refuses an evaluation Kubernetes
    would finish. Once spent, every further call fails at once, which keeps a runaway
    comprehension from calling Python millions of times more.
    """

    __slots__ = ("calls", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.calls = 0

    def reset(self) -> None:
        self.calls = 0

    @property
    def exceeded(self) -> bool:
        return self.calls > self.limit

    def charge(self) -> None:
        self.calls += 1
        if self.calls > self.limit:
            raise FunctionFailed("actual cost limit exceeded")


# One evaluation at a time: the model layer runs on the scheduler's single thread.
budget = _Budget(limit=1_000_000)


def counted(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, charged to the budget at every call."""

    def call(*args: Any) -> Any:
        budget.charge()
        return function(*args)

    call.__name__ = function.__name__
    return call
