"""PodGroup status, computed from what the scheduler knows of the gang."""

from __future__ import annotations

import datetime as dt
from typing import Any

from koordgang.state.gangs import Gang


def _rfc3339(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def podgroup_phase(gang: Gang, scheduled: int, running: int, succeeded: int, failed: int) -> str:
    minimum = gang.spec.min_available or 0
    created = sum(1 for _ in gang.live_members())
    if gang.timed_out:
        return "Failed"
    if minimum and succeeded >= minimum:
        return "Finished"
    if failed and running + succeeded < minimum:
        return "Failed"
    if minimum and running + succeeded >= minimum:
        return "Running"
    if gang.satisfied or (minimum and scheduled >= minimum):
        return "Scheduled"
    if gang.held() or scheduled or gang.first_attempt is not None:
        return "Scheduling"
    if minimum and created >= minimum:
        return "PreScheduling"
    return "Pending"


def podgroup_status(gang: Gang) -> dict[str, Any]:
    scheduled = running = succeeded = failed = 0
    for pod in gang.members.values():
        if pod.node_name:
            scheduled += 1
        if pod.phase == "Running":
            running += 1
        elif pod.phase == "Succeeded":
            succeeded += 1
        elif pod.phase == "Failed":
            failed += 1
    status: dict[str, Any] = {
        "phase": podgroup_phase(gang, scheduled, running, succeeded, failed),
        "scheduled": scheduled,
        "running": running,
        "succeeded": succeeded,
        "failed": failed,
    }
    if gang.first_attempt is not None:
        status["scheduleStartTime"] = _rfc3339(gang.first_attempt)
    owner = next((p.owner for p in gang.members.values() if p.owner), "")
    if owner:
        status["occupiedBy"] = owner
    return status
