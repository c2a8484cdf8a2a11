"""Gang scheduling through the framework's extension points (Koordinator's Coscheduling).

- QueueSort: members of one gang leave the queue together (``sort.py``);
- PreEnqueue: members of a timed-out gang wait outside the queue until the user deletes them;
- Grouping: a popped member brings every pending member of its GangGroup into the cycle, one
  part per gang, with the gang's minimum; Strict gangs give up as soon as a minimum is out of
  reach;
- GroupPreFilter: every gang of the group exists, is valid, has its PodGroup and ``min``
  members; the PodGroup's ``minResources`` are free in the cluster;
- PostFilter: a group that does not fit whole is explained gang by gang; a Strict group keeps
  nothing;
- Reserve/Unreserve: a group whose held placements time out is marked timed out;
- Permit: all gangs at their minimum: bind, with everything held earlier; NonStrict short: hold
  until the waiting time runs out; Strict short: give up;
- events in each gang API's own terms (``koordgang/gangapis/``); the gangs whose group
  objects' status may have changed are marked in the registry, and the engine's status
  controller writes it (``engine/gang_status.py``);
- gangs of gangs (upstream's CompositePodGroup) through ``gangapis/composite.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from koordgang.framework.cycle_state import UNPLACED_MESSAGES, CycleState
from koordgang.framework.group import (
    GroupPart,
    GroupPlan,
    GroupTopology,
    PartPlan,
    SchedulingGroup,
)
from koordgang.framework.handle import Handle
from koordgang.framework.interfaces import SortKey
from koordgang.framework.jobs import JobRef
from koordgang.framework.report import MetricSpec, Report, WatchedResource
from koordgang.framework.results import (
    ALLOW,
    Decision,
    PermitResult,
    PostFilterResult,
    UnreserveReason,
)
from koordgang.framework.status import SKIP, SUCCESS, Status
from koordgang.gangapis import GANG_APIS, GangApi, composite
from koordgang.gangapis.composite import Composites, Hierarchy
from koordgang.gangapis.min_resources import free_in_cluster, shortfall
from koordgang.gangapis.readiness import check_group, own_problem
from koordgang.model.gang import GangMode
from koordgang.model.group_key import GroupKey
from koordgang.model.koordinator import (
    NETWORK_TOPOLOGY_SPEC_KEY,
    TIMEOUT_KEY,
    is_timed_out,
    topology_index,
)
from koordgang.model.pod import PodInfo
from koordgang.plugins.coscheduling import messages as say
from koordgang.plugins.coscheduling.events import ADMISSION_REFUSALS, GangEvents
from koordgang.plugins.coscheduling.sort import gang_sort_key
from koordgang.state.gangs import Gang, GangRegistry, GangState
from koordgang.state.snapshot import Placement, Snapshot

log = structlog.get_logger("koordgang.gangs")

GANGS = "koordgang_gangs"
GANGS_BY_API = "koordgang_gangs_by_api"
GANG_WAIT = "koordgang_gang_wait_seconds"
GANG_TIMEOUTS = "koordgang_gang_timeouts"
#: The metrics gang scheduling registers (the engine names none of them).
METRICS = (
    MetricSpec(GANGS, "Gangs by phase.", "gauge", label="phase"),
    MetricSpec(GANGS_BY_API, "Gangs by the gang API that declares them.", "gauge", label="api"),
    MetricSpec(
        GANG_WAIT,
        "Time from a gang's creation to the moment its group reached its minimum.",
        "histogram",
    ),
    MetricSpec(GANG_TIMEOUTS, "Gangs that held reservations past their waiting time.", "counter"),
    MetricSpec(
        ADMISSION_REFUSALS,
        "Gang members a kubelet refused at admission after they were bound, by its reason.",
        "counter",
        label="reason",
    ),
)


def member_order(pod: PodInfo) -> tuple[int, int, str]:
    """Members are placed in rank order (network-topology-index), then by name."""
    index = topology_index(pod.annotations)[0]
    return (0 if index is not None else 1, index or 0, pod.name)


class Coscheduling:
    name = "Coscheduling"

    def __init__(
        self, handle: Handle, gangs: GangRegistry, apis: Sequence[GangApi] = GANG_APIS
    ) -> None:
        self.handle = handle
        self.gangs = gangs
        # The group objects of these APIs; the registry reads pods with the resolver it was
        # made with (``Resolve(GANG_APIS)`` wherever a daemon, a what-if or a bench runs).
        self.apis = tuple(apis)
        #: Gangs of gangs (CompositePodGroups): which hierarchy a gang is placed in.
        self.composites = Composites(gangs, gangs.composites)
        self.composites.labels = self._node_labels
        #: Pod and group-object events into the registry, and what users are told of them.
        self.events = GangEvents(handle, gangs, self.apis, self.composites)

    def _node_labels(self, name: str) -> Mapping[str, str]:
        node = self.handle.cache.node(name)
        return node.info.labels if node is not None and node.info is not None else {}

    # -- queue ---------------------------------------------------------------------------------

    def sort_key(self, pod: PodInfo) -> SortKey:
        return gang_sort_key(self.gangs, pod)

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if is_timed_out(pod.annotations):
            return Status.unresolvable(self.name, "the pod's gang timed out")
        gang = self.gangs.gang_of(pod.uid)
        if gang is not None and gang.timed_out:
            if gang.is_timed_out_member(pod.uid):
                # Told already (its GangTimeout report may not have landed yet).
                return Status.unresolvable(self.name, "the pod's gang timed out")
            # A new member (a replacement a Job made) waits for the old ones to go, and is
            # told so rather than left without a word.
            message = say.timed_out_replacement(gang)
            self.handle.report(Report.unschedulable(pod, message, reason="GangTimeout"))
            return Status.unresolvable(self.name, message)
        return SUCCESS

    # -- events: the registry kept in step (events.py) ------------------------------------------

    def on_pod(self, old: PodInfo | None, pod: PodInfo | None) -> None:
        self.events.on_pod(old, pod)

    def watches(self) -> Sequence[WatchedResource]:
        return self.events.watches()

    def on_object(self, kind: str, event: str, obj: Mapping[str, Any]) -> bool:
        return self.events.on_object(kind, event, obj)

    # -- grouping ------------------------------------------------------------------------------

    def _active_gangs(self, gang: Gang) -> list[Gang]:
        """The gangs of ``gang``'s group that still constrain their members (under a
        CompositePodGroup: the PodGroups of its hierarchy that can be tried now)."""
        tree = self.composites.hierarchy_of(gang)
        if tree is not None:
            return [
                g
                for key in tree.leaves
                if (g := self.gangs.get(key)) is not None
                and not g.satisfied
                and not g.timed_out
                and not own_problem(g)
            ]
        return [g for _, g in self.gangs.group(gang) if g is not None and not g.exempt()]

    def group_members(self, pod: PodInfo) -> Sequence[PodInfo] | None:
        gang = self.gangs.gang_of(pod.uid)
        if gang is None or gang.exempt():
            return None
        is_pending = self.handle.is_pending
        return [
            member
            for g in self._active_gangs(gang)
            for member in g.pending_members()
            if member.uid != pod.uid and is_pending(member)
        ]

    def topology_for(self, pod: PodInfo) -> GroupTopology | None:
        """A replacement in a gang that was satisfied once goes alone; with a network-topology
        spec, it is told where the gang's running members are, to be placed near them."""
        gang = self.gangs.gang_of(pod.uid)
        if gang is None or not gang.exempt() or gang.spec.network_topology_spec is None:
            return None
        nodes = sorted({p.node_name for p in gang.bound_members()})
        if not nodes:
            return None
        return GroupTopology(gang.spec.network_topology_spec, near=tuple(nodes))

    def build_group(self, pod: PodInfo, pending: Sequence[PodInfo]) -> SchedulingGroup:
        gang = self.gangs.gang_of(pod.uid)
        assert gang is not None, "build_group is only called for members of a gang"
        gangs = self._active_gangs(gang)
        if gang not in gangs:
            gangs.insert(0, gang)
        by_gang: dict[str, list[PodInfo]] = {g.key: [] for g in gangs}
        for member in [pod, *pending]:
            owner = self.gangs.gang_of(member.uid)
            if owner is not None and owner.key in by_gang:
                by_gang[owner.key].append(member)
        parts = [self._part(g, by_gang[g.key]) for g in gangs]
        key = GroupKey.of(by_gang)
        topology = None
        ordered = sorted(gangs, key=lambda g: g.key)
        specs = [(g.key, g.spec.network_topology_spec) for g in ordered]
        chosen = next(((key, spec) for key, spec in specs if spec is not None), None)
        if chosen is not None:
            topology = GroupTopology(chosen[1])
            others = sorted({key for key, spec in specs if spec and spec != chosen[1]})
            if others:
                self.handle.report(
                    Report.for_pod(
                        pod,
                        "Warning",
                        "TopologySpecsDiffer",
                        f"{NETWORK_TOPOLOGY_SPEC_KEY} differs between the gangs of one group "
                        f"({', '.join(others)} differ from {chosen[0]}); the group uses "
                        f"{chosen[0]}'s",
                    )
                )
        group = SchedulingGroup(key, parts, pod, topology=topology)
        self.composites.shape(group, gangs, self.composites.hierarchy_of(gang))
        return group

    def _part(self, gang: Gang, pending: list[PodInfo]) -> GroupPart:
        part = GroupPart(
            gang.key,
            sorted(pending, key=member_order),
            minimum=gang.spec.min_available or 0,
            counted=gang.counted(),
            strict=gang.spec.mode is GangMode.STRICT,
            waiting_time=gang.spec.waiting_time,
            keys=gang.podgroup.policy.topology_keys if gang.podgroup is not None else (),
            pinned=self.composites.pins_for(gang),
        )
        tasks = gang.podgroup.task_minimums if gang.podgroup is not None else {}
        if tasks:
            part.task_minimums = dict(tasks)
            part.task_of = {p.uid: gang.task_of(p) for p in pending}
            counted: dict[str, int] = {}
            for member in gang.counted_members():
                task = gang.task_of(member)
                counted[task] = counted.get(task, 0) + 1
            part.task_counted = counted
            # What each task still needs goes first: other members must not take its room.
            needed = part.needed()
            first = {p.uid for p in needed}
            part.pending = needed + [p for p in part.pending if p.uid not in first]
        return part

    def _gangs_of(self, group_key: GroupKey) -> list[Gang]:
        return [g for g in (self.gangs.get(k) for k in group_key.gangs) if g is not None]

    def _gangs_in(self, group: SchedulingGroup) -> list[Gang]:
        """The group's gangs in the order it was built (the trigger's first)."""
        return [g for g in (self.gangs.get(p.key) for p in group.parts) if g is not None]

    # -- before placing ------------------------------------------------------------------------

    def pre_filter_group(
        self, state: CycleState, group: SchedulingGroup, snapshot: Snapshot
    ) -> Status:
        if not group.key:
            return SKIP
        gang = self.gangs.gang_of(group.trigger.uid)
        if gang is None:
            return SKIP
        tree = self.composites.hierarchy_of(gang)
        if tree is not None:
            status = self._composite_ready(state, gang, tree, group)
            if status is not None:
                return status
            partners: list[tuple[str, Gang | None]] = [(gang.key, gang)]
        else:
            partners = self.gangs.group(gang)
        verdict = check_group(gang, partners)
        if not verdict.ready:
            # Each member hears it from its own gang's side ("gang a waits for b ...").
            told: dict[str, str] = {}
            for _, other in partners:
                if other is None:
                    continue
                seen = verdict if other is gang else check_group(other, partners)
                other.last_message = seen.message if not seen.ready else verdict.message
                text = say.with_notes(other, other.last_message)
                for pod in group.members():
                    if pod.uid in other.members:
                        told[pod.uid] = text
                # Its held members hear the same (the cycle tells them alongside the others).
                for held in self.handle.waiting.in_part(other.key):
                    told[held.pod.uid] = text
            state.write(UNPLACED_MESSAGES, told)
            return Status.unschedulable(self.name, say.with_notes(gang, verdict.message))
        active = self._gangs_in(group)
        for member in active:
            if member.first_attempt is None:
                member.first_attempt = self.handle.wall()
            self.gangs.touch(member.key)
        for member in active:
            problem = self._min_resources_problem(member, group, snapshot)
            if problem:
                member.last_message = problem
                return Status.unschedulable(self.name, say.with_notes(gang, problem))
        return SUCCESS

    def _composite_ready(
        self, state: CycleState, gang: Gang, tree: Hierarchy, group: SchedulingGroup
    ) -> Status | None:
        """None when the hierarchy can be tried now; else why not, told to every member."""
        message = self.composites.not_ready(gang, tree, self._active_gangs(gang))
        if not message:
            return None
        state.write(UNPLACED_MESSAGES, {member.uid: message for member in group.members()})
        gang.last_message = message
        self.gangs.touch(gang.key)
        return Status.unschedulable(self.name, message)

    def _min_resources_problem(self, gang: Gang, group: SchedulingGroup, snapshot: Snapshot) -> str:
        podgroup = gang.podgroup
        if podgroup is None or podgroup.min_resources is None:
            return ""
        minimum = podgroup.min_resources
        free = free_in_cluster(snapshot, minimum.names())
        counted = [p for p in gang.members.values() if snapshot.node_of(p.uid) is not None]
        short = shortfall(minimum, counted, free, self.handle.reclaimable(group, snapshot))
        if not short:
            return ""
        return f"gang {gang.key}: minResources do not fit the free room: {'; '.join(short)}"

    # -- after placing -------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> PostFilterResult:
        if not group.key or plan.satisfied:
            return PostFilterResult(SKIP)
        # A hierarchy of CompositePodGroups holds nothing while short: its parts are placed
        # whole, together, or not at all.
        strict = group.need is not None or any(part.part.strict for part in plan.parts)
        messages = self._explain(plan, keep=not strict)
        return PostFilterResult(
            Status.unschedulable(self.name), drop_placements=strict, messages=messages
        )

    def _explain(self, plan: GroupPlan, *, keep: bool) -> dict[str, str]:
        """What every member of the group hears after an attempt that left it short: pods not
        placed, pods placed (kept or not), and pods held from earlier attempts."""
        messages: dict[str, str] = {}
        blamed = say.culprit(plan)
        other = self.gangs.get(blamed.part.key)
        waiting = self.handle.waiting
        for part in plan.parts:
            gang = self.gangs.get(part.part.key)
            if gang is None:
                continue
            held = waiting.in_part(gang.key)
            holding = len(held) + (len(part.placed) if keep else 0)
            message = say.unsatisfied(plan, part, gang, other or gang, holding)
            if plan.need is not None:
                message = f"{message}; {composite.need_said(plan.need, plan)}"
                tree = self.composites.hierarchy_of(gang)
                if tree is not None and tree.root is not None:
                    self.gangs.composites.last_message[tree.root.key] = message
            gang.last_message = message
            self.gangs.touch(gang.key)
            text = say.with_notes(gang, message)
            for pod in _all_pods(part):
                messages[pod.uid] = text
            for held_pod in held:
                messages[held_pod.pod.uid] = text
        return messages

    def reserve(
        self, state: CycleState, group: SchedulingGroup, placements: Sequence[Placement]
    ) -> Status:
        if not group.key:
            return SUCCESS
        for gang in self._gangs_in(group):
            self.gangs.touch(gang.key)
        return SUCCESS

    def unreserve(
        self, group_key: GroupKey, placements: Sequence[Placement], reason: UnreserveReason
    ) -> None:
        if reason is UnreserveReason.BIND_FAILED and group_key:
            # A batch given up before its bindings (its writes failed) satisfied nothing:
            # while no member is bound, the gang is decided about whole again.
            for gang in self._gangs_of(group_key):
                if gang.undo_satisfied():
                    self.gangs.touch(gang.key)
            return
        if reason != UnreserveReason.TIMEOUT or not group_key:
            return
        gangs = self._gangs_of(group_key)
        if all(g.satisfied for g in gangs):
            # Satisfied gangs under a policy that still counts (only-waiting, say) held room
            # for replacements that did not add up: let it go, no timeout.
            return
        for gang in gangs:
            if not gang.satisfied and not gang.timed_out:
                self._time_out(gang)

    def _time_out(self, gang: Gang) -> None:
        message = say.timed_out(gang)
        gang.mark_timed_out()
        self.handle.record(GANG_TIMEOUTS)
        gang.last_message = message
        self.gangs.touch(gang.key)
        log.warning("gang timed out", gang=gang.key, waiting_time=gang.spec.waiting_time)
        waiting = [p for p in gang.members.values() if not p.node_name and not p.is_terminal]
        # Members still queued leave the queue now (PreEnqueue refuses a timed-out gang's).
        self.handle.activate(waiting)
        for pod in waiting:
            self.handle.report(
                Report.for_pod(
                    pod,
                    "Warning",
                    "GangTimeout",
                    message,
                    condition=("False", "GangTimeout"),
                    annotations={TIMEOUT_KEY: "true"},
                    always=True,
                )
            )

    def permit(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, now: float
    ) -> PermitResult:
        if not group.key:
            return ALLOW
        gangs = self._gangs_in(group)
        waiting = self.handle.waiting
        if plan.satisfied:
            # Under a CompositePodGroup, the parts beyond its need were taken back.
            gangs = [g for g in gangs if plan.part_satisfied(g.key)]
            held = tuple(w.pod.uid for g in gangs for w in waiting.in_part(g.key))
            for gang in gangs:
                if not gang.satisfied:
                    self.handle.record(GANG_WAIT, max(0.0, self.handle.wall() - gang.created_at()))
                gang.mark_satisfied()
                gang.last_message = ""
                self.gangs.touch(gang.key)
            log.info(
                "gang group placed",
                gangs=[g.key for g in gangs],
                pods=len(plan.placements()) + len(held),
            )
            return PermitResult(Decision.ALLOW, also_allow=held, plugin=self.name)
        messages = self._explain(plan, keep=True)
        if group.need is not None or any(part.part.strict for part in plan.parts):
            return PermitResult(Decision.REJECT, messages=messages, plugin=self.name)
        deadline = waiting.deadline(group.key)
        if deadline is None:
            deadline = now + min(g.spec.waiting_time for g in gangs)
        return PermitResult(Decision.WAIT, deadline=deadline, messages=messages, plugin=self.name)

    # -- status --------------------------------------------------------------------------------

    def metrics(self) -> Sequence[MetricSpec]:
        return METRICS

    def gauges(self) -> Mapping[str, Mapping[str, float]]:
        # Every phase and API, 0 when none is in it.
        phases: dict[str, float] = dict.fromkeys((state.value for state in GangState), 0)
        by_api: dict[str, float] = dict.fromkeys((api.name for api in self.apis), 0)
        for gang in self.gangs.gangs():
            phases[gang.state.value] = phases.get(gang.state.value, 0) + 1
            by_api[gang.api] = by_api.get(gang.api, 0) + 1
        return {GANGS: phases, GANGS_BY_API: by_api}

    def job_of(self, pod: PodInfo) -> JobRef | None:
        """A running pod's gang: evicting it breaks the gang when its running members would
        fall below the minimum (what preemption weighs first)."""
        gang = self.gangs.gang_of(pod.uid)
        if gang is None:
            return None
        running = sum(1 for _ in gang.bound_members())
        whole = gang.podgroup is not None and gang.podgroup.policy.disrupt_all
        return JobRef(gang.key, minimum=gang.spec.min_available or 0, running=running, whole=whole)


def _all_pods(part: PartPlan) -> Iterable[PodInfo]:
    for placement in part.placed:
        yield placement.pod
    for result in part.failed:
        yield result.pod
    yield from part.skipped
