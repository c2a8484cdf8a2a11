"""Places all pending members of a GangGroup together, over one snapshot.

Deciding for the whole group at once, instead of pod by pod with a permit wait, is what keeps
two interleaved Strict gangs from each grabbing half of what both need: whichever group is
planned first either gets everything it needs or leaves the snapshot untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.runner import Framework
from koordgang.model.gang import GangMode
from koordgang.model.pod import PodInfo
from koordgang.state.gangs import Gang
from koordgang.state.snapshot import Snapshot


@dataclass(slots=True)
class GangPlan:
    gang: Gang
    minimum: int
    #: Members that already count (reservations, and bound members where the policy says so).
    counted_before: int
    placed: list[tuple[PodInfo, str]] = field(default_factory=list)
    failed: list[PodInfo] = field(default_factory=list)
    #: Why the first member that found no node found none (kube-scheduler wording).
    first_failure: str = ""

    @property
    def counted(self) -> int:
        return self.counted_before + len(self.placed)

    @property
    def short(self) -> int:
        return max(0, self.minimum - self.counted)

    def progress(self, created: int) -> str:
        return f"{self.counted}/{created} members placed, min {self.minimum}"


@dataclass(slots=True)
class GroupPlan:
    gangs: list[GangPlan]
    strict: bool

    @property
    def satisfied(self) -> bool:
        return all(plan.short == 0 for plan in self.gangs)

    def placements(self) -> list[tuple[PodInfo, str]]:
        return [p for plan in self.gangs for p in plan.placed]


def member_order(pod: PodInfo, index_of: Callable[[PodInfo], int | None]) -> tuple[int, int, str]:
    """Members are placed in rank order (network-topology-index), then by name."""
    index = index_of(pod)
    return (0 if index is not None else 1, index or 0, pod.name)


def plan_group(
    framework: Framework,
    snapshot: Snapshot,
    gangs: Sequence[tuple[Gang, Sequence[PodInfo]]],
    *,
    index_of: Callable[[PodInfo], int | None] = lambda _: None,
) -> GroupPlan:
    """Tries to place ``pending`` members of each gang; places as many as fit.

    In Strict mode the attempt stops as soon as some gang can no longer reach its minimum,
    since nothing of it will be kept. Members whose scheduling shape already failed in this
    plan are not tried again: the snapshot only gets fuller.
    """
    strict = any(g.spec.mode is GangMode.STRICT for g, _ in gangs)
    plans = [GangPlan(g, g.spec.min_available or 0, g.counted()) for g, _ in gangs]
    for plan, (_, pending) in zip(plans, gangs, strict=True):
        failed_shapes: dict[Hashable, str] = {}
        ordered = sorted(pending, key=lambda p: member_order(p, index_of))
        for position, pod in enumerate(ordered):
            known = failed_shapes.get(pod.shape)
            if known is not None:
                plan.failed.append(pod)
            else:
                result = framework.schedule_pod(CycleState(), pod, snapshot)
                if result.node is not None:
                    snapshot.place(pod, result.node)
                    plan.placed.append((pod, result.node.name))
                    continue
                message = result.status.message() or result.diagnosis.message()
                failed_shapes[pod.shape] = message
                plan.failed.append(pod)
                if not plan.first_failure:
                    plan.first_failure = message
            remaining = len(ordered) - position - 1
            if strict and plan.counted + remaining < plan.minimum:
                plan.failed.extend(ordered[position + 1 :])
                return GroupPlan(plans, strict)
    return GroupPlan(plans, strict)
