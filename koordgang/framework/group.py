"""A group: the pods one scheduling cycle decides about together, and what the cycle planned.

A plain pod is a group of one. A gang group is made of *parts* (its gangs), each with a minimum
of members that must count before any of them may bind; the grouping plugin builds it. The
framework knows nothing of gangs beyond this shape: parts, minimums, and whether a part gives up
as soon as it cannot reach its minimum (Strict).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from koordgang.framework.diagnosis import Diagnosis
from koordgang.framework.status import SUCCESS, Status
from koordgang.model.gather import TopologySpec
from koordgang.model.group_key import ALONE, GroupKey
from koordgang.model.pod import PodInfo
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Placement, Snapshot


@dataclass(frozen=True, slots=True)
class GroupTopology:
    """What the grouping plugin tells placement plugins of where the group wants to be."""

    #: The gangs' network-topology spec, parsed once when the gang was resolved.
    spec: TopologySpec
    #: A pod that goes alone although its gang exists (the gang was satisfied once): the nodes
    #: its gang's running members are on. A placement plugin may prefer their neighbourhood; it
    #: must not require it.
    near: tuple[str, ...] = ()


@dataclass(slots=True)
class GroupPart:
    key: str
    #: Members to place in this cycle, in the order they should be placed.
    pending: list[PodInfo]
    #: Members that must count (placed now, held, or bound) for the part to be satisfied.
    minimum: int = 0
    #: Members that already count toward the minimum before this cycle.
    counted: int = 0
    #: Give up the whole group in this cycle as soon as this part cannot reach its minimum.
    strict: bool = False
    #: Minimums per task within the part (Volcano's minTaskMember), by task name; the part
    #: is satisfied only when every task reaches its own as well.
    task_minimums: dict[str, int] = field(default_factory=dict)
    #: The task of each pending member, by pod uid (members without one are in task "").
    task_of: dict[str, str] = field(default_factory=dict)
    #: Members of each task that count before this cycle.
    task_counted: dict[str, int] = field(default_factory=dict)
    #: How long the part may hold room while short (its gang's waiting time; None: the
    #: daemon's default).
    waiting_time: float | None = None
    #: Node labels whose one value must hold every member of the part (upstream's
    #: ``schedulingConstraints.topology[].key``).
    keys: tuple[str, ...] = ()
    #: Values some of those labels (or those of a group the part belongs to) must have: where
    #: the rest of its group already runs.
    pinned: dict[str, str] = field(default_factory=dict)

    def needed(self) -> list[PodInfo]:
        """The pending members the part cannot do without, in placement order: of each task
        with a minimum, as many as it still needs; then others, up to the part's minimum."""
        need = max(0, self.minimum - self.counted)
        if not self.task_minimums:
            return self.pending[:need]
        chosen: list[PodInfo] = []
        taken: set[str] = set()
        for task, minimum in self.task_minimums.items():
            want = max(0, minimum - self.task_counted.get(task, 0))
            for pod in self.pending:
                if want == 0:
                    break
                if self.task_of.get(pod.uid, "") == task:
                    chosen.append(pod)
                    taken.add(pod.uid)
                    want -= 1
        rest = [p for p in self.pending if p.uid not in taken]
        return chosen + rest[: max(0, need - len(chosen))]


@dataclass(frozen=True, slots=True)
class GroupNeed:
    """Gangs of gangs: at least ``minimum`` of ``children`` must be satisfied for the group to
    be, where a child is a part (by key) or a need of its own. A group without a need wants
    every part satisfied; with one, parts beyond what it needs are placed whole or not at all
    (the cycle takes back what it placed of a part left short)."""

    #: What users call it (``ns/cpg``), for explanations.
    name: str
    minimum: int
    children: tuple[GroupNeed | str, ...]
    #: Node labels whose one value must hold every member of this level.
    keys: tuple[str, ...] = ()
    #: Values of those labels fixed by children that already run (label, value).
    pinned: tuple[tuple[str, str], ...] = ()

    def has_keys(self) -> bool:
        return bool(self.keys) or any(
            isinstance(child, GroupNeed) and child.has_keys() for child in self.children
        )

    def met(self, satisfied: Callable[[str], bool]) -> bool:
        done = sum(
            1
            for child in self.children
            if (child.met(satisfied) if isinstance(child, GroupNeed) else satisfied(child))
        )
        return done >= self.minimum

    def kept(self, satisfied: Callable[[str], bool]) -> set[str]:
        """The satisfied parts that count: each under a path of met needs. A part whole under
        a nested need that is not met is not kept (that need would be bound below its own
        minimum); nothing is kept under a need that is not met."""
        if not self.met(satisfied):
            return set()
        keys: set[str] = set()
        for child in self.children:
            if isinstance(child, GroupNeed):
                keys |= child.kept(satisfied)
            elif satisfied(child):
                keys.add(child)
        return keys

    def chosen(self, short: Callable[[str], int]) -> set[str]:
        """The parts to make room for: at each level, the ``minimum`` children that are
        missing the fewest members (satisfied ones first)."""
        ranked = sorted(
            self.children,
            key=lambda child: (self._missing(child, short), _child_name(child)),
        )
        keys: set[str] = set()
        for child in ranked[: self.minimum]:
            if isinstance(child, GroupNeed):
                keys |= child.chosen(short)
            else:
                keys.add(child)
        return keys

    def _missing(self, child: GroupNeed | str, short: Callable[[str], int]) -> int:
        if isinstance(child, str):
            return short(child)
        return sum(child._missing(k, short) for k in child.chosen(short))

    def describe(self, satisfied: Callable[[str], bool]) -> str:
        """``ns/cpg: 1 of min 2 children whole``."""
        done = sum(
            1
            for child in self.children
            if (child.met(satisfied) if isinstance(child, GroupNeed) else satisfied(child))
        )
        return f"{self.name}: {done} of min {self.minimum} children whole"


def _child_name(child: GroupNeed | str) -> str:
    return child.name if isinstance(child, GroupNeed) else child


@dataclass(slots=True)
class SchedulingGroup:
    #: Identifies the group across cycles (held placements are filed under it); empty for a
    #: pod that goes alone.
    key: GroupKey
    parts: list[GroupPart]
    #: The pod popped from the queue that started the cycle.
    trigger: PodInfo
    #: Members nominated to a node by an earlier preemption (pod uid -> node): tried there
    #: first, where the room was made for them.
    nominated: dict[str, str] = field(default_factory=dict)
    #: Where the group wants to be, as its grouping plugin says (None: anywhere).
    topology: GroupTopology | None = None
    #: Gangs of gangs: which parts must be satisfied (None: all of them).
    need: GroupNeed | None = None
    #: Keys of the need's children satisfied before this cycle that are not parts of it.
    settled: frozenset[str] = frozenset()
    #: The group's own priority, where its gang API gives one (upstream's PodGroup
    #: ``spec.priority``): it orders the group as a preemptor instead of its pods'.
    priority: int | None = None
    #: Its gang API says it preempts nobody (upstream's ``spec.preemptionPolicy: Never``).
    preempt_never: bool = False

    def lowest_priority(self) -> int:
        """The priority the group preempts with: its own, else its lowest member's."""
        if self.priority is not None:
            return self.priority
        return min((p.priority for p in self.members()), default=0)

    @staticmethod
    def single(pod: PodInfo) -> SchedulingGroup:
        return SchedulingGroup(ALONE, [GroupPart(pod.key, [pod], minimum=1)], pod)

    def members(self) -> Iterator[PodInfo]:
        for part in self.parts:
            yield from part.pending

    @property
    def size(self) -> int:
        return sum(len(part.pending) for part in self.parts)

    def job_name(self) -> str:
        """How users name the job: the trigger's gang (``default/hello-job``), or the pod."""
        for part in self.parts:
            if "/" in part.key and any(p.uid == self.trigger.uid for p in part.pending):
                return part.key
        return self.trigger.key


@dataclass(slots=True)
class PodResult:
    """Where one pod went in a placement, or why it went nowhere."""

    pod: PodInfo
    node: str | None
    status: Status = SUCCESS
    diagnosis: Diagnosis | None = None
    #: True when the outcome can only get worse as pods are added (no plugin that looks at
    #: other nodes took part): another pod of the same shape need not be tried again.
    monotone: bool = True

    @property
    def message(self) -> str:
        if self.status.reasons:
            return self.status.message()
        return self.diagnosis.message() if self.diagnosis is not None else ""


class Placer(Protocol):
    """Places one pod on the best node of a snapshot (what a placement plugin builds on)."""

    def place(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        *,
        within: frozenset[str] | None = None,
        diagnose: bool = True,
    ) -> PodResult:
        """Runs PreFilter, Filter and Score for ``pod`` over the nodes of ``snapshot`` (or
        those named in ``within``) and, if one fits, adds the pod there."""

    def find(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        *,
        within: frozenset[str] | None = None,
        diagnose: bool = True,
    ) -> PodResult:
        """Like ``place``, without adding the pod."""

    def check(self, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> Status:
        """Runs PreFilter and every Filter for ``pod`` on one node; adds nothing."""

    def put(self, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> Status:
        """Adds ``pod`` to ``node`` of ``snapshot`` (where it passed ``check``) with what it
        takes there besides its requests (devices); a failure adds nothing. What-ifs that
        place pods themselves use it instead of ``snapshot.add``."""


@dataclass(slots=True)
class PartPlan:
    part: GroupPart
    placed: list[Placement] = field(default_factory=list)
    failed: list[PodResult] = field(default_factory=list)
    #: Members not tried (a Strict attempt stopped early).
    skipped: list[PodInfo] = field(default_factory=list)

    @property
    def counted(self) -> int:
        return self.part.counted + len(self.placed)

    @property
    def short(self) -> int:
        """Members still missing: for the minimum, or for the task minimums if more."""
        short = max(0, self.part.minimum - self.counted)
        if self.part.task_minimums:
            placed: dict[str, int] = {}
            for placement in self.placed:
                task = self.part.task_of.get(placement.pod.uid, "")
                placed[task] = placed.get(task, 0) + 1
            tasks_short = sum(
                max(0, need - self.part.task_counted.get(task, 0) - placed.get(task, 0))
                for task, need in self.part.task_minimums.items()
            )
            short = max(short, tasks_short)
        return short

    @property
    def first_failure(self) -> str:
        return self.failed[0].message if self.failed else ""


@dataclass(slots=True)
class GroupPlan:
    """What a placement did: a snapshot holding the placements, and per part what fit."""

    snapshot: Snapshot
    parts: list[PartPlan]
    #: The group's need and settled keys (set by the framework from the group).
    need: GroupNeed | None = None
    settled: frozenset[str] = frozenset()

    @property
    def satisfied(self) -> bool:
        if self.need is None:
            return all(plan.short == 0 for plan in self.parts)
        return self.need.met(self.part_satisfied)

    def part_satisfied(self, key: str) -> bool:
        if key in self.settled:
            return True
        plan = self.part(key)
        return plan is not None and plan.short == 0

    def _short(self, key: str) -> int:
        if key in self.settled:
            return 0
        plan = self.part(key)
        return plan.short if plan is not None else 1 << 30

    def extra_parts(self) -> list[PartPlan]:
        """Parts the group's need, met, does not keep: left short, or whole under a nested
        need that is not met. Placed later, each whole, or not at all (what the cycle placed
        of them is taken back)."""
        if self.need is None or not self.satisfied:
            return []
        kept = self.need.kept(self.part_satisfied)
        return [plan for plan in self.parts if plan.part.key not in kept]

    @property
    def complete(self) -> bool:
        return all(not plan.failed and not plan.skipped for plan in self.parts)

    def placements(self) -> list[Placement]:
        return [p for plan in self.parts for p in plan.placed]

    def needed(self) -> list[PodInfo]:
        """The members to make or hold room for: per part, enough to reach its minimum (and
        each task's) beyond what already counts (running or held); never more. With a need,
        only of the parts it needs (the closest to whole at each level)."""
        if self.need is None:
            return [pod for plan in self.parts for pod in plan.part.needed()]
        chosen = self.need.chosen(self._short)
        return [pod for plan in self.parts if plan.part.key in chosen for pod in plan.part.needed()]

    def unplaced(self) -> Iterator[PodInfo]:
        for plan in self.parts:
            for result in plan.failed:
                yield result.pod
            yield from plan.skipped

    def part(self, key: str) -> PartPlan | None:
        return next((p for p in self.parts if p.part.key == key), None)
