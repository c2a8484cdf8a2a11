"""Backfill into held room: when a reserving job has its room on each node it holds at the
latest, and when a group placed now is done with its room at the latest. A group whose end
comes by the job's room on a node may use the room held there: it never makes the job start
later than the pods it waits for would by their time limits.

Each node by itself, not the job's start (the latest of its nodes): pods end before their
time limits, often well before, and the job in fact starts when its last node has room, which
the limits do not say. A pod let in on a node that is free early by the limits, to end just
before the node whose limits come last, would keep that node busy after the job could in fact
have had it; ending before the node's own room comes by the limits, it is not what the job
waits for unless the pods there run as long as their limits allow. Nor is the room lent by
the bounds of what was let in before: the pods the job held the room for ending early, the
job would else wait for one let-in after another, each coming in on the bound of the one
before, up to the start the first limits gave, not for the room they in fact left.

Both are wall-clock times from ``model/time_limits.free_by``; None means unbounded (a pod
without a time limit, which nothing here guesses), and unbounded never lends or borrows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from koordgang.framework.group import SchedulingGroup
from koordgang.model.job import JobInfo
from koordgang.model.pod import PodInfo
from koordgang.model.resources import Resources
from koordgang.model.time_limits import free_by, free_by_if_started, overdue
from koordgang.state.cache import SchedulerCache

__all__ = ["ends_by", "node_starts", "starts_by"]

#: The Job a pod belongs to, if the daemon knows it.
JobOf = Callable[[PodInfo], JobInfo | None]


def starts_by(
    nominations: Mapping[str, str], cache: SchedulerCache, jobs: JobOf, now: float
) -> float | None:
    """When a reserving job has its room at the latest: it binds whole, so the latest of its
    nodes' (``node_starts``). None when a node's room needs a pod without a bound to go."""
    start = now
    for at in node_starts(nominations, cache, jobs, now).values():
        if at is None:
            return None
        start = max(start, at)
    return start


def node_starts(
    nominations: Mapping[str, str],
    cache: SchedulerCache,
    jobs: JobOf,
    now: float,
    ignore: Collection[str] = (),
) -> dict[str, float | None]:
    """node -> when a reserving job has its room there at the latest: the first moment the
    pods there (all of them, not only those it planned to wait for: one that ends sooner may
    make the room first; terminating ones until their deletion) have left enough for its
    members nominated there, by their bounds. None where that needs a pod without a bound (or
    one past it) to go. Pods in ``ignore`` are left out."""
    needed: dict[str, Resources] = {}
    for uid, node in nominations.items():
        member = cache.pod(uid)
        if member is not None:
            needed[node] = needed.get(node, Resources.EMPTY) + member.requests
    return {
        node: _room_by(node, wanted, nominations, ignore, cache, jobs, now)
        for node, wanted in needed.items()
    }


def _room_by(
    node: str,
    wanted: Resources,
    members: Mapping[str, str],
    ignore: Collection[str],
    cache: SchedulerCache,
    jobs: JobOf,
    now: float,
) -> float | None:
    state = cache.node(node)
    if state is None or state.info is None:
        return None
    used = Resources.EMPTY
    # (end, requests, overdue): a pod past its bound has no known end any more.
    ends: list[tuple[float, Resources, bool]] = []
    endless = Resources.EMPTY
    for uid in state.pods:
        pod = cache.pod(uid)
        if pod is None or uid in members or uid in ignore:
            continue
        used = used + pod.requests
        end = free_by(pod, jobs(pod), now)
        if end is None:
            endless = endless + pod.requests
        else:
            ends.append((end, pod.requests, overdue(pod, jobs(pod), now)))
    room = state.info.allocatable
    if not (used + wanted).exceeds(room):
        return now
    if (endless + wanted).exceeds(room):
        return None
    for end, requests, late in sorted(ends, key=lambda e: e[0]):
        if late:
            return None
        used = used - requests
        if not (used + wanted).exceeds(room):
            return end
    return None


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
