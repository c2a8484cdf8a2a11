"""Volcano: a ``scheduling.volcano.sh/v1beta1`` PodGroup named by the pod annotation
``scheduling.k8s.io/group-name``, with ``minMember``, ``minTaskMember`` (per task, the task named
by the pod annotation ``volcano.sh/task-spec``), ``minResources`` and ``priorityClassName``.
``queue`` is Volcano's own, and ``priorityClassName``: a gang's priority is its pods'
``spec.priority``; both are read, said to be ignored (once), and not acted on.

Clients in Volcano mode create their pods only once the PodGroup leaves ``Pending``: the
scheduler moves it to ``Inqueue`` when its ``minResources`` could fit (Volcano's enqueue), then
``Running`` once its minimum runs. A gang that ran and lost members is ``Unknown``, as Volcano
calls it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.framework.report import WatchedResource
from koordgang.gangapis.base import condition, conditions_of, member_counts
from koordgang.model import gang_keys
from koordgang.model.gang import (
    MIN_MEMBER_FIELD,
    ConfigIssue,
    GangName,
    GangSource,
    NameIn,
    PodGroupInfo,
    parse_min_resources,
    parse_minimum,
    podgroup_info,
)
from koordgang.model.json_values import json_int, mapping, shown
from koordgang.state.gangs import Gang

API = "volcano"
GROUP_NAME_ANNOTATION = gang_keys.VOLCANO_GROUP_NAMES[0]
#: Volcano reads its own key too, where the common one is missing.
GROUP_NAME_ANNOTATIONS = gang_keys.VOLCANO_GROUP_NAMES
MIN_TASK_MEMBER_FIELD = "spec.minTaskMember"
PENDING = "Pending"
INQUEUE = "Inqueue"
RUNNING = "Running"
UNKNOWN = "Unknown"
COMPLETED = "Completed"


class VolcanoApi:
    name = API
    resource: WatchedResource | None = WatchedResource(
        "scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", status_subresource=False
    )

    related: tuple[WatchedResource, ...] = ()
    pod_keys: tuple[str, ...] = gang_keys.VOLCANO
    names: tuple[GangName, ...] = tuple(
        GangName(NameIn.ANNOTATION, key, GangSource.POD_GROUP) for key in GROUP_NAME_ANNOTATIONS
    )
    crd = "podgroups.scheduling.volcano.sh.yaml"
    crd_value = "volcano"

    def parse(self, obj: Mapping[str, Any]) -> PodGroupInfo:
        spec = mapping(obj.get("spec"))
        issues: list[ConfigIssue] = []
        minimum = parse_minimum(spec.get("minMember"), MIN_MEMBER_FIELD, issues)
        tasks = _task_minimums(spec.get("minTaskMember"), minimum, issues)
        resources = parse_min_resources(spec.get("minResources"), "spec.minResources", issues)
        ignored = {}
        for key in ("queue", "priorityClassName"):
            value = spec.get(key)
            if isinstance(value, str) and value:
                ignored[f"spec.{key}"] = value
        return podgroup_info(
            obj,
            min_member=minimum,
            issues=issues,
            min_resources=resources,
            api=API,
            task_minimums=tasks,
            ignored=ignored,
        )

    def awaits_enqueue(self, podgroup: PodGroupInfo) -> bool:
        return not _past_pending(podgroup.status.get("phase"))

    def status(self, gang: Gang, now: float) -> dict[str, Any] | None:
        podgroup = gang.podgroup
        if podgroup is None:
            return None
        counts = member_counts(gang)
        minimum = gang.spec.min_available or 0
        current = podgroup.status.get("phase")
        if gang.below_minimum():
            phase = UNKNOWN
        elif gang.finished or (minimum and counts.succeeded >= minimum and not counts.running):
            phase = COMPLETED
        elif gang.satisfied:
            phase = RUNNING
        elif gang.enqueued or _past_pending(current):
            phase = INQUEUE  # never back to Pending: the client may have made its pods
        else:
            phase = PENDING
        status: dict[str, Any] = {
            "phase": phase,
            "running": counts.running,
            "succeeded": counts.succeeded,
            "failed": counts.failed,
        }
        said: tuple[str, str, str] | None = None
        if gang.satisfied:
            said = ("Scheduled", "Scheduled", "the gang's minimum was placed and bound")
        elif gang.last_message:
            said = ("Unschedulable", "NotEnoughResources", gang.last_message)
        # The whole list is written each time (a merge patch replaces lists): an old
        # Unschedulable goes once the gang is placed.
        before = conditions_of(podgroup.status)
        status["conditions"] = (
            [condition(said[0], "True", said[1], said[2], before, now)] if said else []
        )
        return status


def _past_pending(phase: Any) -> bool:
    return phase in (INQUEUE, RUNNING, UNKNOWN, COMPLETED)


def _task_minimums(raw: Any, minimum: int | None, issues: list[ConfigIssue]) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        issues.append(
            ConfigIssue(
                MIN_TASK_MEMBER_FIELD, shown(raw), "is not a map of task to count", "ignoring it"
            )
        )
        return {}
    tasks: dict[str, int] = {}
    for task, value in raw.items():
        number = json_int(value)
        key = f"{MIN_TASK_MEMBER_FIELD}[{task}]"
        if number is None or number < 0:
            issues.append(
                ConfigIssue(key, shown(value), "is not a non-negative integer", "ignoring it")
            )
            continue
        if number:
            tasks[str(task)] = number
    return tasks
