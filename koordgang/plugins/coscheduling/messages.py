"""What pending gang members are told, in one place so that wording stays consistent."""

from __future__ import annotations

from koordgang.framework.group import GroupPlan, PartPlan
from koordgang.model.gang import GangMode
from koordgang.state.gangs import Gang


def created_count(gang: Gang) -> int:
    return sum(1 for _ in gang.live_members())


def duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def progress(plan: PartPlan, created: int) -> str:
    return f"{plan.counted}/{created} members placed, min {plan.part.minimum}"


def culprit(plan: GroupPlan) -> PartPlan:
    """The part that kept the group from its minimum (the first that failed to place a pod)."""
    for part in plan.parts:
        if part.short and part.failed:
            return part
    return next((p for p in plan.parts if p.short), plan.parts[0])


def unsatisfied(plan: GroupPlan, own: PartPlan, gang: Gang, other: Gang, holding: int) -> str:
    """Why members of ``gang`` (its part ``own``) still wait after an attempt of their group;
    ``other`` is the gang of the culprit part, ``holding`` what ``gang`` holds afterwards."""
    blamed = culprit(plan)
    # A gang speaks of itself if it failed to place a member; one that was not tried (a Strict
    # attempt stopped at another gang) or that was fine is told whom it waits for.
    if own.short and (own.failed or blamed is own):
        message = f"gang {gang.key}: {progress(own, created_count(gang))}"
        failure = own.first_failure
    else:
        message = (
            f"gang {gang.key} waits for {other.key} in its group: {other.key} has "
            f"{progress(blamed, created_count(other))}"
        )
        failure = blamed.first_failure
    if gang.spec.mode is GangMode.NON_STRICT and holding:
        held = f" (holding {holding} reservation(s) for at most {duration(gang.spec.waiting_time)})"
        head = f"gang {gang.key}"
        if message.startswith(head + " waits for"):
            # Right after the gang's own name, so that the holding is not read as the partner's.
            message = head + held + message[len(head) :]
        else:
            message += held
    return f"{message}; {failure}" if failure else message


def timed_out(gang: Gang) -> str:
    spec = gang.spec
    return (
        f"gang {gang.key} timed out after {duration(spec.waiting_time)} without reaching min "
        f"{spec.min_available}: its reservations were released and its pods will not be "
        "scheduled again (delete and recreate them to retry)"
    )


def timed_out_replacement(gang: Gang) -> str:
    return (
        f"gang {gang.key} timed out; this pod will be scheduled once the gang's timed-out "
        "members are deleted"
    )


def with_notes(gang: Gang, message: str) -> str:
    """Settings that fell back to a default are named while the pod waits, so that a typo is
    not mistaken for the reason it waits."""
    notes = [issue.message() for issue in gang.spec.issues if not issue.fatal]
    if notes:
        return f"{message} (ignored settings: {'; '.join(notes)})"
    return message
