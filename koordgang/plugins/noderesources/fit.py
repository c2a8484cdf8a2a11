from __future__ import annotations

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.handle import Handle
from koordgang.framework.interfaces import Scope
from koordgang.framework.status import SUCCESS, Status
from koordgang.model.dra import may_be_extended
from koordgang.model.pod import PodInfo
from koordgang.model.resources import PODS
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot


def insufficient_reason(name: str) -> str:
    return "Too many pods" if name == PODS else f"Insufficient {name}"


def held_reason(job: str) -> str:
    return f"node(s) held for {job}"


class Fit:
    """The node must have room for the pod's requests, counting bound and assumed pods.

    Room held for another job (a nomination of preemption or of the starvation guard counts on
    its node as an assumed pod) is named as such when it is what keeps the pod off: ``node(s)
    held for default/big`` says more than ``Insufficient cpu`` on a node that looks half
    empty."""

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
        """``short`` without the extended resources the node serves through DRA: those it
        lacks as allocatable and a DeviceClass provides (DynamicResources finds the devices)."""
        assert self._handle is not None
        info = node.info
        if info is None or not any(may_be_extended(n) for n in short):
            return short
        dra = self._handle.dra
        return tuple(
            n
            for n in short
            if not (
                may_be_extended(n)
                and info.allocatable.get(n) == 0
                and dra.extended_class(n) is not None
            )
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
