"""Koordinator's gang dialect: the labels and annotations a pod declares its gang with, the
options that apply to a gang of any API, and its PodGroup (``scheduling.sigs.k8s.io``).

Koordinator declares a gang in one of three ways (first match wins, see :func:`gang_ref_of`): a
PodGroup object named by a pod label, the community's "lightweight" labels, or its annotations.
Optional settings live in annotations under :data:`PREFIX`, on the group object and on the pods;
a pod's annotation overrides the object's (:mod:`koordgang.model.gang_spec` resolves them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.model.gang import (
    KOORDINATOR,
    MIN_MEMBER_FIELD,
    ConfigIssue,
    GangName,
    GangRef,
    GangSource,
    NameIn,
    PodGroupInfo,
    parse_min_resources,
    parse_minimum,
    parse_timeout_seconds,
    podgroup_info,
)
from koordgang.model.json_values import BIG, int_text, mapping

__all__ = [
    "GANG_NAMES",
    "GROUPS_KEY",
    "LIGHTWEIGHT_MIN_LABEL",
    "LIGHTWEIGHT_NAME_LABEL",
    "MATCH_POLICY_KEY",
    "MIN_AVAILABLE_KEY",
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
    "gang_ref_of",
    "is_timed_out",
    "parse_podgroup",
    "topology_index",
]

POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
LIGHTWEIGHT_NAME_LABEL = "pod-group.scheduling.sigs.k8s.io/name"
LIGHTWEIGHT_MIN_LABEL = "pod-group.scheduling.sigs.k8s.io/min-available"

PREFIX = "gang.scheduling.koordinator.sh/"

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

#: Koordinator's PodGroup fields beside the minimum, named as issues name them.
SCHEDULE_TIMEOUT_FIELD = "spec.scheduleTimeoutSeconds"
MIN_RESOURCES_FIELD = "spec.minResources"


#: How a pod names its gang in Koordinator's dialect, first match wins: a PodGroup by label, the
#: community's "lightweight" labels, its annotations. A pod's min-available annotation gives (or
#: overrides) the minimum in each.
GANG_NAMES: tuple[GangName, ...] = (
    GangName(NameIn.LABEL, POD_GROUP_LABEL, GangSource.POD_GROUP, min_annotation=MIN_AVAILABLE_KEY),
    GangName(
        NameIn.LABEL,
        LIGHTWEIGHT_NAME_LABEL,
        GangSource.LABELS,
        min_label=LIGHTWEIGHT_MIN_LABEL,
        min_annotation=MIN_AVAILABLE_KEY,
    ),
    GangName(NameIn.ANNOTATION, NAME_KEY, GangSource.ANNOTATIONS, min_annotation=MIN_AVAILABLE_KEY),
)


def gang_ref_of(
    namespace: str, labels: Mapping[str, str], annotations: Mapping[str, str]
) -> GangRef | None:
    """The gang of a pod with these labels and annotations in Koordinator's dialect, or None
    for an ordinary pod (:data:`GANG_NAMES`, first match wins)."""
    for way in GANG_NAMES:
        name = way.name_in(labels, annotations)
        if name is not None:
            return way.ref(namespace, name, KOORDINATOR)
    return None


def parse_podgroup(obj: Mapping[str, Any]) -> PodGroupInfo:
    """A PodGroup with ``spec.minMember``, ``spec.scheduleTimeoutSeconds`` and
    ``spec.minResources`` (Koordinator's and scheduler-plugins' share this spec) from the API
    server's JSON. Never raises: malformed metadata falls back to empty values, bad spec values
    are recorded as issues."""
    spec = mapping(obj.get("spec"))
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


def topology_index(annotations: Mapping[str, str]) -> tuple[int | None, ConfigIssue | None]:
    """A pod's rank in its job (:data:`NETWORK_TOPOLOGY_INDEX_KEY`): (None, None) when not
    given, (None, issue) when not a non-negative integer."""
    text = annotations.get(NETWORK_TOPOLOGY_INDEX_KEY)
    if text is None:
        return None, None
    number = int_text(text)
    problem = None
    if number is None:
        problem = "is not an integer"
    elif number < 0:
        problem = "is negative"
    elif number >= BIG:
        problem = "is too large"
    if problem is not None:
        return None, ConfigIssue(NETWORK_TOPOLOGY_INDEX_KEY, text, problem, "using no index")
    return number, None


def is_timed_out(annotations: Mapping[str, str]) -> bool:
    """Whether the scheduler has marked this pod's gang as timed out (never scheduled again)."""
    return annotations.get(TIMEOUT_KEY) == "true"
