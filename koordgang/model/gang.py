"""The one internal gang: which gang a pod belongs to, and the gang's effective configuration.

Every gang API (Koordinator's, scheduler-plugins', upstream Kubernetes', Volcano's, Kueue's)
turns its objects into the same three things: a :class:`GangRef` per pod (which gang, declared
how), a :class:`PodGroupInfo` per group object (minimum, timeout, minResources, task minimums),
and from them :func:`resolve_gang_spec` makes the :class:`GangSpec` the scheduler works with.
The APIs themselves live in ``gangapis``; Koordinator's pod dialect is here
(:func:`gang_ref_of`) because the other APIs' pods may carry its options too.

Koordinator declares a gang in one of three ways (first match wins, see :func:`gang_ref_of`): a
PodGroup object named by a pod label, the community's "lightweight" labels, or its annotations.
Optional settings live in annotations under :data:`PREFIX`, on the group object and on the pods;
a pod's annotation overrides the object's. They apply to a gang of any API.

Nothing here raises on a bad value. Every value that cannot be used becomes one
:class:`ConfigIssue` that names the key, the value and what was done instead, so that the
scheduler can show it on the pod (or PodGroup) rather than silently change behaviour.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model.errors import ModelError
from koordgang.model.resources import Resources, parse_resource_list
from koordgang.model.time import parse_go_duration, parse_rfc3339

__all__ = [
    "GROUPS_KEY",
    "KOORDINATOR",
    "LIGHTWEIGHT_MIN_LABEL",
    "LIGHTWEIGHT_NAME_LABEL",
    "MATCH_POLICY_KEY",
    "MAX_MIN_AVAILABLE",
    "MAX_WAITING_TIME",
    "MIN_AVAILABLE_KEY",
    "MIN_MEMBER_FIELD",
    "MIN_RESOURCES_FIELD",
    "MODE_KEY",
    "NAME_KEY",
    "NETWORK_TOPOLOGY_INDEX_KEY",
    "NETWORK_TOPOLOGY_SPEC_KEY",
    "POD_GROUP_LABEL",
    "PREFIX",
    "SCHEDULE_TIMEOUT_FIELD",
    "TIMEOUT_KEY",
    "TOTAL_NUMBER_KEY",
    "WAITING_TIME_KEY",
    "ConfigIssue",
    "GangMode",
    "GangRef",
    "GangSource",
    "GangSpec",
    "GatherRule",
    "MatchPolicy",
    "PodGroupInfo",
    "gang_ref_of",
    "gather_rules",
    "is_timed_out",
    "json_int",
    "mapping",
    "nonblank",
    "parse_min_resources",
    "parse_minimum",
    "parse_podgroup",
    "parse_timeout_seconds",
    "podgroup_info",
    "resolve_gang_spec",
    "shown",
    "topology_index",
]

POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
LIGHTWEIGHT_NAME_LABEL = "pod-group.scheduling.sigs.k8s.io/name"
LIGHTWEIGHT_MIN_LABEL = "pod-group.scheduling.sigs.k8s.io/min-available"

PREFIX = "gang.scheduling.koordinator.sh/"

#: The API of Koordinator's declarations (:func:`gang_ref_of`).
KOORDINATOR = "koordinator"
NAME_KEY = PREFIX + "name"
MIN_AVAILABLE_KEY = PREFIX + "min-available"
WAITING_TIME_KEY = PREFIX + "waiting-time"
TOTAL_NUMBER_KEY = PREFIX + "total-number"
MODE_KEY = PREFIX + "mode"
GROUPS_KEY = PREFIX + "groups"
MATCH_POLICY_KEY = PREFIX + "match-policy"
NETWORK_TOPOLOGY_SPEC_KEY = PREFIX + "network-topology-spec"
NETWORK_TOPOLOGY_INDEX_KEY = PREFIX + "network-topology-index"
TIMEOUT_KEY = PREFIX + "timeout"

#: The PodGroup fields, named as issues name them.
MIN_MEMBER_FIELD = "spec.minMember"
SCHEDULE_TIMEOUT_FIELD = "spec.scheduleTimeoutSeconds"
MIN_RESOURCES_FIELD = "spec.minResources"

#: A larger minimum is refused as "too large"; so is a larger total number.
MAX_MIN_AVAILABLE = 100_000
#: A longer waiting time (365 days, in seconds) is refused as absurd.
MAX_WAITING_TIME = 365 * 24 * 3600.0

_VALUE_LIMIT = 100
_CANNOT_START = "the gang cannot start"


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


_MODES = {mode.value.lower(): mode for mode in GangMode}
_MATCH_POLICIES = {policy.value: policy for policy in MatchPolicy}
_GATHER_STRATEGIES = ("PreferGather", "MustGather")


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


def gang_ref_of(
    namespace: str, labels: Mapping[str, str], annotations: Mapping[str, str]
) -> GangRef | None:
    """The gang of a pod with these labels and annotations, or None for an ordinary pod.

    First match wins: label :data:`POD_GROUP_LABEL` (a PodGroup gang), label
    :data:`LIGHTWEIGHT_NAME_LABEL`, annotation :data:`NAME_KEY`. A blank value does not count.
    """
    name = _nonblank(labels.get(POD_GROUP_LABEL))
    if name is not None:
        return GangRef(
            namespace,
            name,
            GangSource.POD_GROUP,
            min_annotation=MIN_AVAILABLE_KEY,
            named_by=POD_GROUP_LABEL,
        )
    name = _nonblank(labels.get(LIGHTWEIGHT_NAME_LABEL))
    if name is not None:
        return GangRef(
            namespace,
            name,
            GangSource.LABELS,
            min_label=LIGHTWEIGHT_MIN_LABEL,
            min_annotation=MIN_AVAILABLE_KEY,
        )
    name = _nonblank(annotations.get(NAME_KEY))
    if name is not None:
        return GangRef(namespace, name, GangSource.ANNOTATIONS, min_annotation=MIN_AVAILABLE_KEY)
    return None


def nonblank(value: str | None) -> str | None:
    """``value`` stripped, or None when it is missing or blank (a blank name names nothing)."""
    return _nonblank(value)


def _nonblank(value: str | None) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


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


def parse_podgroup(obj: Mapping[str, Any]) -> PodGroupInfo:
    """A PodGroup with ``spec.minMember``, ``spec.scheduleTimeoutSeconds`` and
    ``spec.minResources`` (Koordinator's and scheduler-plugins' share this spec) from the API
    server's JSON. Never raises: malformed metadata falls back to empty values, bad spec values
    are recorded as issues."""
    spec = _mapping(obj.get("spec"))
    issues: list[ConfigIssue] = []
    min_member = parse_minimum(spec.get("minMember"), MIN_MEMBER_FIELD, issues)
    schedule_timeout = parse_timeout_seconds(
        spec.get("scheduleTimeoutSeconds"), SCHEDULE_TIMEOUT_FIELD, issues
    )
    min_resources = parse_min_resources(spec.get("minResources"), MIN_RESOURCES_FIELD, issues)
    return podgroup_info(
        obj,
        min_member=min_member,
        schedule_timeout=schedule_timeout,
        min_resources=min_resources,
        issues=issues,
    )


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
    metadata = _mapping(obj.get("metadata"))
    creation = 0.0
    raw_created = metadata.get("creationTimestamp")
    if isinstance(raw_created, str):
        try:
            creation = parse_rfc3339(raw_created)
        except ModelError:
            creation = 0.0
    return PodGroupInfo(
        namespace=_str(metadata.get("namespace")) or "default",
        name=_str(metadata.get("name")),
        uid=_str(metadata.get("uid")),
        resource_version=_str(metadata.get("resourceVersion")),
        creation_timestamp=creation,
        min_member=min_member,
        schedule_timeout=schedule_timeout,
        min_resources=min_resources or None,
        annotations={
            key: value
            for key, value in _mapping(metadata.get("annotations")).items()
            if isinstance(key, str) and isinstance(value, str)
        },
        issues=tuple(issues),
        api=api,
        min_field=min_field,
        is_gang=is_gang,
        task_minimums=task_minimums or {},
        status=_mapping(obj.get("status")),
        ignored=ignored or {},
        api_version=_str(obj.get("apiVersion")),
        policy=policy or GroupPolicy(),
    )


def parse_minimum(raw: Any, key: str, issues: list[ConfigIssue]) -> int | None:
    """A group object's minimum member count; a missing or bad one is a fatal issue."""
    if raw is None:
        # Go drops a zero minimum (omitempty), so zero arrives as "missing" too.
        issues.append(ConfigIssue(key, "", "is missing", _CANNOT_START, fatal=True))
        return None
    number, issue = _check_min(key, _shown(raw), _json_int(raw))
    if issue is not None:
        issues.append(issue)
    return number


def parse_timeout_seconds(raw: Any, key: str, issues: list[ConfigIssue]) -> float | None:
    """A timeout in whole seconds; unset or 0 means the daemon's default (None)."""
    if raw is None or (_json_int(raw) == 0):
        return None
    seconds = _json_int(raw)
    if seconds is None:
        problem = "is not an integer"
    elif seconds < 0:
        problem = "is not positive"
    elif seconds > MAX_WAITING_TIME:
        problem = "is longer than 365 days"
    else:
        return float(seconds)
    issues.append(ConfigIssue(key, _shown(raw), problem, "ignoring it"))
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
        shown = raw.get(entry) if isinstance(raw, Mapping) else None
        issues.append(
            ConfigIssue(
                key + error.path,
                _shown(shown if shown is not None else raw),
                error.detail,
                "ignoring it",
            )
        )
        return None


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return _mapping(value)


def json_int(value: Any) -> int | None:
    """An integer as JSON gives it (not a bool, not a fraction); None otherwise."""
    return _json_int(value)


def shown(value: Any) -> str:
    """A JSON value as the user wrote it: a string as is, anything else as JSON."""
    return _shown(value)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _json_int(value: Any) -> int | None:
    """An integer as JSON gives it (not a bool, not a fraction)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _shown(value: Any) -> str:
    """A JSON value as the user wrote it: a string as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


_INT_RE = re.compile(r"[+-]?[0-9]+")
_BIG = 10**19  # beyond any limit here; stands in for numbers with absurdly many digits


def _int_text(text: str) -> int | None:
    """A decimal integer with optional sign, surrounding whitespace allowed; None otherwise."""
    text = text.strip()
    if _INT_RE.fullmatch(text) is None:
        return None
    if len(text) > 20:
        return -_BIG if text[0] == "-" else _BIG
    return int(text)


def _check_min(key: str, value: str, number: int | None) -> tuple[int | None, ConfigIssue | None]:
    problem = None
    if number is None:
        problem = "is not an integer"
    elif number < 1:
        problem = "is less than 1"
    elif number > MAX_MIN_AVAILABLE:
        problem = f"is too large (more than {MAX_MIN_AVAILABLE})"
    if problem is not None:
        return None, ConfigIssue(key, value, problem, _CANNOT_START, fatal=True)
    return number, None


@dataclass(frozen=True, slots=True)
class GangSpec:
    """The effective configuration of one gang, every bad value replaced and explained."""

    namespace: str
    name: str
    source: GangSource
    min_available: int | None
    total_number: int
    mode: GangMode
    waiting_time: float
    groups: tuple[str, ...]
    match_policy: MatchPolicy
    network_topology_spec: str | None
    issues: tuple[ConfigIssue, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def startable(self) -> bool:
        return self.min_available is not None


def resolve_gang_spec(
    ref: GangRef,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    podgroup: PodGroupInfo | None,
    default_waiting_time: float,
) -> GangSpec:
    """The configuration of ``ref``'s gang from a representative member's labels and
    annotations and, for a PodGroup gang, the PodGroup (None while it does not exist, in
    which case the gang cannot start yet).

    The minimum comes from the PodGroup's ``spec.minMember``, the label
    :data:`LIGHTWEIGHT_MIN_LABEL` or the annotation :data:`MIN_AVAILABLE_KEY`, by source; the
    pod's :data:`MIN_AVAILABLE_KEY` annotation overrides the PodGroup and stands in for a
    missing lightweight label. Optional keys come from the PodGroup's annotations unless the
    pod has them. The waiting time is the annotation, else ``scheduleTimeoutSeconds``, else
    ``default_waiting_time``; a bad annotation falls through to the next of these.
    """
    issues: list[ConfigIssue] = []
    pg_annotations: Mapping[str, str] = podgroup.annotations if podgroup is not None else {}

    min_available = _resolve_min(ref, labels, annotations, podgroup, issues)
    if podgroup is not None:
        issues.extend(issue for issue in podgroup.issues if issue.key != podgroup.min_field)

    def option(key: str) -> str | None:
        if key in annotations:
            return annotations[key]
        return pg_annotations.get(key)

    total_number = _resolve_total(option(TOTAL_NUMBER_KEY), min_available, issues)
    mode = _resolve_mode(option(MODE_KEY), issues)
    waiting_time = _resolve_waiting_time(
        option(WAITING_TIME_KEY),
        podgroup.schedule_timeout if podgroup is not None else None,
        default_waiting_time,
        issues,
    )
    groups = _resolve_groups(option(GROUPS_KEY), ref.key, issues)
    match_policy = _resolve_match_policy(option(MATCH_POLICY_KEY), issues)
    topology = _resolve_topology_spec(option(NETWORK_TOPOLOGY_SPEC_KEY), issues)

    return GangSpec(
        namespace=ref.namespace,
        name=ref.name,
        source=ref.source,
        min_available=min_available,
        total_number=total_number,
        mode=mode,
        waiting_time=waiting_time,
        groups=groups,
        match_policy=match_policy,
        network_topology_spec=topology,
        issues=tuple(issues),
    )


def _resolve_min(
    ref: GangRef,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    podgroup: PodGroupInfo | None,
    issues: list[ConfigIssue],
) -> int | None:
    if ref.source is GangSource.POD_GROUP and "/" in ref.name:
        issues.append(
            ConfigIssue(
                ref.named_by or POD_GROUP_LABEL,
                ref.name,
                "is not a name: a gang's group object is in the pod's own namespace "
                f"({ref.namespace})",
                "the gang cannot start",
                fatal=True,
            )
        )
        return None
    if ref.source is GangSource.POD_GROUP and podgroup is None:
        issues.append(
            ConfigIssue(
                ref.named_by or POD_GROUP_LABEL,
                ref.name,
                f"names a PodGroup that does not exist in namespace {ref.namespace}",
                "the gang cannot start until it is created",
                fatal=True,
            )
        )
        return None

    key: str
    text: str
    if ref.min_label and ref.min_label in labels:
        key, text = ref.min_label, labels[ref.min_label]
    elif ref.min_annotation and ref.min_annotation in annotations:
        key, text = ref.min_annotation, annotations[ref.min_annotation]
    elif podgroup is not None and ref.source is GangSource.POD_GROUP:
        if podgroup.min_member is not None:
            return podgroup.min_member
        own = [issue for issue in podgroup.issues if issue.key == podgroup.min_field]
        issues.extend(
            own or [ConfigIssue(podgroup.min_field, "", "is missing", _CANNOT_START, fatal=True)]
        )
        return None
    else:
        key = ref.min_label or ref.min_annotation or MIN_AVAILABLE_KEY
        issues.append(ConfigIssue(key, "", "is missing", _CANNOT_START, fatal=True))
        return None

    number, issue = _check_min(key, text, _int_text(text))
    if issue is not None:
        issues.append(issue)
    return number


def _resolve_total(text: str | None, minimum: int | None, issues: list[ConfigIssue]) -> int:
    fallback = minimum if minimum is not None else 0
    if text is None:
        return fallback
    number = _int_text(text)
    problem = None
    if number is None:
        problem = "is not an integer"
    elif number < 1:
        problem = "is less than 1"
    elif number > MAX_MIN_AVAILABLE:
        problem = f"is too large (more than {MAX_MIN_AVAILABLE})"
    elif minimum is not None and number < minimum:
        issues.append(
            ConfigIssue(
                TOTAL_NUMBER_KEY,
                text,
                f"is smaller than min-available {minimum}",
                f"using {minimum}",
            )
        )
        return minimum
    if problem is not None:
        action = f"using min-available {minimum}" if minimum is not None else "ignoring it"
        issues.append(ConfigIssue(TOTAL_NUMBER_KEY, text, problem, action))
        return fallback
    assert number is not None
    return number


def _resolve_mode(text: str | None, issues: list[ConfigIssue]) -> GangMode:
    if text is None:
        return GangMode.STRICT
    mode = _MODES.get(text.strip().lower())
    if mode is None:
        issues.append(ConfigIssue(MODE_KEY, text, "is not Strict or NonStrict", "using Strict"))
        return GangMode.STRICT
    return mode


def _seconds(seconds: float) -> str:
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{seconds}s"


def _resolve_waiting_time(
    text: str | None,
    schedule_timeout: float | None,
    default: float,
    issues: list[ConfigIssue],
) -> float:
    if schedule_timeout is not None:
        fallback = schedule_timeout
        action = f"using {_seconds(schedule_timeout)} from {SCHEDULE_TIMEOUT_FIELD}"
    else:
        fallback = default
        action = f"using the default {_seconds(default)}"
    if text is None:
        return fallback
    try:
        seconds: float | None = parse_go_duration(text.strip())
    except ModelError:
        seconds = None
    problem = None
    if seconds is None:
        problem = "is not a duration such as 600s or 1h30m"
    elif seconds <= 0:
        problem = "is not positive"
    elif seconds > MAX_WAITING_TIME:
        problem = "is longer than 365 days"
    if problem is not None:
        issues.append(ConfigIssue(WAITING_TIME_KEY, text, problem, action))
        return fallback
    assert seconds is not None
    return seconds


def _group_member_problem(item: Any) -> str | None:
    if not isinstance(item, str):
        return f"has an element {_shown(item)} that is not a string"
    namespace, slash, name = item.strip().partition("/")
    if not slash or not _is_name_part(namespace) or not _is_name_part(name):
        return f'has an element "{item}" that is not "namespace/name"'
    return None


def _is_name_part(part: str) -> bool:
    # Lenient on purpose: the seeds' own examples use "namespaceA/gang-a".
    return bool(part) and "/" not in part and not any(ch.isspace() for ch in part)


def _resolve_groups(text: str | None, own_key: str, issues: list[ConfigIssue]) -> tuple[str, ...]:
    alone = (own_key,)
    if text is None or not text.strip():
        return alone
    problem = None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        problem = 'is not a JSON list of "namespace/name" strings'
    else:
        if not isinstance(parsed, list):
            problem = 'is not a JSON list of "namespace/name" strings'
        else:
            for item in parsed:
                problem = _group_member_problem(item)
                if problem is not None:
                    break
    if problem is not None:
        issues.append(ConfigIssue(GROUPS_KEY, text, problem, "scheduling the gang alone"))
        return alone
    return tuple(sorted({own_key, *(item.strip() for item in parsed)}))


def _resolve_match_policy(text: str | None, issues: list[ConfigIssue]) -> MatchPolicy:
    if text is None:
        return MatchPolicy.ONCE_SATISFIED
    policy = _MATCH_POLICIES.get(text.strip().lower())
    if policy is None:
        issues.append(
            ConfigIssue(
                MATCH_POLICY_KEY,
                text,
                "is not once-satisfied, only-waiting or waiting-and-running",
                "using once-satisfied",
            )
        )
        return MatchPolicy.ONCE_SATISFIED
    return policy


@dataclass(frozen=True, slots=True)
class GatherRule:
    """One entry of a network-topology spec's ``gatherStrategy``."""

    #: A layer of the ClusterNetworkTopology ("" when the rule names a node label instead).
    layer: str
    strategy: str  # "PreferGather" or "MustGather"
    #: Members per domain of the layer must be a multiple of this.
    pod_count_multiple: int = 1
    #: A node label whose values are the domains (one GPU model per job, say), instead of a
    #: layer.
    label_key: str = ""

    @property
    def must(self) -> bool:
        return self.strategy == "MustGather"


def _parse_topology_spec(text: str) -> tuple[tuple[GatherRule, ...] | None, str | None]:
    """The rules of a network-topology spec, or (None, what is wrong with it)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None, "is not valid JSON"
    if not isinstance(parsed, dict):
        return None, "is not a JSON object"
    strategies = parsed.get("gatherStrategy")
    if not isinstance(strategies, list):
        return None, "has no gatherStrategy list"
    rules = []
    for index, entry in enumerate(strategies):
        where = f"gatherStrategy[{index}]"
        if not isinstance(entry, dict):
            return None, f"has {where} that is not an object"
        layer = entry.get("layer", "")
        label_key = entry.get("labelKey", "")
        if not isinstance(label_key, str):
            return None, f"has {where}.labelKey that is not a string"
        if not isinstance(layer, str) or (not layer and not label_key):
            return None, f"has {where}.layer that is not a non-empty string (nor a labelKey)"
        if layer and label_key:
            return None, f"has {where} naming both a layer and a labelKey"
        strategy = entry.get("strategy")
        if strategy not in _GATHER_STRATEGIES:
            return None, f"has {where}.strategy that is not PreferGather or MustGather"
        multiple = entry.get("podCountMultiple", 1)
        if type(multiple) is not int or multiple < 1:
            return None, f"has {where}.podCountMultiple that is not a positive integer"
        rules.append(GatherRule(layer, strategy, multiple, label_key))
    return tuple(rules), None


def gather_rules(spec: str | None) -> tuple[GatherRule, ...]:
    """The gather rules of a :attr:`GangSpec.network_topology_spec` (already validated by
    :func:`resolve_gang_spec`); empty for None or an invalid spec."""
    if spec is None:
        return ()
    rules, _ = _parse_topology_spec(spec)
    return rules or ()


def _resolve_topology_spec(text: str | None, issues: list[ConfigIssue]) -> str | None:
    if text is None:
        return None
    _, problem = _parse_topology_spec(text)
    if problem is not None:
        issues.append(
            ConfigIssue(
                NETWORK_TOPOLOGY_SPEC_KEY, text, problem, "placing without topology constraints"
            )
        )
        return None
    return text


def topology_index(annotations: Mapping[str, str]) -> tuple[int | None, ConfigIssue | None]:
    """A pod's rank in its job (:data:`NETWORK_TOPOLOGY_INDEX_KEY`): (None, None) when not
    given, (None, issue) when not a non-negative integer."""
    text = annotations.get(NETWORK_TOPOLOGY_INDEX_KEY)
    if text is None:
        return None, None
    number = _int_text(text)
    problem = None
    if number is None:
        problem = "is not an integer"
    elif number < 0:
        problem = "is negative"
    elif number >= _BIG:
        problem = "is too large"
    if problem is not None:
        return None, ConfigIssue(NETWORK_TOPOLOGY_INDEX_KEY, text, problem, "using no index")
    return number, None


def is_timed_out(annotations: Mapping[str, str]) -> bool:
    """Whether the scheduler has marked this pod's gang as timed out (never scheduled again)."""
    return annotations.get(TIMEOUT_KEY) == "true"
