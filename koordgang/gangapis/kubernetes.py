"""Upstream Kubernetes: a ``scheduling.k8s.io`` PodGroup named by the pod's
``spec.schedulingGroup.podGroupName``; ``spec.schedulingPolicy.gang.minCount`` makes it a gang
(a ``basic`` policy is not one). The Job controller writes it, with a Workload, for an Indexed
Job with ``parallelism == completions > 1``.

Kubernetes 1.37 serves it as the beta ``v1beta1`` (and no longer ``v1alpha2``), 1.36 as the
alpha ``v1alpha2``: the daemon reads the version the API server serves, and writes status back
in the version it read, in that version's terms:

- ``v1beta1``: the ``PodGroupInitiallyScheduled`` condition, True/``Scheduled`` once the gang's
  minimum is bound, False/``Unschedulable`` with the reason while it waits; True is terminal.
  A PodGroup whose members preemption evicts gets ``DisruptionTarget``/``PreemptionByScheduler``.
  ``spec.disruptionMode`` is ``{single: {}}`` or ``{all: {}}``; ``spec.preemptionPolicy``
  (``Never`` or ``PreemptLowerPriority``) and ``spec.parentCompositePodGroupName`` (its
  CompositePodGroup, ``v1alpha3``) are new.
- ``v1alpha2``: the ``PodGroupScheduled`` condition, with the same reasons and the same rule
  (never back from True to False); ``spec.disruptionMode`` is ``Pod`` or ``PodGroup``.

Both carry ``spec.priority`` (the group's priority, set by admission from
``priorityClassName``) and ``spec.schedulingConstraints.topology[].key`` (a node label whose one
value must hold the whole group). ``spec.schedulingPolicy.gang.minCount`` may change: gangs not
yet placed take the new minimum up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.framework.report import WatchedResource
from koordgang.gangapis.base import conditions_of, with_conditions
from koordgang.model import gang_keys
from koordgang.model.gang import (
    ConfigIssue,
    GangName,
    GangSource,
    GroupPolicy,
    NameIn,
    PodGroupInfo,
    parse_minimum,
    podgroup_info,
)
from koordgang.model.json_values import mapping
from koordgang.state.gangs import Gang

API = "kubernetes"
GROUP = "scheduling.k8s.io"
MIN_COUNT_FIELD = "spec.schedulingPolicy.gang.minCount"
POD_FIELD = "spec.schedulingGroup.podGroupName"
#: The condition of ``v1beta1`` (Kubernetes 1.37) and of ``v1alpha2`` (1.36).
CONDITION = "PodGroupInitiallyScheduled"
ALPHA_CONDITION = "PodGroupScheduled"
ALPHA_VERSION = f"{GROUP}/v1alpha2"
SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
#: What a PodGroup some of whose members were preempted says (as kube-scheduler 1.37 writes it).
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTED = "PreemptionByScheduler"
#: A member the kubelet refused at admission after the gang was placed (another scheduler's
#: pod took the room first).
ADMISSION_REFUSED = "AdmissionRefused"
#: The largest priority a user may give (Kubernetes' HighestUserDefinablePriority).
_MAX_PRIORITY = 1_000_000_000


def condition_type(api_version: str) -> str:
    """The scheduled condition of the PodGroup version ``api_version``."""
    return ALPHA_CONDITION if api_version == ALPHA_VERSION else CONDITION


#: Gangs of gangs (Kubernetes 1.37, alpha): see ``gangapis/composite.py``.
COMPOSITE_RESOURCE = WatchedResource(GROUP, "v1alpha3", "compositepodgroups", "CompositePodGroup")


class KubernetesApi:
    name = API
    resource: WatchedResource | None = WatchedResource(
        GROUP, "v1beta1", "podgroups", "PodGroup", older_versions=("v1alpha2",)
    )
    related: tuple[WatchedResource, ...] = (COMPOSITE_RESOURCE,)
    pod_keys: tuple[str, ...] = gang_keys.NONE
    names: tuple[GangName, ...] = (
        GangName(NameIn.SCHEDULING_GROUP, POD_FIELD, GangSource.POD_GROUP),
    )
    crd = ""
    crd_value = ""

    def parse(self, obj: Mapping[str, Any]) -> PodGroupInfo:
        spec = mapping(obj.get("spec"))
        policy = mapping(spec.get("schedulingPolicy"))
        issues: list[ConfigIssue] = []
        group_policy = parse_group_policy(spec, issues)
        gang = policy.get("gang")
        if gang is None and "basic" in policy:
            return podgroup_info(
                obj,
                min_member=1,
                issues=issues,
                api=API,
                min_field=MIN_COUNT_FIELD,
                is_gang=False,
                policy=group_policy,
            )
        minimum = parse_minimum(mapping(gang).get("minCount"), MIN_COUNT_FIELD, issues)
        return podgroup_info(
            obj,
            min_member=minimum,
            issues=issues,
            api=API,
            min_field=MIN_COUNT_FIELD,
            policy=group_policy,
        )

    def status(self, gang: Gang, now: float) -> dict[str, Any] | None:
        podgroup = gang.podgroup
        if podgroup is None or not podgroup.is_gang:
            return None
        kind = condition_type(podgroup.api_version)
        conditions = conditions_of(podgroup.status)
        wanted: dict[str, tuple[str, str, str]] = {}
        current = next((c for c in conditions if c.get("type") == kind), None)
        # Never back from True to False; nothing more to say of it once True.
        if current is None or current.get("status") != "True":
            if gang.satisfied:
                wanted[kind] = ("True", SCHEDULED, "the gang's minimum was placed and bound")
            elif gang.first_attempt is not None and gang.last_message:
                wanted[kind] = ("False", UNSCHEDULABLE, gang.last_message)
        preemptor = next((p.preempted_by for p in gang.members.values() if p.preempted_by), "")
        if preemptor:
            wanted[DISRUPTION_TARGET] = (
                "True",
                PREEMPTED,
                f"{preemptor} preempted members of the group",
            )
        elif gang.last_refusal:
            wanted[DISRUPTION_TARGET] = (
                "True",
                ADMISSION_REFUSED,
                f"the kubelet refused member {gang.last_refusal}; its replacement is placed as "
                "the group's member",
            )
        return with_conditions(conditions, wanted, now)

    def awaits_enqueue(self, podgroup: PodGroupInfo) -> bool:
        return False  # its clients make their pods at once


def parse_group_policy(spec: Mapping[str, Any], issues: list[ConfigIssue]) -> GroupPolicy:
    """Priority, preemption policy, disruption mode, parent and topology keys of an upstream
    PodGroup's or CompositePodGroup's spec (any version); a bad value is an issue naming its
    field, and the default is used."""
    priority = None
    raw = spec.get("priority")
    if raw is not None:
        if type(raw) is int and -(2**31) <= raw <= _MAX_PRIORITY:
            priority = raw
        else:
            issues.append(
                ConfigIssue(
                    "spec.priority", str(raw), "is not a priority", "its pods' priority is used"
                )
            )
    never = False
    raw = spec.get("preemptionPolicy")
    if raw is not None:
        if raw == "Never":
            never = True
        elif raw != "PreemptLowerPriority":
            issues.append(
                ConfigIssue(
                    "spec.preemptionPolicy",
                    str(raw),
                    "is neither Never nor PreemptLowerPriority",
                    "PreemptLowerPriority is used",
                )
            )
    disrupt_all = False
    raw = spec.get("disruptionMode")
    if isinstance(raw, Mapping):
        disrupt_all = "all" in raw
    elif raw in ("PodGroup", "Pod"):  # v1alpha2
        disrupt_all = raw == "PodGroup"
    elif raw is not None:
        issues.append(
            ConfigIssue(
                "spec.disruptionMode",
                str(raw),
                "is not {single: {}} nor {all: {}}",
                "its pods are disrupted one at a time",
            )
        )
    parent = spec.get("parentCompositePodGroupName")
    keys: list[str] = []
    constraints = mapping(spec.get("schedulingConstraints")).get("topology")
    if isinstance(constraints, list):
        for index, entry in enumerate(constraints):
            key = mapping(entry).get("key")
            if isinstance(key, str) and key:
                keys.append(key)
            else:
                issues.append(
                    ConfigIssue(
                        f"spec.schedulingConstraints.topology[{index}].key",
                        str(key),
                        "is not a node label key",
                        "this constraint is not applied",
                    )
                )
    return GroupPolicy(
        priority=priority,
        preempt_never=never,
        disrupt_all=disrupt_all,
        parent=parent if isinstance(parent, str) else "",
        topology_keys=tuple(keys),
    )
