"""One small protocol per extension point, as in kube-scheduler's framework.

Every method is synchronous: a scheduling cycle runs without awaiting, which is what makes it
atomic with respect to informer events on a single event loop.

Two families:
- per pod, as kube-scheduler has them: PreEnqueue, QueueSort, PreFilter, Filter, PreScore,
  Score. They decide where one pod may go and which node is best for it.
- per group (a gang group, or a plain pod as a group of one): Grouping (which pods are decided
  together), GroupPreFilter, GroupPlacement, PostFilter, Reserve, Permit. They decide about
  the group as a whole; see ``framework/cycle.py`` for the order in which they run.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.group import GroupPlan, GroupTopology, Placer, SchedulingGroup
from koordgang.framework.jobs import JobRef
from koordgang.framework.prebind import PreBindPlan
from koordgang.framework.report import MetricSpec, WatchedResource
from koordgang.framework.results import (
    HoldPreview,
    PermitResult,
    PostFilterResult,
    ProvisioningVerdict,
    UnreserveReason,
)
from koordgang.framework.status import Status
from koordgang.model.dra import PodGroupClaims
from koordgang.model.group_key import GroupKey
from koordgang.model.pod import PodInfo
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Placement, Snapshot

SortKey = tuple[Any, ...]
MAX_NODE_SCORE = 100


class Scope(enum.IntEnum):
    """What a filter's verdict or a score depends on; it decides how often it is computed."""

    #: The pod and the node's spec (labels, taints, readiness): computed once per pod shape and
    #: set of nodes, and shared by every pod of that shape.
    STATIC = 0
    #: Also what runs on the node (its usage, its ports): computed again when the node changes.
    #: A NODE filter never accepts a pod on a node because the node got fuller.
    NODE = 1
    #: Also what runs on other nodes (a topology domain): computed for every node, every time.
    #: A pod for which such a plugin is active is placed by a pass over all nodes.
    CLUSTER = 2


@runtime_checkable
class Plugin(Protocol):
    name: str


# -- per pod -----------------------------------------------------------------------------------


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status:
        """May the pod enter the scheduling queue at all? A pod refused here waits outside the
        queue (scheduling gates, a timed-out gang) until an update of it, or ``activate``."""


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def sort_key(self, pod: PodInfo) -> SortKey:
        """Smaller keys are tried first."""


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        """Checks that need no node; may compute values for Filter and Score. SKIP says the
        plugin has nothing to check for this pod: its Filter is not run."""


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    scope: Scope

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        """Can ``pod`` run on ``node``?"""


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        """SKIP says the plugin would score every node alike for this pod: it is not run.
        Runs before filtering, for every pod: a cheap look, not the scoring itself."""


@runtime_checkable
class AssignPlugin(Plugin, Protocol):
    def assign(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        """``pod`` was just added to ``node`` in ``snapshot`` (it passed every filter there):
        record in the snapshot what else it takes on the node (the devices of its claims), so
        that the next pod placed sees them taken. A failure undoes the placement. Runs with
        the state of the pod's PreFilter."""


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    weight: int
    scope: Scope
    #: True when placing more pods on a node can raise its score (binpacking): the node index
    #: then looks again at every node that changed, not only at those that got emptier.
    rises_with_usage: bool

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        """A raw score for placing ``pod`` on a feasible ``node`` (higher is better)."""


@runtime_checkable
class NormalizeScorePlugin(ScorePlugin, Protocol):
    def normalize(self, state: CycleState, pod: PodInfo, scores: dict[str, int]) -> None:
        """Maps raw scores (by node name) to 0..100 in place, looking at all of them: over the
        statically feasible nodes for STATIC plugins, over the feasible nodes otherwise."""


@runtime_checkable
class ClusterScorePlugin(Plugin, Protocol):
    weight: int

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeState], snapshot: Snapshot
    ) -> dict[str, int]:
        """0..100 for each of the feasible ``nodes`` (normalized over them): for scores that
        depend on what runs on other nodes (pod affinity, spreading)."""


# -- per group ---------------------------------------------------------------------------------


@runtime_checkable
class GroupingPlugin(Plugin, Protocol):
    def group_members(self, pod: PodInfo) -> Sequence[PodInfo] | None:
        """The other pending pods to decide together with ``pod``; None: it goes alone."""

    def build_group(self, pod: PodInfo, pending: Sequence[PodInfo]) -> SchedulingGroup:
        """The group of this cycle, from ``pod`` and the pending pods taken out of the queue."""

    def topology_for(self, pod: PodInfo) -> GroupTopology | None:
        """Where a pod that goes alone wants to be (see ``SchedulingGroup.topology``)."""


@runtime_checkable
class GroupPreFilterPlugin(Plugin, Protocol):
    def pre_filter_group(
        self, state: CycleState, group: SchedulingGroup, snapshot: Snapshot
    ) -> Status:
        """May the group be attempted now? A rejection stops the cycle before any filtering."""


@runtime_checkable
class GroupPlacementPlugin(Plugin, Protocol):
    def place_group(
        self, state: CycleState, group: SchedulingGroup, snapshot: Snapshot, placer: Placer
    ) -> GroupPlan | None:
        """Places the group's pending members on ``snapshot`` (a fork of the cycle's snapshot,
        free to change); None leaves the group to the next plugin, and in the end to the
        framework's member-by-member placement."""


@runtime_checkable
class PlacementScopePlugin(Plugin, Protocol):
    def placement_scopes(
        self, group: SchedulingGroup, snapshot: Snapshot
    ) -> list[frozenset[str]] | None:
        """The node sets the group must be placed inside one of (a MustGather rule's domains);
        None: anywhere. Preemption makes room inside one of them only."""


@runtime_checkable
class ReclaimPlugin(Plugin, Protocol):
    def reclaimable(self, group: SchedulingGroup, snapshot: Snapshot) -> Mapping[str, int]:
        """Resources that removing lower-priority pods could free for ``group`` (preemption
        says this, so that a group is not refused up front for room it could make)."""


@runtime_checkable
class BackfillPlugin(Plugin, Protocol):
    def backfill_room(self, state: CycleState, group: SchedulingGroup) -> Sequence[str]:
        """Pods nominated to nodes (room held for them, ``Handle.nominations``) whose room
        ``group`` may use in this cycle, because it is done with it before they need it
        (their uids); empty when none. The room is free for the group's placement alone, not
        for PostFilter. A plugin may note in ``state`` what it lent, for its Reserve."""


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> PostFilterResult:
        """The group did not fit whole: what now? Plugins run in order until one succeeds
        (preemption nominates nodes); others may give up what was placed (a Strict gang)."""


@runtime_checkable
class CarryOverPlugin(Plugin, Protocol):
    def carried(self) -> object:
        """What a what-if's fresh copy of this plugin takes over from the daemon's (what it
        learned of the queue, say); asked as the what-if forks, so it must be a copy."""

    def carry(self, carried: object) -> None:
        """Take over what the daemon's copy gave (``carried``, from ``carried()``)."""


@runtime_checkable
class HoldPreviewPlugin(Plugin, Protocol):
    def hold_preview(
        self, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> HoldPreview | None:
        """What ``group``, pending with nothing to evict for it, would hold once it has waited
        long enough, whatever it has waited now; nothing is recorded (the what-if asks). None:
        this plugin would hold nothing for it."""


@runtime_checkable
class ProvisioningPlugin(Plugin, Protocol):
    def provisioning(
        self, group: SchedulingGroup, needed: Sequence[PodInfo], snapshot: Snapshot
    ) -> ProvisioningVerdict | None:
        """The group cannot start: ``needed`` are the members it lacks for its minimum, which
        found no room (and none is being made for them). Can an autoscaler add it? None when
        it may (or nothing is known); a verdict when it cannot, so that the members do not
        ask it in vain."""


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(
        self, state: CycleState, group: SchedulingGroup, placements: Sequence[Placement]
    ) -> Status:
        """The placements are about to be held for the group; a failure undoes them all."""

    def unreserve(
        self, group_key: GroupKey, placements: Sequence[Placement], reason: UnreserveReason
    ) -> None:
        """Held placements were given up (rejected, timed out, bind failed); idempotent."""


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, now: float
    ) -> PermitResult:
        """Bind now, hold and wait (with a deadline), or give up the placements."""


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, placements: Sequence[Placement]) -> PreBindPlan:
        """What must be written before these placements (assumed in the cache, about to bind
        together) bind, or why they may not bind now. Asked just before the writes start."""

    def verify(self, placements: Sequence[Placement]) -> Mapping[str, str]:
        """The writes have landed, the bindings are next: pod uid -> why it may not bind
        after all (something it was given is held by someone else now); empty if all may."""


@runtime_checkable
class PodGonePlugin(Plugin, Protocol):
    def on_pod_gone(self, pod: PodInfo) -> None:
        """Any pod (ours or not) was deleted, or finished (Succeeded or Failed: its room is
        free, though its object stays): preemption learns that a victim is gone. May come
        twice for one pod (finished, then deleted)."""


@runtime_checkable
class JobViewPlugin(Plugin, Protocol):
    def job_of(self, pod: PodInfo) -> JobRef | None:
        """The job a running pod belongs to (its gang), None if this plugin does not know."""


@runtime_checkable
class PodGroupClaimsPlugin(Plugin, Protocol):
    def podgroup_claims(self, namespace: str, name: str) -> PodGroupClaims | None:
        """The claims of upstream PodGroup ``namespace/name`` (its entries, the claims made
        for it) as this plugin was told them, None when it has not seen it."""


@runtime_checkable
class GangFactsPlugin(Plugin, Protocol):
    def gang_facts(self, gang_key: str) -> Mapping[str, Any]:
        """What this plugin adds to a gang's row in the gangs view (``/gangs``, what-if): its
        own fields by name, empty when it knows nothing of the gang."""


#: Work a plugin does off the scheduling cycle (made again if it fails).
BackgroundWork = Callable[[], Coroutine[Any, Any, None]]


@runtime_checkable
class BackgroundPlugin(Plugin, Protocol):
    def background(self) -> Mapping[str, BackgroundWork]:
        """Work the plugin does off the scheduling cycle, by task name: the engine runs each
        as a named, guarded task for the daemon's life. Without it (a what-if's fork) the
        plugin does that work in the cycle."""

    def working(self) -> bool:
        """Work in flight whose outcome the next cycles will read (a test waits for it)."""


@runtime_checkable
class GaugeSourcePlugin(Plugin, Protocol):
    def gauges(self) -> Mapping[str, Mapping[str, float]]:
        """Values of the gauges the plugin declared, by metric name and label value
        (``{"koordgang_gangs": {"Pending": 3}}``), asked once a second."""


@runtime_checkable
class MetricsPlugin(Plugin, Protocol):
    def metrics(self) -> Sequence[MetricSpec]:
        """The metrics the plugin feeds; the engine registers them (the engine names
        none of a plugin's)."""


@runtime_checkable
class WatcherPlugin(Plugin, Protocol):
    def watches(self) -> Sequence[WatchedResource]:
        """The resources whose events this plugin wants through ``on_object`` (by their
        ``id``); the adapters hard-code none."""


@runtime_checkable
class PodEventPlugin(Plugin, Protocol):
    def on_pod(self, old: PodInfo | None, pod: PodInfo | None) -> None:
        """A pod of ours changed (``pod``) or went away (``pod`` None)."""


@runtime_checkable
class PodLeftPendingPlugin(Plugin, Protocol):
    def on_pod_left_pending(self, pod: PodInfo, gone: bool) -> None:
        """A pod of ours is bound, or went away (``gone``: ``pod`` is its last version): told
        on every event of such a pod, never of a pending one (most events are of those)."""


@runtime_checkable
class ObjectEventPlugin(Plugin, Protocol):
    def on_object(self, kind: str, event: str, obj: Mapping[str, Any]) -> bool:
        """A custom resource event (``PodGroup``...); True if pods parked as unschedulable
        might fit now."""
