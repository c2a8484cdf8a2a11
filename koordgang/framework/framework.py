"""A profile's plugins, sorted by extension point, and how each point combines their answers.

Plugins are given as one list of factories, as kube-scheduler's ``multiPoint`` does: each
factory is called with the framework's :class:`~koordgang.framework.handle.Handle`, and the
plugin it makes is registered at every extension point whose protocol it implements, in the
order of the list. Whoever runs the framework serves it (``serve``) before the first event.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.diagnosis import Diagnosis
from koordgang.framework.group import GroupPlan, PartPlan, Placer, PodResult, SchedulingGroup
from koordgang.framework.handle import Handle, Services
from koordgang.framework.interfaces import (
    AssignPlugin,
    BackfillPlugin,
    BackgroundPlugin,
    BackgroundWork,
    CarryOverPlugin,
    ClusterScorePlugin,
    FilterPlugin,
    GangFactsPlugin,
    GaugeSourcePlugin,
    GroupingPlugin,
    GroupPlacementPlugin,
    GroupPreFilterPlugin,
    HoldPreviewPlugin,
    JobViewPlugin,
    MetricsPlugin,
    ObjectEventPlugin,
    PermitPlugin,
    PlacementScopePlugin,
    Plugin,
    PodEventPlugin,
    PodGonePlugin,
    PodGroupClaimsPlugin,
    PodLeftPendingPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ProvisioningPlugin,
    QueueSortPlugin,
    ReclaimPlugin,
    ReservePlugin,
    ScorePlugin,
    SortKey,
    WatcherPlugin,
)
from koordgang.framework.jobs import JobRef
from koordgang.framework.prebind import NO_WRITES, ObjectWrite, PreBindPlan, PreBindWait
from koordgang.framework.report import MetricSpec, WatchedResource
from koordgang.framework.results import (
    ALLOW,
    Decision,
    HoldPreview,
    PermitResult,
    PostFilterResult,
    ProvisioningVerdict,
    UnreserveReason,
)
from koordgang.framework.runner import PodRunner
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.dra import PodGroupClaims
from koordgang.model.group_key import GroupKey
from koordgang.model.pod import PodInfo
from koordgang.state.nominations import Nominations
from koordgang.state.snapshot import Placement, Snapshot
from koordgang.state.waiting import WaitingPods

#: Makes a plugin, given the handle it keeps.
PluginFactory = Callable[[Handle], Plugin]


def prebuilt(plugins: Iterable[Plugin]) -> list[PluginFactory]:
    """Factories of plugins built already: those that ask nothing of the handle."""
    return [_returning(plugin) for plugin in plugins]


def _returning(plugin: Plugin) -> PluginFactory:
    return lambda _handle: plugin


def _of(plugins: Sequence[Plugin], kind: type[Any]) -> list[Any]:
    return [p for p in plugins if isinstance(p, kind)]


class Framework:
    def __init__(
        self,
        profile: Sequence[PluginFactory],
        *,
        waiting: WaitingPods | None = None,
        rng: random.Random | None = None,
    ) -> None:
        #: Pods held for their group; the engine changes it, plugins read it.
        self.waiting = waiting if waiting is not None else WaitingPods()
        #: Pods nominated to a node while room is made; the engine changes it, plugins read it.
        self.nominations = Nominations()
        #: What every plugin asks the scheduler through: given to each factory.
        self.handle = Handle(self)
        self.plugins = tuple(make(self.handle) for make in profile)
        plugins = self.plugins
        sorts: list[QueueSortPlugin] = _of(plugins, QueueSortPlugin)
        if len(sorts) != 1:
            raise ValueError(f"a profile needs exactly one QueueSort plugin, got {len(sorts)}")
        self.queue_sort = sorts[0]
        groupings: list[GroupingPlugin] = _of(plugins, GroupingPlugin)
        if len(groupings) > 1:
            raise ValueError("a profile takes at most one Grouping plugin")
        self.grouping = groupings[0] if groupings else None
        self.pre_enqueue: list[PreEnqueuePlugin] = _of(plugins, PreEnqueuePlugin)
        self.group_pre_filters: list[GroupPreFilterPlugin] = _of(plugins, GroupPreFilterPlugin)
        self.group_placements: list[GroupPlacementPlugin] = _of(plugins, GroupPlacementPlugin)
        self.post_filters: list[PostFilterPlugin] = _of(plugins, PostFilterPlugin)
        self.backfillers: list[BackfillPlugin] = _of(plugins, BackfillPlugin)
        self.provisioners: list[ProvisioningPlugin] = _of(plugins, ProvisioningPlugin)
        self.hold_previewers: list[HoldPreviewPlugin] = _of(plugins, HoldPreviewPlugin)
        self.carriers: list[CarryOverPlugin] = _of(plugins, CarryOverPlugin)
        self.reserves: list[ReservePlugin] = _of(plugins, ReservePlugin)
        self.permits: list[PermitPlugin] = _of(plugins, PermitPlugin)
        self.reclaimers: list[ReclaimPlugin] = _of(plugins, ReclaimPlugin)
        self.pod_handlers: list[PodEventPlugin] = _of(plugins, PodEventPlugin)
        self.left_pending: list[PodLeftPendingPlugin] = _of(plugins, PodLeftPendingPlugin)
        self.object_handlers: list[ObjectEventPlugin] = _of(plugins, ObjectEventPlugin)
        self.job_views: list[JobViewPlugin] = _of(plugins, JobViewPlugin)
        self.podgroup_claim_views: list[PodGroupClaimsPlugin] = _of(plugins, PodGroupClaimsPlugin)
        self.gang_fact_sources: list[GangFactsPlugin] = _of(plugins, GangFactsPlugin)
        self.pod_gone: list[PodGonePlugin] = _of(plugins, PodGonePlugin)
        self.scopes: list[PlacementScopePlugin] = _of(plugins, PlacementScopePlugin)
        self.gauge_sources: list[GaugeSourcePlugin] = _of(plugins, GaugeSourcePlugin)
        self.background_plugins: list[BackgroundPlugin] = _of(plugins, BackgroundPlugin)
        self.watchers: list[WatcherPlugin] = _of(plugins, WatcherPlugin)
        self.metric_sources: list[MetricsPlugin] = _of(plugins, MetricsPlugin)
        self.pre_binders: list[PreBindPlugin] = _of(plugins, PreBindPlugin)
        self.pods = PodRunner(
            pre_filters=_of(plugins, PreFilterPlugin),
            filters=_of(plugins, FilterPlugin),
            assigners=_of(plugins, AssignPlugin),
            pre_scores=_of(plugins, PreScorePlugin),
            scores=_of(plugins, ScorePlugin),
            cluster_scores=_of(plugins, ClusterScorePlugin),
            rng=rng,
        )

    @property
    def placer(self) -> Placer:
        return self.pods

    def serve(self, services: Services) -> None:
        """The services of whoever runs the framework, for the plugins' handle: once, before
        the first event or cycle."""
        self.handle.serve(services)

    # -- queue ---------------------------------------------------------------------------------

    def sort_key(self, pod: PodInfo) -> SortKey:
        return self.queue_sort.sort_key(pod)

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        for plugin in self.pre_enqueue:
            status = plugin.pre_enqueue(pod)
            if not status.is_success:
                return status
        return SUCCESS

    # -- events --------------------------------------------------------------------------------

    def on_pod(self, old: PodInfo | None, pod: PodInfo | None) -> None:
        for plugin in self.pod_handlers:
            plugin.on_pod(old, pod)
        current = pod or old
        if current is not None and (pod is None or pod.node_name):
            for other in self.left_pending:
                other.on_pod_left_pending(current, pod is None)

    def on_pod_gone(self, pod: PodInfo) -> None:
        for plugin in self.pod_gone:
            plugin.on_pod_gone(pod)

    def on_object(self, kind: str, event: str, obj: Mapping[str, Any]) -> bool:
        moved = False
        for plugin in self.object_handlers:
            moved = plugin.on_object(kind, event, obj) or moved
        return moved

    def watched_resources(self) -> list[WatchedResource]:
        """Every resource a plugin declared, once each, in the plugins' order."""
        seen: dict[str, WatchedResource] = {}
        for plugin in self.watchers:
            for resource in plugin.watches():
                seen.setdefault(resource.id, resource)
        return list(seen.values())

    def metric_specs(self) -> list[MetricSpec]:
        """Every metric a plugin declared, once each by name."""
        seen: dict[str, MetricSpec] = {}
        for plugin in self.metric_sources:
            for spec in plugin.metrics():
                seen.setdefault(spec.name, spec)
        return list(seen.values())

    def gauges(self) -> dict[str, Mapping[str, float]]:
        return {name: values for p in self.gauge_sources for name, values in p.gauges().items()}

    def background(self) -> dict[str, BackgroundWork]:
        """The plugins' work off the scheduling cycle, by task name."""
        return {
            name: work for p in self.background_plugins for name, work in p.background().items()
        }

    def working(self) -> bool:
        """Some plugin's work off the cycle is in flight."""
        return any(p.working() for p in self.background_plugins)

    # -- groups --------------------------------------------------------------------------------

    def group_members(self, pod: PodInfo) -> Sequence[PodInfo] | None:
        return None if self.grouping is None else self.grouping.group_members(pod)

    def build_group(self, pod: PodInfo, pending: Sequence[PodInfo] | None) -> SchedulingGroup:
        """The group of this cycle: ``pod`` alone when ``pending`` is None (it has no group),
        else as the grouping plugin builds it from the pending pods taken out of the queue."""
        if self.grouping is None:
            return SchedulingGroup.single(pod)
        if pending is None:
            group = SchedulingGroup.single(pod)
            group.topology = self.grouping.topology_for(pod)
            return group
        return self.grouping.build_group(pod, pending)

    def run_group_pre_filter(
        self, state: CycleState, group: SchedulingGroup, snapshot: Snapshot
    ) -> Status:
        for plugin in self.group_pre_filters:
            status = plugin.pre_filter_group(state, group, snapshot)
            if not status.is_success and status.code is not Code.SKIP:
                return status
        return SUCCESS

    def run_group_placement(
        self, state: CycleState, group: SchedulingGroup, snapshot: Snapshot
    ) -> GroupPlan:
        plan = None
        for plugin in self.group_placements:
            plan = plugin.place_group(state, group, snapshot, self.pods)
            if plan is not None:
                break
        if plan is None:
            plan = place_members(group, snapshot, self.pods)
        plan.need = group.need
        plan.settled = group.settled
        return plan

    def backfill_room(self, state: CycleState, group: SchedulingGroup) -> list[Placement]:
        """The nominations (pod and node) whose held room ``group`` may use in this cycle."""
        lent: dict[str, Placement] = {}
        for plugin in self.backfillers:
            for uid in plugin.backfill_room(state, group):
                nomination = self.nominations.get(uid)
                if nomination is not None:
                    lent[uid] = Placement(nomination.pod, nomination.node)
        return list(lent.values())

    def reclaimable(self, group: SchedulingGroup, snapshot: Snapshot) -> dict[str, int]:
        total: dict[str, int] = {}
        for plugin in self.reclaimers:
            for name, amount in plugin.reclaimable(group, snapshot).items():
                total[name] = total.get(name, 0) + amount
        return total

    def run_post_filter(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> PostFilterResult:
        """Plugins in order until one succeeds; what the others say is merged."""
        merged = PostFilterResult(Status(Code.UNSCHEDULABLE))
        for plugin in self.post_filters:
            result = plugin.post_filter(state, group, plan, snapshot)
            merged.writes += result.writes
            merged.messages.update(result.messages)
            for uid, note in result.notes.items():
                merged.notes[uid] = f"{merged.notes[uid]}; {note}" if uid in merged.notes else note
            merged.drop_placements = merged.drop_placements or result.drop_placements
            if result.dry_run_seconds is not None:
                merged.dry_run_seconds = result.dry_run_seconds
            if result.status.is_success:
                # The room is being made: what the succeeding plugin says is the whole story.
                merged.notes = dict(result.notes)
                merged.status = result.status
                merged.nominated = result.nominated
                merged.evict = result.evict
                merged.preemptor = result.preemptor
                merged.eviction_why = result.eviction_why
                merged.drop_nominations = result.drop_nominations
                return merged
            if result.status.code is not Code.SKIP:
                merged.status = result.status
        return merged

    def run_provisioning(
        self, group: SchedulingGroup, needed: Sequence[PodInfo], snapshot: Snapshot
    ) -> ProvisioningVerdict | None:
        """The first verdict of a plugin that says an autoscaler cannot help, if any."""
        for plugin in self.provisioners:
            verdict = plugin.provisioning(group, needed, snapshot)
            if verdict is not None:
                return verdict
        return None

    def carried(self) -> dict[str, object]:
        """What a what-if's fresh plugins take over from these, by plugin name."""
        return {plugin.name: plugin.carried() for plugin in self.carriers}

    def carry(self, carried: Mapping[str, object]) -> None:
        """Fresh plugins take over what the daemon's gave (``carried()`` of its framework)."""
        for plugin in self.carriers:
            if plugin.name in carried:
                plugin.carry(carried[plugin.name])

    def hold_preview(
        self, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> HoldPreview | None:
        """What the first plugin that would hold room for ``group`` says it would hold."""
        for plugin in self.hold_previewers:
            preview = plugin.hold_preview(group, plan, snapshot)
            if preview is not None:
                return preview
        return None

    def placement_scopes(
        self, group: SchedulingGroup, snapshot: Snapshot
    ) -> list[frozenset[str]] | None:
        for plugin in self.scopes:
            scopes = plugin.placement_scopes(group, snapshot)
            if scopes is not None:
                return scopes
        return None

    def gang_facts(self, gang_key: str) -> dict[str, Any]:
        """What the plugins add to a gang's row in the gangs view, merged in profile order."""
        facts: dict[str, Any] = {}
        for plugin in self.gang_fact_sources:
            facts.update(plugin.gang_facts(gang_key))
        return facts

    def job_of(self, pod: PodInfo) -> JobRef | None:
        """The job a running pod belongs to, as the plugins that know say it."""
        for plugin in self.job_views:
            job = plugin.job_of(pod)
            if job is not None:
                return job
        return None

    def podgroup_claims(self, namespace: str, name: str) -> PodGroupClaims | None:
        """The claims of upstream PodGroup ``namespace/name``, as the plugin that keeps them
        was told (a what-if's pods that join it share them)."""
        for plugin in self.podgroup_claim_views:
            claims = plugin.podgroup_claims(namespace, name)
            if claims is not None:
                return claims
        return None

    def run_reserve(
        self, state: CycleState, group: SchedulingGroup, placements: Sequence[Placement]
    ) -> Status:
        for index, plugin in enumerate(self.reserves):
            status = plugin.reserve(state, group, placements)
            if not status.is_success:
                for done in reversed(self.reserves[:index]):
                    done.unreserve(group.key, placements, UnreserveReason.RESERVE_FAILED)
                return status
        return SUCCESS

    def run_unreserve(
        self, group_key: GroupKey, placements: Sequence[Placement], reason: UnreserveReason
    ) -> None:
        # In reverse, as kube-scheduler undoes reservations.
        for plugin in reversed(self.reserves):
            plugin.unreserve(group_key, placements, reason)

    def run_pre_bind(self, placements: Sequence[Placement]) -> PreBindPlan:
        """Every plugin's writes for a batch about to bind, and every refusal."""
        if not self.pre_binders:
            return NO_WRITES
        writes: list[ObjectWrite] = []
        refused: dict[str, str] = {}
        waits: list[PreBindWait] = []
        for plugin in self.pre_binders:
            plan = plugin.pre_bind(placements)
            writes.extend(plan.writes)
            refused.update(plan.refused)
            waits.extend(plan.waits)
        if not writes and not refused and not waits:
            return NO_WRITES
        return PreBindPlan(tuple(writes), refused, tuple(waits))

    def run_verify(self, placements: Sequence[Placement]) -> dict[str, str]:
        """After a batch's writes landed: pod uid -> why it may not bind after all."""
        refused: dict[str, str] = {}
        for plugin in self.pre_binders:
            refused.update(plugin.verify(placements))
        return refused

    def run_permit(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, now: float
    ) -> PermitResult:
        """Any REJECT rejects; else any WAIT waits (until the earliest deadline); else ALLOW.
        The messages of all plugins are merged; ALLOW merges the held pods let go."""
        if len(self.permits) == 1:
            return self.permits[0].permit(state, group, plan, now)  # nothing to combine
        decision = Decision.ALLOW
        deadline: float | None = None
        plugin = ""
        allowed: list[str] = []
        messages: dict[str, str] = {}
        for permit in self.permits:
            result = permit.permit(state, group, plan, now)
            messages.update(result.messages)
            if result.decision is Decision.REJECT:
                return PermitResult(Decision.REJECT, messages=messages, plugin=result.plugin)
            if result.decision is Decision.WAIT:
                if decision is not Decision.WAIT or (
                    result.deadline is not None and (deadline is None or result.deadline < deadline)
                ):
                    deadline, plugin = result.deadline, result.plugin
                decision = Decision.WAIT
            else:
                allowed.extend(result.also_allow)
        if decision is Decision.WAIT:
            return PermitResult(Decision.WAIT, deadline=deadline, messages=messages, plugin=plugin)
        if not allowed and not messages:
            return ALLOW
        return PermitResult(Decision.ALLOW, messages=messages, also_allow=tuple(allowed))


def place_members(group: SchedulingGroup, snapshot: Snapshot, placer: Placer) -> GroupPlan:
    """The default group placement: members one after another, each on the best node left.

    A Strict part stops the attempt as soon as it can no longer reach its minimum: nothing of
    it would be kept. A pod whose shape already failed in this attempt is not tried again when
    that failure can only have got worse (the snapshot only gets fuller here)."""
    plans = [PartPlan(part) for part in group.parts]
    if group.need is not None:
        return _place_parts_whole(group, plans, snapshot, placer)
    strict = any(part.strict for part in group.parts)
    for position, plan in enumerate(plans):
        if _place_part(plan, snapshot, placer, strict, group.nominated):
            continue
        for later in plans[position + 1 :]:
            later.skipped.extend(later.part.pending)
        break
    return GroupPlan(snapshot, plans)


def _place_parts_whole(
    group: SchedulingGroup, plans: list[PartPlan], snapshot: Snapshot, placer: Placer
) -> GroupPlan:
    """Gangs of gangs: each part on a fork of its own, kept only if it reaches its minimum; a
    part that does not leaves its room to the parts after it (the group's need says how many
    must be kept)."""
    for plan in plans:
        fork = snapshot.fork()
        _place_part(plan, fork, placer, True, group.nominated)
        if plan.short == 0:
            fork.commit()
            continue
        missing = plan.short
        reason = (
            f"{plan.part.key} does not fit whole ({missing} more "
            f"member{'s' if missing != 1 else ''} did not fit)"
        )
        first = plan.first_failure
        status = Status(Code.UNSCHEDULABLE, (f"{reason}: {first}" if first else reason,))
        for placement in plan.placed:
            plan.failed.append(PodResult(placement.pod, None, status, None, monotone=False))
        plan.placed = []
    return GroupPlan(snapshot, plans)


def _place_part(
    plan: PartPlan,
    snapshot: Snapshot,
    placer: Placer,
    strict: bool,
    plan_nominated: dict[str, str],
) -> bool:
    """Places the members of one part (a nominated member on its node first, if it still
    fits there); False if the whole attempt should stop (Strict)."""
    failed_shapes: dict[object, tuple[Status, Diagnosis | None]] = {}
    pending = plan.part.pending
    for position, pod in enumerate(pending):
        nominated = plan_nominated.get(pod.uid)
        if nominated is not None:
            first = placer.place(pod, snapshot, within=frozenset((nominated,)))
            if first.node is not None:
                plan.placed.append(Placement(pod, first.node))
                continue
        known = failed_shapes.get(pod.shape)
        if known is not None:
            plan.failed.append(_same_failure(pod, *known))
        else:
            result = placer.place(pod, snapshot)
            if result.node is not None:
                plan.placed.append(Placement(pod, result.node))
                continue
            plan.failed.append(result)
            if result.monotone:
                failed_shapes[pod.shape] = (result.status, result.diagnosis)
        remaining = len(pending) - position - 1
        if strict and plan.counted + remaining < plan.part.minimum:
            plan.skipped.extend(pending[position + 1 :])
            return False
    return True


def _same_failure(pod: PodInfo, status: Status, diagnosis: Diagnosis | None) -> PodResult:
    return PodResult(pod, None, status, diagnosis)
