"""The engine fake driven one scheduling cycle at a time, from a plain (synchronous) test.

``CycleHarness`` is a ``Harness`` whose pods, nodes and PodGroups come in through the engine's
intake; ``cycle`` runs the cycle of a named pod's group as the scheduling loop does (the group
is the pod with every pending partner the plugins name, queued or not) and keeps what the
outcome holds or releases in the engine's held room. Nothing is bound or written: the
outcome's ``bind`` says what would be, and the cache keeps those pods assumed. What the
plugins ask of the engine (reports, activations, moves) is in ``asked``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from koordgang.framework.cycle import CycleOutcome, run_cycle
from koordgang.framework.framework import Framework
from koordgang.framework.group import SchedulingGroup
from koordgang.framework.report import Report
from koordgang.framework.results import UnreserveReason
from koordgang.model.group_key import GroupKey
from koordgang.model.node import NodeInfo
from koordgang.model.pod import PodInfo
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.snapshot import Placement, Snapshot
from koordgang.state.waiting import WaitingPods
from koordgang.testing.api import FakeApi
from koordgang.testing.builders.gangs import T0
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness, PluginRequests

PODGROUPS = "podgroups.scheduling.sigs.k8s.io"

P = TypeVar("P")


class CycleHarness:
    """One engine over the fake API and clock (wall clock ``T0`` at monotonic 0), with gang
    rules alone by default (``Settings(preemption=False)``: what preemption adds is tested
    with it)."""

    def __init__(
        self,
        pods: Iterable[PodInfo] = (),
        nodes: Iterable[NodeInfo] = (),
        podgroups: Iterable[Mapping[str, Any]] = (),
        *,
        settings: Settings | None = None,
        **listings: Iterable[Any],
    ) -> None:
        """``listings`` are the other kinds the informers list first (``Harness.list``'s
        keywords: ``resource_slices``, ``device_classes``, ``resource_claims``...)."""
        self.clock = FakeClock(wall0=T0)
        self.harness = Harness(FakeApi(), self.clock, settings or Settings(preemption=False))
        self.harness.list(nodes=nodes, **listings)
        for obj in podgroups:
            self.harness.intake.on_object(PODGROUPS, "ADDED", obj)
        for info in pods:
            self.add(info)

    # -- parts ---------------------------------------------------------------------------------

    @property
    def framework(self) -> Framework:
        return self.harness.framework

    @property
    def cache(self) -> SchedulerCache:
        return self.harness.cache

    @property
    def gangs(self) -> GangRegistry:
        return self.harness.gangs

    @property
    def waiting(self) -> WaitingPods:
        return self.harness.waiting

    @property
    def asked(self) -> PluginRequests:
        return self.harness.asked

    def plugin(self, kind: type[P]) -> P:
        """The profile's one plugin of this type."""
        [found] = [p for p in self.framework.plugins if isinstance(p, kind)]
        return found

    def pod(self, name: str) -> PodInfo:
        found = [p for p in self.cache.pods() if p.name == name]
        assert len(found) == 1, f"no pod {name}"
        return found[0]

    # -- events --------------------------------------------------------------------------------

    def add(self, pod: PodInfo) -> None:
        self.harness.intake.on_pod_upsert(pod)

    def add_node(self, info: NodeInfo) -> None:
        self.harness.intake.on_node_upsert(info)

    def delete(self, name: str) -> None:
        self.harness.intake.on_pod_delete(self.pod(name).uid)

    # -- cycles --------------------------------------------------------------------------------

    def group(self, name: str) -> SchedulingGroup:
        pod = self.pod(name)
        others = self.framework.group_members(pod)
        return self.framework.build_group(pod, None if others is None else list(others))

    def cycle(self, name: str) -> CycleOutcome:
        group = self.group(name)
        outcome = run_cycle(self.framework, group, Snapshot(self.cache), self.clock.now)
        self._apply(outcome)
        return outcome

    def _apply(self, outcome: CycleOutcome) -> None:
        held = self.harness.scheduler.held
        group = outcome.group
        for uid in outcome.allow_waiting:
            held.to_bind(uid)
        part_of = {pod.uid: part.key for part in group.parts for pod in part.pending}
        for placement in outcome.hold:
            assert outcome.deadline is not None
            held.hold(
                placement.pod,
                placement.node_name,
                group=group.key,
                part=part_of[placement.pod.uid],
                since=self.clock.now,
                deadline=outcome.deadline,
            )
        if outcome.release_held:
            self.release(group.key, UnreserveReason.REJECTED)

    def release(self, group: GroupKey, reason: UnreserveReason) -> list[Placement]:
        """Gives up what ``group`` holds, as the engine does (Unreserve, then the pods are
        planned again)."""
        released = self.harness.scheduler.held.release_group(group, reason)
        return [Placement(w.pod, w.node) for w in released]

    def expire(self) -> list[GroupKey]:
        """Groups whose deadline came give up what they hold, as the engine's loop does."""
        groups = self.waiting.expired(self.clock.now)
        for group in groups:
            self.release(group, UnreserveReason.TIMEOUT)
        return groups

    # -- what happened -------------------------------------------------------------------------

    def names(self, uids: Iterable[str]) -> list[str]:
        return [self.name_of(uid) for uid in uids]

    def name_of(self, uid: str) -> str:
        pod = self.cache.pod(uid)
        assert pod is not None
        return pod.name

    def assumed(self) -> list[str]:
        return sorted(p.name for p in self.cache.pods() if self.cache.is_assumed(p.uid))

    def held(self) -> list[str]:
        return sorted(w.pod.name for w in self.waiting)

    def reports(self, reason: str | None = None) -> list[Report]:
        return [r for r in self.asked.reports if reason is None or r.reason == reason]
