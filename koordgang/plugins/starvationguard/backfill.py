"""Backfill into held room: when a reserving job starts on its nodes at the latest, and when a
group placed now is done with its room at the latest. A group whose end comes by the job's
start may use the room held for the job: it never makes the job start later than the pods
it waits for would by their time limits.

Both are wall-clock times from ``model/time_limits.free_by``; None means unbounded (a pod
without a time limit, which nothing here guesses), and unbounded never lends or borrows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from koordgang.framework.group import SchedulingGroup
from koordgang.model.job import JobInfo
from koordgang.model.pod import PodInfo
from koordgang.model.time_limits import free_by, free_by_if_started

__all__ = ["ends_by", "starts_by"]

#: The Job a pod belongs to, if the daemon knows it.
JobOf = Callable[[PodInfo], JobInfo | None]


def starts_by(
    waits_for: Iterable[str], pod_of: Callable[[str], PodInfo | None], jobs: JobOf, now: float
) -> float | None:
    """When a reserving job has its room at the latest: once every pod it waits for (by uid;
    those gone count no more) has reached its bound. None when one of them has none; ``now``
    when it waits for nobody (it is about to bind: nothing ends before that)."""
    start = now
    for uid in waits_for:
        pod = pod_of(uid)
        if pod is None:
            continue
        end = free_by(pod, jobs(pod), now)
        if end is None:
            return None
        start = max(start, end)
    return start


def ends_by(group: SchedulingGroup, jobs: JobOf, now: float, waiting_time: float) -> float | None:
    """When ``group``'s room is free at the latest if it is placed now: its members started
    now, each ending at its own or its Job's time limit, whichever comes first. A gang that may
    hold its placements while short of members (NonStrict) holds them up to its waiting time
    before it starts: that counts too. None when a member has no bound."""
    latest: float | None = None
    for pod in group.members():
        end = free_by_if_started(pod, jobs(pod), now)
        if end is None:
            return None
        latest = end if latest is None else max(latest, end)
    if latest is None:
        return None
    if group.key and any(not part.strict for part in group.parts):
        latest += waiting_time
    return latest
