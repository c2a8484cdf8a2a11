"""The one internal gang: which gang a pod belongs to, and what its group object says.

Every gang API (Koordinator's, scheduler-plugins', upstream Kubernetes', Volcano's, Kueue's)
turns its objects into the same things: a :class:`GangRef` per pod (which gang, declared how)
and a :class:`PodGroupInfo` per group object (minimum, timeout, minResources, task minimums,
its policy for the group as a whole). :mod:`koordgang.model.gang_spec` makes from them the
:class:`~koordgang.model.gang_spec.GangSpec` the scheduler works with; Koordinator's dialect,
whose options apply to a gang of any API, is :mod:`koordgang.model.koordinator`; the APIs
themselves live in ``gangapis``.

Nothing here raises on a bad value. Every value that cannot be used becomes one
:class:`ConfigIssue` that names the key, the value and what was done instead, so that the
scheduler can show it on the pod (or PodGroup) rather than silently change behaviour.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model.errors import ModelError
from koordgang.model.json_values import json_int, mapping, shown, string
from koordgang.model.pod import PodInfo
from koordgang.model.resources import Resources, parse_resource_list
from koordgang.model.time import parse_rfc3339

__all__ = [
    "CANNOT_START",
    "KOORDINATOR",
    "MAX_MIN_AVAILABLE",
    "MAX_WAITING_TIME",
    "MIN_MEMBER_FIELD",
    "ConfigIssue",
    "GangMode",
    "GangName",
    "GangRef",
    "GangSource",
    "GroupPolicy",
    "MatchPolicy",
    "NameIn",
    "PodGroupInfo",
    "check_min",
    "count_problem",
    "parse_min_resources",
    "parse_minimum",
    "parse_timeout_seconds",
    "podgroup_info",
]

#: The gang API a gang belongs to unless its declaration says otherwise.
KOORDINATOR = "koordinator"

#: Where a group object keeps its minimum unless its API says otherwise (Koordinator's and
#: scheduler-plugins' PodGroup), named as issues name it.
MIN_MEMBER_FIELD = "spec.minMember"

#: A larger minimum is refused as "too large"; so is a larger total number.
MAX_MIN_AVAILABLE = 100_000
#: A longer waiting time (365 days, in seconds) is refused as absurd.
MAX_WAITING_TIME = 365 * 24 * 3600.0

_VALUE_LIMIT = 100
CANNOT_START = "the gang cannot start"


class GangMode(enum.StrEnum):
    STRICT = "Strict"
    NON_STRICT = "NonStrict"


class MatchPolicy(enum.StrEnum):
    ONCE_SATISFIED = "once-satisfied"
    ONLY_WAITING = "only-waiting"
    WAITING_AND_RUNNING = "waiting-and-running"


class GangSource(enum.StrEnum):
    POD_GROUP = "PodGroup"
    LABELS = "labels"
    ANNOTATIONS = "annotations"


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """A configuration value that could not be used, and what was done about it.

    ``value`` is kept to at most 100 characters, with line breaks flattened to spaces, so that
    :meth:`message` stays one line fit for an Event or a condition.
    """

    key: str
    value: str
    problem: str
    action: str
    fatal: bool = False

    def __post_init__(self) -> None:
        value = self.value
        if "\n" in value or "\r" in value:
            value = " ".join(value.split())
        if len(value) > _VALUE_LIMIT:
            value = value[: _VALUE_LIMIT - 3] + "..."
        if value is not self.value:
            object.__setattr__(self, "value", value)

    def message(self) -> str:
        return f'{self.key}="{self.value}" {self.problem}; {self.action}'


class NameIn(enum.StrEnum):
    """Where a pod names its gang."""

    LABEL = "label"
    ANNOTATION = "annotation"
    #: ``spec.schedulingGroup.podGroupName`` (upstream's, from Kubernetes 1.35).
    SCHEDULING_GROUP = "field"


@dataclass(frozen=True, slots=True)
class GangName:
    """One way a pod names its gang, as a gang API declares it: where the name is, and what
    the declaration makes of it (which :class:`GangRef`). A blank name names nothing."""

    where: NameIn
    #: The label or annotation key; the field's path for :attr:`NameIn.SCHEDULING_GROUP`.
    key: str
    source: GangSource
    #: Where members give the minimum when there is no group object (see :class:`GangRef`).
    min_label: str = ""
    min_annotation: str = ""

    def ref_of(self, pod: PodInfo, api: str) -> GangRef | None:
        """The gang ``pod`` names this way in ``api``, None if it names none."""
        name = self.name_in(pod.labels, pod.annotations, pod.scheduling_group)
        return None if name is None else self.ref(pod.namespace, name, api)

    def name_in(
        self, labels: Mapping[str, str], annotations: Mapping[str, str], scheduling_group: str = ""
    ) -> str | None:
        if self.where is NameIn.LABEL:
            raw: str | None = labels.get(self.key)
        elif self.where is NameIn.ANNOTATION:
            raw = annotations.get(self.key)
        else:
            raw = scheduling_group
        name = raw.strip() if isinstance(raw, str) else None
        return name or None

    def ref(self, namespace: str, name: str, api: str) -> GangRef:
        return GangRef(
            namespace,
            name,
            self.source,
            api=api,
            min_label=self.min_label,
            min_annotation=self.min_annotation,
            named_by=self.key if self.source is GangSource.POD_GROUP else "",
        )


@dataclass(frozen=True, slots=True)
class GangRef:
    """Which gang a pod belongs to, and how it was declared.

    ``api`` names the gang API (``koordinator``, ``volcano``...). A gang without a group object
    takes its minimum from the members: the label ``min_label`` if a member has it, else the
    annotation ``min_annotation``; with a group object the annotation, if given, overrides the
    object's minimum.
    """

    namespace: str
    name: str
    source: GangSource
    api: str = KOORDINATOR
    # Follow from ``api`` and ``source``: not part of the gang's identity.
    min_label: str = field(default="", compare=False)
    min_annotation: str = field(default="", compare=False)
    #: The label, annotation or field by which the pod names its group object.
    named_by: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PodGroupInfo:
    """A gang's group object, in any gang API, as the scheduler needs it (Koordinator's
    ``scheduling.sigs.k8s.io/v1alpha1`` PodGroup is the default).

    ``min_member`` and ``schedule_timeout`` are None when absent or unusable; ``issues`` then
    says why (a missing or bad minimum is fatal, a bad timeout is ignored).
    """

    namespace: str
    name: str
    uid: str
    resource_version: str
    creation_timestamp: float
    min_member: int | None
    schedule_timeout: float | None
    #: ``spec.minResources``: what the gang needs in all before it is worth attempting.
    min_resources: Resources | None = None
    annotations: Mapping[str, str] = field(default_factory=dict, hash=False)
    issues: tuple[ConfigIssue, ...] = ()
    api: str = KOORDINATOR
    #: Where the minimum lives in the object, as issues name it.
    min_field: str = MIN_MEMBER_FIELD
    #: False for an object whose policy is not a gang (upstream's ``basic``): its pods go alone.
    is_gang: bool = True
    #: Volcano's ``spec.minTaskMember``: members each task must have placed, by task name.
    task_minimums: Mapping[str, int] = field(default_factory=dict, hash=False)
    #: The object's ``status``, as last read (phases and conditions are kept, not reset).
    status: Mapping[str, Any] = field(default_factory=dict, hash=False)
    #: Fields of the spec the scheduler reads but does not act on (Volcano's queue), for users.
    ignored: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: The version the object was read in (``scheduling.k8s.io/v1beta1``): status is written
    #: back in it, in its own terms. Not part of the value: the same object read in another
    #: version says the same.
    api_version: str = field(default="", compare=False)
    #: What the group object says of the group as a whole (upstream's PodGroup: its priority,
    #: preemption and disruption policy, its parent CompositePodGroup, its topology keys).
    policy: GroupPolicy = field(default_factory=lambda: GroupPolicy())

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class GroupPolicy:
    """A group object's policy for the group as a whole, where its API has one."""

    #: The group's priority (``spec.priority``); None: its pods' priority orders it.
    priority: int | None = None
    #: ``spec.preemptionPolicy: Never``: it waits for room, and preempts nobody.
    preempt_never: bool = False
    #: ``spec.disruptionMode: {all: {}}``: as a victim, evicted whole or not at all.
    disrupt_all: bool = False
    #: ``spec.parentCompositePodGroupName``: the CompositePodGroup it is a child of.
    parent: str = ""
    #: ``spec.schedulingConstraints.topology[].key``: node labels whose one value must hold
    #: every member.
    topology_keys: tuple[str, ...] = ()


def podgroup_info(
    obj: Mapping[str, Any],
    *,
    min_member: int | None,
    issues: list[ConfigIssue],
    schedule_timeout: float | None = None,
    min_resources: Resources | None = None,
    api: str = KOORDINATOR,
    min_field: str = MIN_MEMBER_FIELD,
    is_gang: bool = True,
    task_minimums: Mapping[str, int] | None = None,
    ignored: Mapping[str, str] | None = None,
    policy: GroupPolicy | None = None,
) -> PodGroupInfo:
    """A :class:`PodGroupInfo` with the metadata and status of ``obj`` and the given spec."""
    metadata = mapping(obj.get("metadata"))
    creation = 0.0
    raw_created = metadata.get("creationTimestamp")
    if isinstance(raw_created, str):
        try:
            creation = parse_rfc3339(raw_created)
        except ModelError:
            creation = 0.0
    return PodGroupInfo(
        namespace=string(metadata.get("namespace")) or "default",
        name=string(metadata.get("name")),
        uid=string(metadata.get("uid")),
        resource_version=string(metadata.get("resourceVersion")),
        creation_timestamp=creation,
        min_member=min_member,
        schedule_timeout=schedule_timeout,
        min_resources=min_resources or None,
        annotations={
            key: value
            for key, value in mapping(metadata.get("annotations")).items()
            if isinstance(key, str) and isinstance(value, str)
        },
        issues=tuple(issues),
        api=api,
        min_field=min_field,
        is_gang=is_gang,
        task_minimums=task_minimums or {},
        status=mapping(obj.get("status")),
        ignored=ignored or {},
        api_version=string(obj.get("apiVersion")),
        policy=policy or GroupPolicy(),
    )


def parse_minimum(raw: Any, key: str, issues: list[ConfigIssue]) -> int | None:
    """A group object's minimum member count; a missing or bad one is a fatal issue."""
    if raw is None:
        # Go drops a zero minimum (omitempty), so zero arrives as "missing" too.
        issues.append(ConfigIssue(key, "", "is missing", CANNOT_START, fatal=True))
        return None
    number, issue = check_min(key, shown(raw), json_int(raw))
    if issue is not None:
        issues.append(issue)
    return number


def parse_timeout_seconds(raw: Any, key: str, issues: list[ConfigIssue]) -> float | None:
    """A timeout in whole seconds; unset or 0 means the daemon's default (None)."""
    if raw is None or (json_int(raw) == 0):
        return None
    seconds = json_int(raw)
    if seconds is None:
        problem = "is not an integer"
    elif seconds < 0:
        problem = "is not positive"
    elif seconds > MAX_WAITING_TIME:
        problem = "is longer than 365 days"
    else:
        return float(seconds)
    issues.append(ConfigIssue(key, shown(raw), problem, "ignoring it"))
    return None


def parse_min_resources(raw: Any, key: str, issues: list[ConfigIssue]) -> Resources | None:
    """A group object's ``minResources``; a bad one is ignored, with an issue naming the entry."""
    if raw is None:
        return None
    try:
        return parse_resource_list(raw) or None
    except ModelError as error:
        # The error names one entry (``[cpu]``): show that entry's value, not the map.
        entry = error.path[1:-1] if error.path.startswith("[") else ""
        value = raw.get(entry) if isinstance(raw, Mapping) else None
        issues.append(
            ConfigIssue(
                key + error.path,
                shown(value if value is not None else raw),
                error.detail,
                "ignoring it",
            )
        )
        return None


def count_problem(number: int | None) -> str | None:
    """What is wrong with a member count (a minimum, a total), None when it is usable."""
    if number is None:
        return "is not an integer"
    if number < 1:
        return "is less than 1"
    if number > MAX_MIN_AVAILABLE:
        return f"is too large (more than {MAX_MIN_AVAILABLE})"
    return None


def check_min(key: str, value: str, number: int | None) -> tuple[int | None, ConfigIssue | None]:
    problem = count_problem(number)
    if problem is not None:
        return None, ConfigIssue(key, value, problem, CANNOT_START, fatal=True)
    return number, None
