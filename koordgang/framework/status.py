"""Outcomes of extension points: codes, not exceptions.

A plugin says "this node does not fit because ..." by returning a Status; exceptions are kept for
bugs and I/O failures.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Code(enum.IntEnum):
    SUCCESS = 0
    #: Does not fit now; may fit after other pods go away (preemption could help).
    UNSCHEDULABLE = 1
    #: Does not fit and no preemption on this node could change that (labels, taints).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 2
    #: Placed but held back (a gang waiting for its other members).
    WAIT = 3
    #: An internal error: the attempt is retried with backoff.
    ERROR = 4
    #: The plugin has nothing to say about this pod.
    SKIP = 5


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    #: Short, user-facing reasons, in kube-scheduler's wording (``Insufficient cpu``).
    reasons: tuple[str, ...] = ()
    #: Name of the plugin that returned it, for diagnostics.
    plugin: str = ""

    @property
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    def message(self) -> str:
        return ", ".join(self.reasons)

    @staticmethod
    def unschedulable(plugin: str, *reasons: str) -> Status:
        return Status(Code.UNSCHEDULABLE, reasons, plugin)

    @staticmethod
    def unresolvable(plugin: str, *reasons: str) -> Status:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)

    @staticmethod
    def error(plugin: str, reason: str) -> Status:
        return Status(Code.ERROR, (reason,), plugin)


SUCCESS = Status()
#: "Nothing to say about this pod": the plugin is left out for it.
SKIP = Status(Code.SKIP)
