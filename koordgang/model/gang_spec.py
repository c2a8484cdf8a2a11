"""A gang's effective configuration: its group object and Koordinator's options, resolved.

The minimum comes from the gang's declaration (its group object, or its members' labels or
annotations); Koordinator's optional settings (mode, waiting time, total number, gang groups,
match policy, network-topology spec) come from the pods' annotations, else the group object's,
for a gang of any API. Every value that cannot be used is replaced and explained.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.model.errors import ModelError
from koordgang.model.gang import (
    CANNOT_START,
    MAX_WAITING_TIME,
    ConfigIssue,
    GangMode,
    GangRef,
    GangSource,
    MatchPolicy,
    PodGroupInfo,
    check_min,
    count_problem,
)
from koordgang.model.gather import TopologySpec, parse_gather_spec
from koordgang.model.json_values import int_text, shown
from koordgang.model.koordinator import (
    GROUPS_KEY,
    MATCH_POLICY_KEY,
    MIN_AVAILABLE_KEY,
    MODE_KEY,
    NETWORK_TOPOLOGY_SPEC_KEY,
    POD_GROUP_LABEL,
    SCHEDULE_TIMEOUT_FIELD,
    TOTAL_NUMBER_KEY,
    WAITING_TIME_KEY,
)
from koordgang.model.time import parse_go_duration

__all__ = ["GangSpec", "resolve_gang_spec"]

_MODES = {mode.value.lower(): mode for mode in GangMode}
_MATCH_POLICIES = {policy.value: policy for policy in MatchPolicy}


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
    #: Koordinator's network-topology spec, parsed (None: placed without one).
    network_topology_spec: TopologySpec | None
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
            own or [ConfigIssue(podgroup.min_field, "", "is missing", CANNOT_START, fatal=True)]
        )
        return None
    else:
        key = ref.min_label or ref.min_annotation or MIN_AVAILABLE_KEY
        issues.append(ConfigIssue(key, "", "is missing", CANNOT_START, fatal=True))
        return None

    number, issue = check_min(key, text, int_text(text))
    if issue is not None:
        issues.append(issue)
    return number


def _resolve_total(text: str | None, minimum: int | None, issues: list[ConfigIssue]) -> int:
    fallback = minimum if minimum is not None else 0
    if text is None:
        return fallback
    number = int_text(text)
    problem = count_problem(number)
    if problem is None and number is not None and minimum is not None and number < minimum:
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
        return f"has an element {shown(item)} that is not a string"
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


def _resolve_topology_spec(text: str | None, issues: list[ConfigIssue]) -> TopologySpec | None:
    if text is None:
        return None
    spec, problem = parse_gather_spec(text)
    if problem is not None:
        issues.append(
            ConfigIssue(
                NETWORK_TOPOLOGY_SPEC_KEY, text, problem, "placing without topology constraints"
            )
        )
        return None
    return spec
