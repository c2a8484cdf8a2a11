"""When a pod's room is free again at the latest: its own deadline, its Job's, the grace period
and the lag, checked by hand on timelines."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.model.errors import ModelError
from koordgang.model.job import JobInfo, parse_job
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.model.time import format_rfc3339
from koordgang.model.time_limits import free_by, free_by_if_started, overdue, steady_until


def pod(
    *,
    deadline: int | None = None,
    started: float | None = None,
    grace: int | None = None,
    phase: str = "Running",
    deleting: float | None = None,
) -> PodInfo:
    spec: dict[str, Any] = {"nodeName": "n1", "containers": [{"name": "c"}]}
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    metadata: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": "p"}
    if deleting is not None:
        metadata["deletionTimestamp"] = format_rfc3339(deleting)
    status: dict[str, Any] = {"phase": phase}
    if started is not None:
        status["startTime"] = format_rfc3339(started)
    return parse_pod({"metadata": metadata, "spec": spec, "status": status})


def job(deadline: int | None, started: float | None, *, suspended: bool = False) -> JobInfo:
    spec: dict[str, Any] = {"suspend": suspended}
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    status = {"startTime": format_rfc3339(started)} if started is not None else {}
    return parse_job({"metadata": {"name": "j", "namespace": "ns"}, "spec": spec, "status": status})


def test_a_pod_deadline_counts_from_its_start_plus_grace_and_lag() -> None:
    # Started at 1000 for 600 s, 30 s of grace, 10 s of lag.
    assert free_by(pod(deadline=600, started=1000), None, now=1100) == 1640


def test_a_pod_without_limits_has_no_bound() -> None:
    assert free_by(pod(started=1000), None, now=1100) is None
    assert free_by(pod(started=1000), job(None, 900), now=1100) is None


def test_the_jobs_deadline_bounds_its_pods_when_it_comes_first() -> None:
    # The Job started at 900 for 300 s: 1200, before the pod's own 1600.
    assert free_by(pod(deadline=600, started=1000), job(300, 900), now=1100) == 1240
    # Without a deadline of its own, the pod goes with its Job.
    assert free_by(pod(started=1000), job(300, 900), now=1100) == 1240


def test_a_suspended_or_unstarted_jobs_clock_does_not_run() -> None:
    assert free_by(pod(started=1000), job(300, 900, suspended=True), now=1100) is None
    assert free_by(pod(started=1000), job(300, None), now=1100) is None


def test_a_pod_not_started_yet_starts_its_clock_now_at_the_earliest() -> None:
    assert free_by(pod(deadline=60), None, now=5000) == 5000 + 60 + 30 + 10


def test_a_pod_past_its_deadline_is_free_a_grace_period_from_now() -> None:
    assert free_by(pod(deadline=10, started=0), None, now=1000) == 1000 + 30 + 10


def test_the_grace_period_is_the_pods_own() -> None:
    assert free_by(pod(deadline=600, started=1000, grace=0), None, now=1100) == 1610


def test_a_terminating_pod_is_free_by_its_deletion_timestamp() -> None:
    # The API server set the deletion timestamp to the request plus the grace period.
    assert free_by(pod(started=1000, deleting=2000), None, now=1900) == 2010


def test_a_finished_pod_is_free_now() -> None:
    assert free_by(pod(deadline=600, started=1000, phase="Succeeded"), None, now=1100) == 1100


def test_malformed_limits_name_their_field() -> None:
    with pytest.raises(ModelError, match=r"spec\.activeDeadlineSeconds"):
        parse_pod({"metadata": {"name": "p"}, "spec": {"activeDeadlineSeconds": "soon"}})
    with pytest.raises(ModelError, match=r"spec\.suspend"):
        parse_job({"metadata": {"name": "j"}, "spec": {"suspend": "yes"}})
    with pytest.raises(ModelError, match=r"spec\.activeDeadlineSeconds"):
        parse_job({"metadata": {"name": "j"}, "spec": {"activeDeadlineSeconds": [1]}})


def test_a_pending_pods_job_runs_its_clock_before_its_start_is_seen() -> None:
    """The Job controller writes startTime after it made the pods: a Job with pods started
    by now (unless suspended, when nothing runs)."""
    pending = pod(phase="Pending")
    assert free_by_if_started(pending, job(300, None), now=1100) == 1100 + 300 + 30 + 10
    assert free_by_if_started(pending, job(300, 1000), now=1100) == 1000 + 300 + 30 + 10
    assert free_by_if_started(pending, job(300, None, suspended=True), now=1100) is None
    assert (
        free_by_if_started(pod(deadline=60, phase="Pending"), None, now=1100) == 1100 + 60 + 30 + 10
    )


def test_a_pod_stuck_terminating_past_its_deletion_is_free_a_lag_from_now() -> None:
    assert free_by(pod(started=1000, deleting=2000), None, now=3000) == 3010


def test_a_pod_past_its_bound_is_overdue_one_within_it_or_without_one_is_not() -> None:
    # Started at 1000 for 600 s, 30 s of grace, 10 s of lag: due by 1640.
    assert not overdue(pod(deadline=600, started=1000), None, now=1640)
    assert overdue(pod(deadline=600, started=1000), None, now=1641)
    assert overdue(pod(started=1000), job(300, 900), now=1241)
    assert not overdue(pod(started=1000), None, now=99_999)
    assert overdue(pod(started=1000, deleting=2000), None, now=2011)
    assert not overdue(pod(deadline=10, started=0, phase="Succeeded"), None, now=99_999)


@pytest.mark.parametrize(
    ("the_pod", "the_job"),
    [
        (pod(deadline=600, started=1000), None),
        (pod(deadline=600, started=1000), job(300, 900)),
        (pod(started=1000), job(300, 900)),
        (pod(started=1000), job(300, 900, suspended=True)),
        (pod(started=1000), None),
        (pod(deadline=600), None),
        (pod(deadline=600, started=1000, deleting=1300), None),
        (pod(deadline=600, started=1000, phase="Failed"), None),
    ],
)
def test_a_bound_read_once_holds_until_steady_until(
    the_pod: PodInfo, the_job: JobInfo | None
) -> None:
    """A bound kept from one plan to the next is what reading it again would give, at every
    moment up to ``steady_until``; and reading it again past that is needed (it changes)."""
    for now in (1100.0, 1250.0, 1500.0, 1700.0):
        until = steady_until(the_pod, the_job, now)
        assert until >= now
        then = [now + step for step in (0.0, 1.0, 60.0, 5_000.0) if now + step <= until]
        for moment in [*then, until]:
            assert free_by(the_pod, the_job, moment) == free_by(the_pod, the_job, now)
            assert overdue(the_pod, the_job, moment) == overdue(the_pod, the_job, now)
        if until < float("inf"):
            later = until + 100.0
            assert (free_by(the_pod, the_job, later), overdue(the_pod, the_job, later)) != (
                free_by(the_pod, the_job, now),
                overdue(the_pod, the_job, now),
            )
