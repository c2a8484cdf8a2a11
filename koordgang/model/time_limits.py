"""Time limits the cluster enforces, and when a running pod's room is free again at the latest.

A pod's ``spec.activeDeadlineSeconds`` is enforced by its kubelet (the pod fails with reason
``DeadlineExceeded`` that long after ``status.startTime``); a Job's
``spec.activeDeadlineSeconds`` by the Job controller (it ends all the Job's pods that long after
the Job's ``status.startTime``, which is set when the Job first runs unsuspended and again on
resume, so time spent pending counts). Either ends the pod gracefully: its room is free once
its termination grace period has passed too. What is left is the kubelet's and the
controller's lag, an allowance of a few seconds.

A pod with neither limit has no bound: it may hold its room for ever, and nothing here
guesses otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from koordgang.model import _fields

if TYPE_CHECKING:
    from koordgang.model.job import JobInfo
    from koordgang.model.pod import PodInfo

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "LAG_SECONDS",
    "free_by",
    "free_by_if_started",
    "job_key",
    "overdue",
    "parse_time_limit",
    "steady_until",
]

#: ``terminationGracePeriodSeconds`` when a pod does not say.
DEFAULT_GRACE_SECONDS = 30
#: How late the kubelet or the Job controller may act on a deadline, and the API server's
#: deletion reach the informers (seconds).
LAG_SECONDS = 10.0


def parse_time_limit(spec: Mapping[str, Any]) -> tuple[int | None, int]:
    """(``activeDeadlineSeconds`` or None, ``terminationGracePeriodSeconds``) of a pod spec."""
    deadline = (
        _fields.integer(spec, "activeDeadlineSeconds", "spec.activeDeadlineSeconds")
        if spec.get("activeDeadlineSeconds") is not None
        else None
    )
    grace = _fields.integer(
        spec,
        "terminationGracePeriodSeconds",
        "spec.terminationGracePeriodSeconds",
        DEFAULT_GRACE_SECONDS,
    )
    return deadline, max(grace, 0)


def job_key(pod: PodInfo) -> str | None:
    """``namespace/name`` of the Job whose time limit bounds ``pod`` (its controlling owner),
    None when a Job does not own it."""
    return pod.owner if pod.owner_kind == "Job" and pod.owner else None


def free_by(pod: PodInfo, job: JobInfo | None, now: float) -> float | None:
    """When ``pod``'s room is free at the latest (a wall-clock time), or None when nothing
    bounds it. ``job`` is the pod's Job, if it has one the daemon knows."""
    if pod.is_terminal:
        return now
    if pod.deletion_timestamp is not None:
        # The API server sets it to the deletion's time plus the grace period; one still here
        # past it (a finalizer, a node gone quiet) is free a lag from now at the earliest.
        return max(pod.deletion_timestamp, now) + LAG_SECONDS
    # A pod not started yet starts now at the earliest, and its clock with it.
    deadline = _deadline(pod, job, pod.start_time if pod.start_time is not None else now)
    if deadline is None:
        return None
    return max(deadline, now) + pod.grace_seconds + LAG_SECONDS


def overdue(pod: PodInfo, job: JobInfo | None, now: float) -> bool:
    """``pod`` is still here past its bound, grace and lag included (its kubelet or Job
    controller is late, a finalizer holds it): when it goes is not known any more."""
    if pod.is_terminal:
        return False
    if pod.deletion_timestamp is not None:
        return pod.deletion_timestamp + LAG_SECONDS < now
    deadline = _deadline(pod, job, pod.start_time)
    return deadline is not None and deadline + pod.grace_seconds + LAG_SECONDS < now


def steady_until(pod: PodInfo, job: JobInfo | None, now: float) -> float:
    """The wall-clock moment up to which ``free_by`` and ``overdue`` of ``pod`` give what they
    give at ``now`` (as long as the pod and its Job are unchanged): a bound read once is good
    until then. ``now`` itself when they follow the clock (a terminal pod, one not started, one
    past its bound)."""
    if pod.is_terminal:
        return now
    if pod.deletion_timestamp is not None:
        # Past its bound a pod's room is free a lag from now: that follows the clock.
        return max(pod.deletion_timestamp, now)
    if pod.start_time is None:
        return now
    deadline = _deadline(pod, job, pod.start_time)
    return float("inf") if deadline is None else max(deadline, now)


def _deadline(pod: PodInfo, job: JobInfo | None, started: float | None) -> float | None:
    """The earlier of ``pod``'s own deadline (its clock started at ``started``; None: not
    counted) and its Job's (a suspended or unstarted Job's clock does not run); None when
    neither applies."""
    ends: list[float] = []
    if pod.active_deadline_seconds is not None and started is not None:
        ends.append(started + pod.active_deadline_seconds)
    if (
        job is not None
        and job.active_deadline_seconds is not None
        and job.start_time is not None
        and not job.suspended
    ):
        ends.append(job.start_time + job.active_deadline_seconds)
    return min(ends) if ends else None


def free_by_if_started(pod: PodInfo, job: JobInfo | None, now: float) -> float | None:
    """When a pending ``pod``'s room would be free at the latest if it started now, or None
    when nothing would bound it. Its Job's clock runs even when the Job's ``status.startTime``
    has not been seen yet: the Job controller sets it before it makes the Job's pods and
    writes it after, so a Job with pods started by now."""
    if job is not None and job.start_time is None and not job.suspended:
        job = replace(job, start_time=now)
    return free_by(pod, job, now)
