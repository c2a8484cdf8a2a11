"""PodGroup status as Koordinator and scheduler-plugins keep it (they share the shape): phase,
member counts, scheduleStartTime and occupiedBy."""

from __future__ import annotations

from typing import Any

from koordgang.gangapis.base import member_counts, occupied_by, rfc3339
from koordgang.state.gangs import Gang


def podgroup_phase(gang: Gang, scheduled: int, running: int, succeeded: int, failed: int) -> str:
    minimum = gang.spec.min_available or 0
    created = sum(1 for _ in gang.live_members())
    if gang.timed_out:
        return "Failed"
    if (minimum and succeeded >= minimum) or gang.finished:
        return "Finished"
    if failed and running + succeeded < minimum:
        return "Failed"
    if minimum and running + succeeded >= minimum:
        return "Running"
    if gang.below_minimum():
        # It ran whole and lost members: their replacements are being scheduled.
        return "Scheduling"
    if gang.satisfied or (minimum and scheduled >= minimum):
        return "Scheduled"
    if gang.held() or scheduled or gang.first_attempt is not None:
        return "Scheduling"
    if minimum and created >= minimum:
        return "PreScheduling"
    return "Pending"


def podgroup_status(gang: Gang) -> dict[str, Any]:
    counts = member_counts(gang)
    status: dict[str, Any] = {
        "phase": podgroup_phase(
            gang, counts.scheduled, counts.running, counts.succeeded, counts.failed
        ),
        "scheduled": counts.scheduled,
        "running": counts.running,
        "succeeded": counts.succeeded,
        "failed": counts.failed,
    }
    if gang.first_attempt is not None:
        status["scheduleStartTime"] = rfc3339(gang.first_attempt)
    owner = occupied_by(gang)
    if owner:
        status["occupiedBy"] = owner
    return status
