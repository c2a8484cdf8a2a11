from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.handle import Handle
from koordgang.framework.interfaces import Scope
from koordgang.framework.prebind import NO_WRITES, PreBindPlan
from koordgang.framework.status import SUCCESS, Status
from koordgang.model.dra import may_be_extended
from koordgang.model.pod import PodInfo
from koordgang.model.resources import PODS
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Placement, Snapshot


def insufficient_reason(name: str) -> str:
    return "Too many pods" if name == PODS else f"Insufficient {name}"


def held_reason(job: str) -> str:
    return f"node(s) held for {job}"


class Fit:
    """The node must have room for the pod's requests, counting bound and assumed pods.

    Room held for another job (a nomination of preemption or of the starvation guard counts on
    its node as an assumed pod) is named as such when it is what keeps the pod off: ``node(s)
    held for default/big`` says more than ``Insufficient cpu`` on a node that looks half
    empty.

    Just before a batch binds (a gang), its nodes are checked again on the latest cache
    (``verify``): a pod of another scheduler may have been bound there since the cycle
    decided. A node that no longer holds them all refuses the whole batch. Room held there
    for pods of ours not bound yet does not count in that check: what was placed beside it
    was placed counting it, unless the room was lent to the batch (backfill)."""

    name = "NodeResourcesFit"
    scope = Scope.NODE

    def __init__(self, handle: Handle | None = None) -> None:
        #: None where the plugin runs without a scheduler (a runner of filters alone).
        self._handle = handle

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        short = snapshot.insufficient(node, pod.requests)
        if short and self._handle is not None:
            short = self._not_through_dra(node, short)
        if not short:
            return SUCCESS
        holder = self._held_for(pod, node, snapshot, short)
        if holder:
            return Status.unschedulable(self.name, held_reason(holder))
        return Status.unschedulable(self.name, *(insufficient_reason(n) for n in short))

    def _not_through_dra(self, node: NodeState, short: tuple[str, ...]) -> tuple[str, ...]:
        """``short`` without the extended resources the node serves through DRA."""
        info = node.info
        if info is None or not any(may_be_extended(n) for n in short):
            return short
        return tuple(n for n in short if not self._through_dra(info.allocatable.get(n), n))

    def _through_dra(self, allocatable: int, name: str) -> bool:
        """Whether a node with ``allocatable`` of ``name`` serves it through DRA: it lacks it
        as allocatable and a DeviceClass provides it (DynamicResources finds the devices)."""
        return (
            self._handle is not None
            and allocatable == 0
            and may_be_extended(name)
            and self._handle.dra.extended_class(name) is not None
        )

    def _held_for(
        self, pod: PodInfo, node: NodeState, snapshot: Snapshot, short: tuple[str, ...]
    ) -> str:
        """The job whose held room, were it free, would let ``pod`` fit ("" if none): only
        room held for pods of at least ``pod``'s priority keeps it off (preemption takes room
        held for lower ones)."""
        if self._handle is None:
            return ""
        held: dict[str, int] = {}
        holder = ""
        for nomination in self._handle.nominations.on_node(node.name):
            other = nomination.pod
            if other.uid == pod.uid or other.priority < pod.priority:
                continue
            if snapshot.node_of(other.uid) is None:
                continue  # lent to the pod's group: free in this view already
            holder = holder or str(nomination.group) or other.key
            for name, amount in other.requests.items():
                held[name] = held.get(name, 0) + amount
        if not holder:
            return ""
        for name in short:
            if name == PODS:
                return ""
            if snapshot.free(node, name) + held.get(name, 0) < pod.requests.get(name):
                return ""
        return holder

    def pre_bind(self, placements: Sequence[Placement]) -> PreBindPlan:
        return NO_WRITES

    def verify(self, placements: Sequence[Placement]) -> Mapping[str, str]:
        """Every node of the batch still holds what counts there, its pods included (they
        are assumed in the cache); else each pod of the batch is told which node is full."""
        if self._handle is None or not placements:
            return {}
        view = Snapshot(self._handle.cache)
        view.pass_over(min(p.pod.priority for p in placements))
        wanted: dict[str, set[str]] = {}
        for placement in placements:
            wanted.setdefault(placement.node_name, set()).update(placement.pod.requests.names())
        # Room held for pods of ours not bound yet is a promise, not what runs: a batch let
        # into it (backfill, ending before they need it) is checked against what runs there.
        held = self._handle.nominations.on_nodes(set(wanted))
        view.pass_over_held(Placement(n.pod, n.node) for n in held)
        full: list[str] = []
        for name in sorted(wanted):
            short = _overcommitted(view, name, wanted[name], self._through_dra)
            if short:
                full.append(f"{name} ({', '.join(short)})")
        if not full:
            return {}
        reason = (
            f"node {', '.join(full)} no longer has room for the gang (a pod of another "
            "scheduler was bound there since it was placed); the gang is placed again"
        )
        return {p.pod.uid: reason for p in placements}


def _overcommitted(
    view: Snapshot, name: str, resources: set[str], through_dra: Callable[[int, str], bool]
) -> list[str]:
    """What node ``name`` holds more of than it has, among ``resources`` and its pod count
    (an extended resource it serves through DRA is the devices' business, not its own)."""
    state = view.node(name)
    if state is None or state.info is None:
        return ["the node is gone"]
    allocatable = state.info.allocatable
    short = [
        insufficient_reason(r)
        for r in sorted(resources)
        if r != PODS
        and view.used(state, r) > allocatable.get(r)
        and not through_dra(allocatable.get(r), r)
    ]
    if view.pod_count(state) > allocatable.get(PODS):
        short.append(insufficient_reason(PODS))
    return short
