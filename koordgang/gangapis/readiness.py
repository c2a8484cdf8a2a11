"""May a GangGroup be attempted now? Every gang of the group must exist, be valid, have its
PodGroup (if it uses one), and have at least ``min`` members created."""

from __future__ import annotations

from dataclasses import dataclass

from koordgang.model.gang import KOORDINATOR
from koordgang.state.gangs import Gang


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    ready: bool
    #: Why not, in words for the pod's condition (empty when ready).
    message: str = ""


READY = GroupVerdict(True)


def own_problem(gang: Gang) -> str:
    """Why ``gang`` itself cannot be tried yet ("" when it can)."""
    spec = gang.spec
    if gang.needs_podgroup() and "/" not in gang.ref.name:
        if gang.api == KOORDINATOR:
            return f"waiting for PodGroup {gang.key}"
        named = f", named by {gang.ref.named_by}" if gang.ref.named_by else ""
        return f"waiting for PodGroup {gang.key} ({gang.api}{named})"
    if not spec.startable:
        fatal = next((i for i in spec.issues if i.fatal), None)
        reason = fatal.message() if fatal is not None else "min-available is not usable"
        return f"cannot start: {reason}"
    minimum = spec.min_available or 0
    created = gated = 0
    schedulers: dict[str, int] = {}
    for pod in gang.live_members():
        if pod.scheduling_gates:
            gated += 1
        else:
            created += 1
        schedulers[pod.scheduler_name] = schedulers.get(pod.scheduler_name, 0) + 1
    if len(schedulers) > 1:
        # One daemon answers to several names, but a gang is one decision of one scheduler:
        # a job whose pods disagree is told so rather than scheduled under two names.
        named = ", ".join(f"{name} ({count})" for name, count in sorted(schedulers.items()))
        return (
            f"cannot start: its members name different schedulers ({named}); give every "
            "member the same spec.schedulerName"
        )
    if created < minimum:
        # Scheduling-gated members (Kueue holds pods this way) do not count until ungated.
        note = f" ({gated} more scheduling-gated)" if gated else ""
        return f"{created}/{minimum} members created{note}, min {minimum}"
    tasks = gang.podgroup.task_minimums if gang.podgroup is not None else {}
    if tasks:
        per_task: dict[str, int] = {}
        for pod in gang.live_members():
            if not pod.scheduling_gates:
                task = gang.task_of(pod)
                per_task[task] = per_task.get(task, 0) + 1
        for task, need in sorted(tasks.items()):
            have = per_task.get(task, 0)
            if have < need:
                return (
                    f"task {task} has {have}/{need} members created "
                    f"(spec.minTaskMember[{task}]={need}; members name their task in "
                    "annotation volcano.sh/task-spec)"
                )
    return ""


def check_group(gang: Gang, group: list[tuple[str, Gang | None]]) -> GroupVerdict:
    problem = own_problem(gang)
    if problem:
        sep = " " if problem.startswith("cannot") else ": "
        return GroupVerdict(False, f"gang {gang.key}{sep}{problem}")
    for key, other in group:
        if key == gang.key:
            continue
        if other is None:
            return GroupVerdict(
                False,
                f"gang {gang.key} waits for {key} in its group: no member of {key} exists yet",
            )
        if other.timed_out:
            return GroupVerdict(
                False, f"gang {gang.key} waits for {key} in its group: {key} timed out"
            )
        if other.exempt():
            continue
        problem = own_problem(other)
        if problem:
            return GroupVerdict(
                False, f"gang {gang.key} waits for {key} in its group: {key} {problem}"
            )
    return READY
