"""What a waiting job's pods are told of its start: a time and what it waits for, or why
there is none."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from koordgang.framework.diagnosis import plural
from koordgang.state.start_plan import Estimate

__all__ = ["by_minute", "clock", "describe"]

#: Names shown before "and N more".
SHOWN = 3


def by_minute(moment: float) -> float:
    """``moment`` rounded up to its minute: a start shown to the minute is never earlier than
    planned."""
    return float(math.ceil(moment / 60) * 60)


def clock(moment: float, now: float) -> str:
    """``14:20 UTC`` (rounded up to the minute); with the day when it is not today's
    (``2026-12-07 14:20 UTC``)."""
    moment = by_minute(moment)
    same_day = time.gmtime(moment)[:3] == time.gmtime(now)[:3]
    return time.strftime("%H:%M UTC" if same_day else "%Y-%m-%d %H:%M UTC", time.gmtime(moment))


def names(items: Sequence[str]) -> str:
    shown = ", ".join(items[:SHOWN])
    return shown if len(items) <= SHOWN else f"{shown} and {len(items) - SHOWN} more"


def describe(estimate: Estimate, now: float, *, limited: bool) -> str:
    """The note for the job's pods; "" when the plan has nothing to say (its members fit on
    no node even empty, or fit now by the plan's reckoning, which counts room alone). Room
    held without a time limit is named only to a job that has one (``limited``): on a
    cluster where nothing has a time limit, every pod would be told so at every attempt."""
    if estimate.start is not None:
        if estimate.start <= now:
            return ""
        where = names(sorted(estimate.nodes))
        text = f"expected to start by {clock(estimate.start, now)} (an estimate)"
        count = len(estimate.waits_for)
        if count:
            ends = "reaches its time limit" if count == 1 else "reach their time limits"
            text += f": {plural(count, 'pod')} on {where} {ends}"
        return text
    if estimate.held_by and limited:
        return (
            "no start time can be given: room it needs is held with no known end (no time "
            "limit, or not started yet) by "
            f"{names(estimate.held_by)}"
        )
    return ""
