"""DynamicResources: devices for pods' ResourceClaims, chosen inside every placement.

- **PreFilter** finds the pod's claims (waiting, told why, while one is missing), splits them
  into those allocated already (the pod must go where their allocation allows) and those to
  allocate, and checks what can be checked without a node: classes exist, selectors compile,
  the request uses no feature koordgang does not implement yet. It also notes the pod's
  extended resources that DeviceClasses provide (``extended.py``): on a node without them as
  allocatable they are one more claim to allocate, made at PreBind.
- **Filter** (per node, NODE scope: a node's devices and their use) runs the allocator on the
  node's free devices in the snapshot being placed on: a gang's members, preemption's dry runs
  and the what-if all see the devices earlier members took. When no node fits, the best node's
  shortfall is noted for the pod (which claim and request, how many wanted, how many free).
- **Assign** records the chosen devices in the snapshot's claim view (``ClaimView.allocate``);
  the cycle's commit makes them claims in flight in the DRA manager, held until the claim
  shows them written.
- **PreBind** describes the writes, in upstream's order: the finalizer
  ``resource.kubernetes.io/delete-protection``, then ``status.allocation`` (devices, config,
  node selector) with the pod in ``status.reservedFor`` (its upstream PodGroup, for a claim of
  the PodGroup's: ``DRAWorkloadResourceClaims``, one entry for the whole gang); the engine
  makes every write of a batch before any binding. A device that another claim holds by then
  (another scheduler allocated it meanwhile) refuses the batch before the writes and again
  before the bindings.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import structlog

from koordgang.framework.cycle_state import FILTER_ERROR, POD_NOTES, SHAPE_DETAIL, CycleState
from koordgang.framework.group import GroupPlan, SchedulingGroup
from koordgang.framework.handle import Handle
from koordgang.framework.interfaces import Scope
from koordgang.framework.prebind import ObjectWrite, PreBindPlan
from koordgang.framework.report import MetricSpec, WatchedResource
from koordgang.framework.results import PostFilterResult
from koordgang.framework.status import SKIP, SUCCESS, Code, Status
from koordgang.gangapis.kubernetes import KubernetesApi
from koordgang.model.dra import (
    MAX_RESERVED_FOR,
    ClaimAllocation,
    ClaimSpec,
    DeviceClassInfo,
    DeviceId,
    PodGroupClaims,
    ResourceClaimInfo,
    SubRequest,
    parse_podgroup_claims,
    pending_key,
)
from koordgang.model.pod import PodInfo
from koordgang.plugins.dynamicresources import allocations as allocations_of
from koordgang.plugins.dynamicresources.allocator import Allocation, Shortfall, allocate
from koordgang.plugins.dynamicresources.binding import ClaimWrites
from koordgang.plugins.dynamicresources.capacity import CapacityBudget
from koordgang.plugins.dynamicresources.claims import resolve
from koordgang.plugins.dynamicresources.counters import CounterBudget
from koordgang.plugins.dynamicresources.explain import (
    incomplete_pool,
    kept_away,
    note_capacity,
    note_counters,
    problems,
    untolerated_taint,
)
from koordgang.plugins.dynamicresources.extended import (
    ExtendedResources,
    delete_write,
    stale_claims,
)
from koordgang.plugins.dynamicresources.giving_back import gives_back
from koordgang.plugins.dynamicresources.messages import (
    describe,
    full_reason,
    missing,
    pinned_reason,
    refusal,
)
from koordgang.plugins.dynamicresources.metrics import (
    ADMIN,
    ALLOCATION_SECONDS,
    CLAIMS,
    DEVICES,
    INVALID_POOLS,
    METRICS,
    TAINTED,
)
from koordgang.plugins.dynamicresources.scoring import first_available_requests, preference
from koordgang.plugins.dynamicresources.selectors import (
    CelProblem,
    SelectorCache,
    class_source,
    request_source,
    serves,
)
from koordgang.plugins.dynamicresources.writes import give_back
from koordgang.state.dra import ClaimView, Device, DraManager, PodGroupClaimStore
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Placement, Snapshot

log = structlog.get_logger("koordgang.dra")

#: The namespace label without which the API server refuses claims with admin access.
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
#: Upstream PodGroups, whose claims their members share (the version the server serves).
PODGROUPS = KubernetesApi.resource


@dataclass(slots=True)
class _PodState:
    """What PreFilter found, for Filter and Assign of the same pod."""

    #: Claims allocated already (in this view): the pod must go where they allow.
    pinned: list[tuple[str, ClaimAllocation]] = field(default_factory=list)
    #: Claims to allocate, with their spec.
    to_allocate: list[tuple[str, ClaimSpec]] = field(default_factory=list)
    #: The claims of the pod it becomes a consumer of, by key (not its PodGroup's: the
    #: PodGroup is their consumer).
    keys: list[str] = field(default_factory=list)
    #: The best shortfall seen over the nodes (fewest devices missing), and its node, for
    #: the note.
    best: Shortfall | None = None
    best_node: str = ""
    #: Devices that would serve a request but are kept from it, by why (a taint not
    #: tolerated, a pool not all published), over the nodes looked at.
    kept: dict[str, set[DeviceId]] = field(default_factory=dict)
    #: What each node that passed would allocate, for the score (first-available requests).
    found: dict[str, Allocation] = field(default_factory=dict)
    notes: list[str] | None = None
    #: Extended resources of the pod that DeviceClasses provide -> the class.
    wanted: dict[str, str] = field(default_factory=dict)


class DynamicResources:
    name = "DynamicResources"
    scope = Scope.NODE
    #: kube-scheduler's default profile weighs its preference for earlier alternatives by 2.
    weight = 2
    rises_with_usage = False

    def __init__(self, handle: Handle, *, binding_timeout: float = 600.0) -> None:
        """``binding_timeout``: seconds PreBind waits for a device's binding conditions."""
        self._handle = handle
        self.selectors = SelectorCache()
        self.extended = ExtendedResources()
        self.podgroups = PodGroupClaimStore()
        self._binding = ClaimWrites(handle, self.extended, self.group_of, binding_timeout)

    def metrics(self) -> Sequence[MetricSpec]:
        return METRICS

    # -- PodGroups' claims -------------------------------------------------------------------

    def watches(self) -> Sequence[WatchedResource]:
        return () if PODGROUPS is None else (PODGROUPS,)

    def on_object(self, kind: str, event: str, obj: Mapping[str, Any]) -> bool:
        """An upstream PodGroup: which of its members' claims are its own, and its uid. True
        (pods parked may fit now) when that changed."""
        if PODGROUPS is None or kind != PODGROUPS.id:
            return False
        group = parse_podgroup_claims(obj)
        if event == "DELETED":
            return self.podgroups.remove(group.key)
        return self.podgroups.upsert(group)

    def group_of(self, pod: PodInfo) -> PodGroupClaims | None:
        """The claims of the pod's upstream PodGroup, None when it names none or it is not
        seen."""
        if not pod.scheduling_group:
            return None
        return self.podgroups.get(pod.namespace, pod.scheduling_group)

    def podgroup_claims(self, namespace: str, name: str) -> PodGroupClaims | None:
        return self.podgroups.get(namespace, name)

    @property
    def _dra(self) -> DraManager:
        return self._handle.dra

    def gauges(self) -> Mapping[str, Mapping[str, float]]:
        counts = self._dra.counts()
        return {
            DEVICES: {
                "free": counts["devices"] - counts["in_use"],
                "in_use": counts["in_use"],
                "double": counts["double"],
            },
            CLAIMS: {
                "allocated": counts["allocated"],
                "assumed": counts["in_flight"],
                "waiting": counts["claims"] - counts["allocated"] - counts["in_flight"],
            },
            INVALID_POOLS: {"": counts["invalid_pools"]},
            TAINTED: {"": counts["tainted"]},
            ADMIN: {"": counts["admin"]},
        }

    # -- PreFilter -----------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        if not pod.resource_claims and not pod.extended_containers:
            # Most pods: no claims, and no extended resource (whose names are qualified, as
            # the native ones are not) that a DeviceClass might provide.
            return SKIP
        dra = self._dra
        wanted = self.extended.wanted(pod, dra) if pod.extended_containers else {}
        if not pod.resource_claims and not wanted:
            return SKIP
        prepared = self._prepare(pod, dra.view(snapshot))
        if isinstance(prepared, Status):
            return prepared
        prepared.wanted = wanted
        problem = self._check_classes(wanted.values())
        if problem:
            return Status.unresolvable(self.name, problem)
        state.write(self.name, prepared)
        # Pinned claims by where their allocation may be used (not by name, nor by device):
        # a verdict for a claim allocated on one node says nothing once it is allocated on
        # another, and a node the claim was allocated on meanwhile did not get "emptier" as
        # the index understands it. Where the allocation reaches every node it filters
        # nothing: the members of every gang sharing a fabric channel share one heap.
        state.write(
            SHAPE_DETAIL,
            (
                dra.class_generation,
                tuple(spec for _, spec in prepared.to_allocate),
                tuple(sorted(wanted.items())),
                frozenset(
                    allocation.node_selector
                    for _, allocation in prepared.pinned
                    if allocation.node_selector is not None
                ),
            ),
        )
        return SUCCESS

    def _prepare(self, pod: PodInfo, view: ClaimView) -> _PodState | Status:
        resolved = resolve(pod, view.claim, self.group_of)
        if resolved.problem:
            return Status.unresolvable(self.name, resolved.problem)
        prepared = _PodState()
        for pod_claim in resolved.claims:
            key = pod_claim.key
            if pod_claim.group is None:
                prepared.keys.append(key)
            claim = pod_claim.claim
            if not pod_claim.reserved_for(pod) and view.consumers(key) >= MAX_RESERVED_FOR:
                return Status.unresolvable(self.name, full_reason(claim.name))
            allocation = view.allocation(key)
            if allocation is not None:
                prepared.pinned.append((key, allocation))
                continue
            problem = self._check_spec(pod_claim.claim, self._dra) or self._check_admin(
                pod_claim.claim
            )
            if problem:
                return Status.unresolvable(self.name, problem)
            prepared.to_allocate.append((key, pod_claim.claim.spec))
        standing = self.selectors.standing(_sources(prepared.to_allocate), self._dra.device)
        if standing is not None:
            # Met by an earlier attempt and still so: this one fails the same way at once.
            return Status.error(self.name, standing.describe())
        return prepared

    def _check_admin(self, claim: ResourceClaimInfo) -> str:
        """A claim asking for admin access outside a namespace labelled for it: the API server
        refuses its allocation (the label was removed since the claim was made), so none is
        written; the pod waits until the namespace is labelled again."""
        if not any(a.admin_access for r in claim.spec.requests for a in r.alternatives):
            return ""
        labels = self._handle.stores.namespaces.labels(claim.namespace) or {}
        if labels.get(ADMIN_ACCESS_LABEL) == "true":
            return ""
        return (
            f'resourceclaim "{claim.name}" asks for admin access, which the API server '
            f'allows only in a namespace labelled {ADMIN_ACCESS_LABEL}="true"; namespace '
            f"{claim.namespace} is not"
        )

    def _check_classes(self, classes: Iterable[str]) -> str:
        """What keeps the classes of the pod's extended resources from serving it ("" if
        nothing does): a selector that does not compile."""
        for name in sorted(set(classes)):
            device_class = self._dra.device_class(name)
            if device_class is None:
                continue
            for expression in device_class.selectors:
                compiled = self.selectors.compiled(expression, class_source(name))
                if isinstance(compiled, CelProblem):
                    return f"deviceclass {name}: {compiled.describe()}"
        return ""

    def _check_spec(self, claim: ResourceClaimInfo, dra: DraManager) -> str:
        """What keeps the claim from being allocated anywhere ("" if nothing does)."""
        name = claim.name
        if not claim.spec.requests:
            return f'resourceclaim "{name}" requests no devices'
        for request in claim.spec.requests:
            for alternative in request.alternatives:
                label = request.result_name(alternative)
                if alternative.unsupported:
                    return (
                        f'resourceclaim "{name}" request "{label}" needs '
                        f"{alternative.unsupported}, which koordgang does not allocate yet"
                    )
                device_class = dra.device_class(alternative.device_class)
                if device_class is None:
                    return (
                        f'resourceclaim "{name}" request "{label}": deviceclass '
                        f'"{alternative.device_class}" not found'
                    )
                for expression in device_class.selectors:
                    compiled = self.selectors.compiled(expression, class_source(device_class.name))
                    if isinstance(compiled, CelProblem):
                        return f'resourceclaim "{name}" request "{label}": {compiled.describe()}'
                source = request_source(claim.key, label)
                for expression in alternative.selectors:
                    compiled = self.selectors.compiled(expression, source)
                    if isinstance(compiled, CelProblem):
                        return f'resourceclaim "{name}": {compiled.describe()}'
        return ""

    # -- Filter --------------------------------------------------------------------------------

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        prepared = state.read(self.name, _PodState)
        if prepared is None:
            return SUCCESS
        info = node.info
        labels = info.labels if info is not None else {}
        for key, allocation in prepared.pinned:
            if not allocation.allows(node.name, labels):
                return Status.unresolvable(self.name, pinned_reason(key.partition("/")[2]))
        claims = self._claims_on(prepared, pod, node)
        if not claims:
            return SUCCESS
        errors: list[CelProblem] = []
        result = self._allocate(prepared, claims, node, self._dra.view(snapshot), errors)
        if errors:
            # A selector failed on a device: the attempt fails naming it, as Kubernetes does
            # (the class or the claim asks wrongly; no other node makes that right).
            state.write(FILTER_ERROR, Status.error(self.name, errors[0].describe()))
            return Status.unresolvable(self.name, "node(s) had devices a selector failed on")
        if isinstance(result, Allocation):
            prepared.found[node.name] = result
            return SUCCESS
        self._note(state, prepared, claims, result, node.name)
        return refusal(result)

    def _claims_on(
        self, prepared: _PodState, pod: PodInfo, node: NodeState
    ) -> list[tuple[str, ClaimSpec]]:
        """The claims to allocate for the pod on ``node``: its own, and the special claim for
        the extended resources the node serves through DRA."""
        if not prepared.wanted:
            return prepared.to_allocate
        special = self.extended.on_node(pod, prepared.wanted, node.info)
        if special is None:
            return prepared.to_allocate
        return [*prepared.to_allocate, (pending_key(pod.namespace, pod.uid), special.spec)]

    # -- Score -----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        """Only pods with a ``firstAvailable`` request to allocate have nodes to prefer."""
        prepared = state.read(self.name, _PodState)
        if prepared is None or not first_available_requests(prepared.to_allocate):
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        prepared = state.read(self.name, _PodState)
        if prepared is None:
            return 0
        found = prepared.found.get(node.name)
        if found is None:
            return 0
        return preference(found, first_available_requests(prepared.to_allocate))

    def _allocate(
        self,
        prepared: _PodState,
        claims: Sequence[tuple[str, ClaimSpec]],
        node: NodeState,
        view: ClaimView,
        errors: list[CelProblem] | None = None,
    ) -> Allocation | Shortfall:
        name = node.name
        devices = self._dra.devices_on(name)
        labels = node.info.labels if node.info is not None else {}
        network = tuple(d for d in self._dra.network_devices() if d.available(name, labels))
        if network:
            devices = devices + network
        matches = self._matcher(prepared, claims, errors)

        def free(device_id: DeviceId) -> bool:
            return view.device_free(name, device_id)

        def consumed(device: Device) -> Mapping[str, Fraction] | None:
            return view.consumed(device.id)

        capacity = None
        if any(d.spec.multiple for d in devices):
            capacity = CapacityBudget(consumed)
        budget = None
        if any(d.spec.consumes for d in devices):
            # A shared device with a share has taken its counters (once, for all its shares).
            budget = CounterBudget(
                devices, lambda d: not free(d.id) or (d.spec.multiple and consumed(d) is not None)
            )
        result = allocate(claims, devices, free, matches, counters=budget, capacity=capacity)
        if isinstance(result, Shortfall):
            if budget is not None:
                note_counters(prepared.kept, claims, result, devices, matches, budget)
            note_capacity(prepared.kept, claims, result, devices, matches, capacity)
        return result

    def _matcher(
        self,
        prepared: _PodState,
        claims: Sequence[tuple[str, ClaimSpec]],
        errors: list[CelProblem] | None,
    ) -> Callable[[Device, SubRequest], bool]:
        """Does a device serve a request alternative of the pod's claims: its class and
        selectors, a pool all published, no taint the request does not keep tolerating (what
        keeps a device away is noted for the pod)."""
        dra = self._dra
        classes: dict[str, DeviceClassInfo | None] = {}
        has_rules = dra.has_taint_rules
        owners = {id(spec): key for key, spec in claims}
        request_of: dict[int, str] = {}
        for key, spec in claims:
            for request in spec.requests:
                for alternative in request.alternatives:
                    request_of[id(alternative)] = request.result_name(alternative)
                    owners[id(alternative)] = key

        def matches(device: Device, alternative: SubRequest) -> bool:
            device_class = classes.get(alternative.device_class)
            if device_class is None:
                device_class = classes[alternative.device_class] = dra.device_class(
                    alternative.device_class
                )
            if device_class is None or not serves(
                self.selectors,
                device,
                device_class,
                alternative,
                owners[id(alternative)],
                request_of[id(alternative)],
                errors,
            ):
                return False
            # A pool not all published serves nothing (its devices may be dropped or renamed
            # when it is); a taint the request does not keep tolerating keeps the device away.
            why = ""
            if not device.pool.complete:
                why = incomplete_pool(device.pool)
            elif device.spec.taints or has_rules:
                why = untolerated_taint(dra.taints(device), alternative.tolerations)
            if why:
                prepared.kept.setdefault(why, set()).add(device.id)
                return False
            return True

        return matches

    def _note(
        self,
        state: CycleState,
        prepared: _PodState,
        claims: Sequence[tuple[str, ClaimSpec]],
        shortfall: Shortfall,
        node: str,
    ) -> None:
        """Keeps the best node's shortfall (fewest devices missing) as the pod's note, with
        what kept matching devices away over the nodes looked at."""
        best = prepared.best
        if best is None or missing(shortfall) < missing(best):
            prepared.best, prepared.best_node = shortfall, node
        else:
            shortfall, node = best, prepared.best_node
        text = describe(shortfall, node, problems(self.selectors, claims), prepared.wanted)
        said = kept_away(prepared.kept)
        if said:
            text = f"{text}; {said}"
        if prepared.notes is None:
            notes = state.read(POD_NOTES, list)
            if notes is None:
                notes = []
                state.write(POD_NOTES, notes)
            prepared.notes = notes
            notes.append(text)
        else:
            index = len(prepared.notes) - 1
            prepared.notes[index] = text

    # -- Assign ----------------------------------------------------------------------------------

    def assign(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        if not pod.resource_claims and not pod.extended_containers:
            return SKIP
        dra = self._dra
        view = dra.view(snapshot)
        prepared = state.read(self.name, _PodState)
        if prepared is None:
            found = self._prepare(pod, view)
            if isinstance(found, Status):
                return found
            prepared = found
            prepared.wanted = self.extended.wanted(pod, dra) if pod.extended_containers else {}
        claims = self._claims_on(prepared, pod, node)
        if claims:
            started = _time.perf_counter()
            result = self._allocate(prepared, claims, node, view)
            if isinstance(result, Shortfall):
                return refusal(result)
            allocations = {
                key: allocations_of.build(view.claim(key), chosen, node.name, dra)
                for key, chosen in result.claims.items()
            }
            view.allocate(pod.uid, allocations)
            self._handle.record(ALLOCATION_SECONDS, _time.perf_counter() - started)
        view.consume(pod.uid, prepared.keys)
        return SUCCESS

    # -- PostFilter ----------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> PostFilterResult:
        """Members that found no node while a claim of theirs is allocated somewhere (it
        pins them there): a claim reserved for nobody else (or for their PodGroup alone, none
        of whose members is placed) is given back (its allocation and consumers cleared), so
        that the next attempt may allocate it anywhere; as kube-scheduler does. A node that is
        gone, or full, would hold them forever."""
        dra = self._dra
        cache = self._handle.cache
        writes: list[ObjectWrite] = []
        given: set[str] = set()
        failed = [result for part in plan.parts for result in part.failed]
        for result in failed:
            pod = result.pod
            if pod.extended_containers:
                # Special claims of an earlier attempt hold devices this one may need.
                writes.extend(delete_write(c, pod) for c in stale_claims(pod, dra))
            if not pod.resource_claims:
                continue
            for pod_claim in resolve(pod, dra.claim, self.group_of).claims:
                claim = pod_claim.claim
                if claim.key in given or not gives_back(pod, pod_claim, result.message, dra, cache):
                    continue
                log.info(
                    "giving back a claim allocated where its pod no longer fits",
                    claim=claim.key,
                    pod=pod.key,
                )
                given.add(claim.key)
                writes.append(give_back(claim, pod))
        if not writes:
            return PostFilterResult(SKIP)
        return PostFilterResult(Status(Code.UNSCHEDULABLE), writes=tuple(writes))

    # -- PreBind ---------------------------------------------------------------------------------

    def pre_bind(self, placements: Sequence[Placement]) -> PreBindPlan:
        return self._binding.pre_bind(placements)

    def verify(self, placements: Sequence[Placement]) -> Mapping[str, str]:
        return self._binding.verify(placements)


def _sources(claims: Sequence[tuple[str, ClaimSpec]]) -> list[str]:
    """Where the selectors these claims are served by come from: their classes, their
    requests."""
    sources: list[str] = []
    for key, spec in claims:
        for request in spec.requests:
            for alternative in request.alternatives:
                sources.append(class_source(alternative.device_class))
                sources.append(request_source(key, request.result_name(alternative)))
    return sources
