"""What pending gang members are told, in one place so that wording stays consistent."""

from __future__ import annotations

from koordgang.model.gang import GangMode
from koordgang.plugins.coscheduling.planner import GangPlan, GroupPlan
from koordgang.state.gangs import Gang


def created_count(gang: Gang) -> int:
    return sum(1 for _ in gang.live_members())


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def culprit(plan: GroupPlan) -> GangPlan:
    """The gang that kept the group from its minimum (the first that failed to place a pod)."""
    for gang_plan in plan.gangs:
        if gang_plan.short and gang_plan.failed:
            return gang_plan
    return next((g for g in plan.gangs if g.short), plan.gangs[0])


def unsatisfied(plan: GroupPlan, gang_plan: GangPlan) -> str:
    """Why members of ``gang_plan``'s gang still wait after an attempt of their group."""
    gang = gang_plan.gang
    other = culprit(plan)
    # A gang speaks of itself if it failed to place a member; one that was not tried (a Strict
    # attempt stopped at another gang) or that was fine is told whom it waits for.
    if gang_plan.short and (gang_plan.failed or other is gang_plan):
        message = f"gang {gang.key}: {gang_plan.progress(created_count(gang))}"
        failure = gang_plan.first_failure
    else:
        message = (
            f"gang {gang.key} waits for {other.gang.key} in its group: {other.gang.key} has "
            f"{other.progress(created_count(other.gang))}"
        )
        failure = other.first_failure
    if gang.spec.mode is GangMode.NON_STRICT and gang.reserved:
        holding = (
            f" (holding {len(gang.reserved)} reservation(s) for at most "
            f"{_duration(gang.spec.waiting_time)})"
        )
        head = f"gang {gang.key}"
        if message.startswith(head + " waits for"):
            # Right after the gang's own name, so that the holding is not read as the partner's.
            message = head + holding + message[len(head) :]
        else:
            message += holding
    return f"{message}; {failure}" if failure else message


def timed_out(gang: Gang) -> str:
    spec = gang.spec
    return (
        f"gang {gang.key} timed out after {_duration(spec.waiting_time)} without reaching min "
        f"{spec.min_available}: its reservations were released and its pods will not be "
        "scheduled again (delete and recreate them to retry)"
    )
