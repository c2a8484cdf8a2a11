"""CompositePodGroups (Kubernetes 1.37, ``scheduling.k8s.io/v1alpha3``) as gangs of gangs.

A PodGroup that names a parent composite is placed with its siblings: the group of a cycle is
every PodGroup under the highest composite above it that is not yet satisfied, and its need
(:class:`~koordgang.framework.group.GroupNeed`) asks for ``minGroupCount`` children whole at
each level. A composite is satisfied once that many of its children were (a child PodGroup
once its gang was; the condition ``CompositePodGroupInitiallyScheduled=True`` keeps it so across
restarts); children beyond the minimum are then placed later, each whole, on their own.

A composite with a ``basic`` policy groups nothing: its children are placed independently (and
under a gang composite, it counts as whole when all of its children are). A hierarchy with a
cycle, more than :data:`MAX_COMPOSITE_LEVELS` composites, a missing parent or a composite whose
minimum cannot be used places nothing, and says why on the pods and the composite."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.framework.group import GroupNeed, GroupPlan, SchedulingGroup
from koordgang.framework.report import Report, StatusUpdate
from koordgang.gangapis.base import conditions_of, with_conditions
from koordgang.gangapis.kubernetes import (
    COMPOSITE_RESOURCE,
    GROUP,
    parse_group_policy,
)
from koordgang.gangapis.readiness import own_problem
from koordgang.model.composite import MAX_COMPOSITE_LEVELS, CompositeInfo
from koordgang.model.gang import ConfigIssue, parse_minimum
from koordgang.model.json_values import mapping
from koordgang.model.objects import ObjectRef
from koordgang.state.composites import CompositeForest
from koordgang.state.gangs import Gang, GangRegistry

RESOURCE = COMPOSITE_RESOURCE
MIN_FIELD = "spec.schedulingPolicy.gang.minGroupCount"
CONDITION = "CompositePodGroupInitiallyScheduled"
SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
INVALID = "Invalid"


def parse_composite(obj: Mapping[str, Any]) -> CompositeInfo:
    metadata = mapping(obj.get("metadata"))
    spec = mapping(obj.get("spec"))
    issues: list[ConfigIssue] = []
    policy = parse_group_policy(spec, issues)
    scheduling = mapping(spec.get("schedulingPolicy"))
    is_gang = not ("basic" in scheduling and scheduling.get("gang") is None)
    minimum = None
    if is_gang:
        minimum = parse_minimum(
            mapping(scheduling.get("gang")).get("minGroupCount"), MIN_FIELD, issues
        )
    workload = mapping(spec.get("workloadRef")).get("workloadName")
    return CompositeInfo(
        namespace=str(metadata.get("namespace") or "default"),
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        resource_version=str(metadata.get("resourceVersion") or ""),
        min_groups=minimum,
        is_gang=is_gang,
        policy=policy,
        workload=workload if isinstance(workload, str) else "",
        issues=tuple(issues),
        status=mapping(obj.get("status")),
        api_version=str(obj.get("apiVersion") or f"{GROUP}/v1alpha3"),
    )


@dataclass(frozen=True, slots=True)
class CompositeChange:
    """What a CompositePodGroup event changed: whose members to wake, what to tell."""

    gangs: tuple[Gang, ...]
    reports: tuple[Report, ...] = ()


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """The composite a gang is placed under now, and what it needs."""

    #: The highest composite above the gang that is not yet satisfied (None: the hierarchy is
    #: unusable, see ``problem``).
    root: CompositeInfo | None
    need: GroupNeed | None
    #: Every PodGroup (gang key) under ``root``.
    leaves: tuple[str, ...] = ()
    #: Children of the need already satisfied (gangs, composites).
    settled: frozenset[str] = frozenset()
    problem: str = ""
    #: Topology keys from the root down (the root's first): each level's members must share one
    #: value of each.
    topology_keys: tuple[str, ...] = ()


#: A node's labels by node name (empty for a node not known).
NodeLabels = Callable[[str], Mapping[str, str]]


class Composites:
    """Answers, for a gang, which hierarchy it is placed in; for a composite, its status."""

    def __init__(
        self, gangs: GangRegistry, forest: CompositeForest, labels: NodeLabels | None = None
    ) -> None:
        self.gangs = gangs
        self.forest = forest
        #: Where running members are, for the topology keys of composites (set by the plugin).
        self.labels: NodeLabels = labels or (lambda _: {})

    def on_object(self, event: str, obj: Mapping[str, Any]) -> CompositeChange | None:
        """A CompositePodGroup event into the forest; None when only its status changed."""
        info = parse_composite(obj)
        before = self.forest.get(info.key)
        reports: tuple[Report, ...] = ()
        if event == "DELETED":
            self.forest.delete(info.key)
        else:
            self.forest.upsert(info)
            if before is not None and before == info:
                return None
            if info.issues:
                message = "; ".join(issue.message() for issue in info.issues)
                reports = (Report(object_ref(info), "Warning", "InvalidGangConfig", message),)
        gangs = tuple(g for key in self.forest.leaves(info.key) if (g := self.gangs.get(key)))
        return CompositeChange(gangs, reports)

    def not_ready(self, gang: Gang, tree: Hierarchy, ready_gangs: list[Gang]) -> str:
        """Why ``gang``'s hierarchy cannot be tried now ("" when it can): unusable, or its
        need out of reach with the PodGroups that can be tried (``ready_gangs``)."""
        if tree.problem or tree.need is None or tree.root is None:
            return f"gang {gang.key}: its CompositePodGroups cannot be used: {tree.problem}"
        ready = {g.key for g in ready_gangs}
        if gang.key not in ready:
            return ""  # its own problem is said by check_group
        if tree.need.met(lambda k: k in ready or k in tree.settled):
            return ""
        waiting = []
        for key in tree.leaves:
            if key in ready or key in tree.settled:
                continue
            other = self.gangs.get(key)
            if other is None:
                waiting.append(f"{key}: no member exists yet")
            elif other.timed_out:
                waiting.append(f"{key}: timed out")
            else:
                waiting.append(f"{key}: {own_problem(other)}")
        count = f"{len(ready)} PodGroup{'s' if len(ready) != 1 else ''} ready"
        message = (
            f"gang {gang.key} waits for its {tree.need.describe(tree.settled.__contains__)}"
            f" ({'; '.join([count, *waiting])})"
        )
        self.forest.last_message[tree.root.key] = message
        return message

    def shape(self, group: SchedulingGroup, gangs: list[Gang], tree: Hierarchy | None) -> None:
        """What upstream's objects say of the group as a whole: its priority, whether it may
        preempt, and under a CompositePodGroup its need, with what the need cannot do without
        placed first (at each level, the children missing the fewest members)."""
        policies = [g.podgroup.policy for g in gangs if g.podgroup is not None]
        if tree is not None and tree.root is not None:
            policies.append(tree.root.policy)
        priorities = [p.priority for p in policies if p.priority is not None]
        # The lowest: a group preempts no higher than its least urgent part.
        group.priority = min(priorities) if priorities else None
        group.preempt_never = any(p.preempt_never for p in policies)
        if tree is None or tree.need is None:
            return
        group.need = tree.need
        group.settled = tree.settled
        missing = {p.key: max(0, p.minimum - p.counted) for p in group.parts}
        settled = tree.settled
        first = tree.need.chosen(lambda k: 0 if k in settled else missing.get(k, 1 << 30))
        group.parts.sort(key=lambda p: p.key not in first)

    def hierarchy_of(self, gang: Gang) -> Hierarchy | None:
        """None for a gang under no composite, or whose composites are satisfied or basic."""
        podgroup = gang.podgroup
        if podgroup is None or not podgroup.policy.parent:
            return None
        ancestry = self.forest.ancestry(podgroup.namespace, podgroup.policy.parent)
        if ancestry.problem:
            return Hierarchy(None, None, problem=ancestry.problem)
        broken = next((c for c in ancestry.chain if c.is_gang and c.min_groups is None), None)
        if broken is not None:
            reason = "; ".join(issue.message() for issue in broken.issues) or "no minimum"
            return Hierarchy(None, None, problem=f"CompositePodGroup {broken.key}: {reason}")
        root: CompositeInfo | None = None
        for composite in ancestry.chain:
            if not composite.is_gang:
                continue  # groups nothing itself; a gang composite above it still may
            if self.satisfied(composite):
                break
            root = composite
        if root is None:
            return None
        problem = self._subtree_problem(root)
        if problem:
            return Hierarchy(None, None, problem=problem)
        settled: set[str] = set()
        need = self._need(root, settled, set())
        keys = tuple(c.policy.topology_keys[0] for c in ancestry.chain if c.policy.topology_keys)
        return Hierarchy(
            root,
            need,
            tuple(self.forest.leaves(root.key)),
            frozenset(settled),
            topology_keys=keys,
        )

    def _subtree_problem(self, root: CompositeInfo) -> str:
        """What makes a composite under ``root`` unusable ("" when none does): a minimum that
        cannot be used, or more levels than a hierarchy may have."""
        # The root's depth: itself and the composites above it (a usable chain: the gang's).
        above = self.forest.ancestry(root.namespace, root.policy.parent).chain
        stack = [(root, len(above) + 1)]
        seen: set[str] = set()
        while stack:
            composite, depth = stack.pop()
            if composite.key in seen:
                continue
            seen.add(composite.key)
            if composite.is_gang and composite.min_groups is None:
                reason = "; ".join(i.message() for i in composite.issues) or "no minimum"
                return f"CompositePodGroup {composite.key}: {reason}"
            if depth > MAX_COMPOSITE_LEVELS:
                return (
                    f"CompositePodGroup {composite.key} is nested under {depth - 1} "
                    f"CompositePodGroups: a hierarchy has at most {MAX_COMPOSITE_LEVELS}"
                )
            for key in self.forest.child_composites(composite.key):
                child = self.forest.get(key)
                if child is not None:
                    stack.append((child, depth + 1))
        return ""

    def _need(self, composite: CompositeInfo, settled: set[str], seen: set[str]) -> GroupNeed:
        seen.add(composite.key)
        children: list[GroupNeed | str] = []
        for key in self.forest.child_composites(composite.key):
            child = self.forest.get(key)
            if child is None or key in seen:
                continue
            if self.satisfied(child):
                settled.add(key)
                children.append(key)
            else:
                children.append(self._need(child, settled, seen))
        for key in self.forest.child_podgroups(composite.key):
            gang = self.gangs.get(key)
            if gang is not None and gang.satisfied:
                settled.add(key)
            children.append(key)
        minimum = composite.min_groups if composite.is_gang else len(children)
        keys = composite.policy.topology_keys
        return GroupNeed(
            f"CompositePodGroup {composite.key}",
            minimum or 0,
            tuple(children),
            keys=keys,
            pinned=tuple(sorted(self._running_in(composite.key, keys).items())),
        )

    def _running_in(self, key: str, labels: tuple[str, ...], but: str = "") -> dict[str, str]:
        """The values of ``labels`` where members of composite ``key``'s PodGroups (other
        than ``but``) run: a later child is placed with its siblings."""
        pins: dict[str, str] = {}
        if not labels:
            return pins
        for leaf in self.forest.leaves(key):
            gang = self.gangs.get(leaf)
            if gang is None or leaf == but:
                continue
            for member in gang.bound_members():
                node_labels = self.labels(member.node_name)
                for label in labels:
                    if label in node_labels and label not in pins:
                        pins[label] = node_labels[label]
        return pins

    def pins_for(self, gang: Gang) -> dict[str, str]:
        """Label values ``gang``'s members must have: each composite above it with topology
        keys whose other members run already holds it to their domain."""
        podgroup = gang.podgroup
        if podgroup is None or not podgroup.policy.parent:
            return {}
        ancestry = self.forest.ancestry(podgroup.namespace, podgroup.policy.parent)
        pins: dict[str, str] = {}
        for composite in ancestry.chain:
            for label, value in self._running_in(
                composite.key, composite.policy.topology_keys, but=gang.key
            ).items():
                pins.setdefault(label, value)
        return pins

    def satisfied(
        self, composite: CompositeInfo, seen: frozenset[str] = frozenset(), *, bound: bool = False
    ) -> bool:
        """At least its minimum of children were satisfied (a basic one: all of them), or it
        says so itself. ``bound``: satisfied children count only once their minimum is bound
        (what its condition may say; a child allowed but not yet bound may still fail to)."""
        current = next(
            (c for c in conditions_of(composite.status) if c.get("type") == CONDITION), None
        )
        if current is not None and current.get("status") == "True":
            return True
        if composite.key in seen:
            return False
        seen = seen | {composite.key}
        done = total = 0
        for key in self.forest.child_podgroups(composite.key):
            total += 1
            gang = self.gangs.get(key)
            if gang is not None and gang.satisfied and (not bound or _bound_whole(gang)):
                done += 1
        for key in self.forest.child_composites(composite.key):
            child = self.forest.get(key)
            total += 1
            done += 1 if child is not None and self.satisfied(child, seen, bound=bound) else 0
        minimum = composite.min_groups if composite.is_gang else total
        return minimum is not None and total > 0 and done >= minimum

    # -- status ----------------------------------------------------------------------------

    def status_updates(self, now: float) -> list[StatusUpdate]:
        updates = []
        for composite in sorted(self.forest.composites(), key=lambda c: c.key):
            status = self._status(composite, now)
            if status is not None:
                updates.append(
                    StatusUpdate(
                        composite.api_version,
                        RESOURCE.plural,
                        composite.namespace,
                        composite.name,
                        status,
                        observed=composite.status,
                    )
                )
        return updates

    def _status(self, composite: CompositeInfo, now: float) -> dict[str, Any] | None:
        conditions = conditions_of(composite.status)
        current = next((c for c in conditions if c.get("type") == CONDITION), None)
        if current is not None and current.get("status") == "True":
            return None  # terminal, as upstream keeps it
        problem = self.problem_of(composite)
        if problem:
            wanted = ("False", INVALID, problem)
        elif self.satisfied(composite, bound=True):
            wanted = ("True", SCHEDULED, "the minimum of its groups was placed and bound")
        elif self.forest.last_message.get(composite.key):
            wanted = ("False", UNSCHEDULABLE, self.forest.last_message[composite.key])
        else:
            return None
        return with_conditions(conditions, {CONDITION: wanted}, now)

    def problem_of(self, composite: CompositeInfo) -> str:
        """Why the hierarchy of ``composite`` cannot be used ("" when it can)."""
        fatal = [i for i in composite.issues if i.fatal]
        if fatal:
            return "; ".join(i.message() for i in fatal)
        ancestry = self.forest.ancestry(composite.namespace, composite.policy.parent)
        if ancestry.problem:
            return ancestry.problem
        if len(ancestry.chain) >= MAX_COMPOSITE_LEVELS:
            return (
                f"it is nested under {len(ancestry.chain)} CompositePodGroups: a hierarchy has "
                f"at most {MAX_COMPOSITE_LEVELS}"
            )
        return ""


def _bound_whole(gang: Gang) -> bool:
    """Its minimum was bound: it ran whole, or that many members are on a node now (running,
    or done already: kwok and short jobs finish fast)."""
    minimum = gang.spec.min_available or 0
    return gang.ran_whole or sum(1 for p in gang.members.values() if p.node_name) >= minimum


def object_ref(info: CompositeInfo) -> ObjectRef:
    return ObjectRef(
        RESOURCE.kind, info.namespace, info.name, info.uid, api_version=info.api_version
    )


def need_said(need: GroupNeed, plan: GroupPlan) -> str:
    """Which level of a hierarchy is short: the top one, and any below it that is."""
    said = [need.describe(plan.part_satisfied)]
    for child in need.children:
        if isinstance(child, GroupNeed) and not child.met(plan.part_satisfied):
            said.append(child.describe(plan.part_satisfied))
    return "; ".join(said)
