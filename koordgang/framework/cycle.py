"""One scheduling cycle: one group (a gang group, or a plain pod as a group of one), decided as a
whole over one snapshot.

    PreFilter(group) --rejected--> every member waits, with the reason
        |
    Backfill(group): held room it may use (free in the fork it is placed on)
        |
    group placement (Filter and Score per member, on a fork of the snapshot)
        |-- not all placed --> PostFilter(group): make room (preemption), or give up (Strict)
        |
    Reserve(all placed) --> Permit(group) --ALLOW--> bind (and the group's held pods)
                                          --WAIT---> hold, until allowed or the deadline
                                          --REJECT-> undo

    members left waiting, no room being made --> Provisioning(group): can an autoscaler add
        the room? If not, they say why, under a reason other than Unschedulable

Synchronous and without I/O: the outcome says what to do, the engine does it. Placements that
are kept (bound or held) are committed into the cache as assumed pods before returning, so the
next cycle sees them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from koordgang.framework.cycle_state import UNPLACED_MESSAGES, CycleState
from koordgang.framework.framework import Framework
from koordgang.framework.group import GroupPlan, PodResult, SchedulingGroup
from koordgang.framework.prebind import ObjectWrite
from koordgang.framework.results import Decision, UnreserveReason
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.pod import PodInfo
from koordgang.state.snapshot import Placement, Snapshot


@dataclass(slots=True)
class CycleOutcome:
    group: SchedulingGroup
    #: SUCCESS when something binds, WAIT when placements are held, else why nothing moved.
    status: Status = SUCCESS
    #: Placed now and allowed: bind them (they are assumed in the cache).
    bind: list[Placement] = field(default_factory=list)
    #: Placed now and held until ``deadline`` (assumed in the cache).
    hold: list[Placement] = field(default_factory=list)
    deadline: float | None = None
    #: Held in earlier cycles and allowed now (pod uids).
    allow_waiting: tuple[str, ...] = ()
    #: Nodes held for members while room is made for them (pod uid -> node).
    nominated: dict[str, str] = field(default_factory=dict)
    #: Members that stay pending, with what each is told (parked until the cluster changes,
    #: or retried with backoff when ``status`` is an ERROR).
    unplaced: dict[str, str] = field(default_factory=dict)
    #: What held pods (of this cycle and earlier ones) are told while they wait.
    explain: dict[str, str] = field(default_factory=dict)
    #: Give up what the group held from earlier cycles too (a Strict group short again).
    release_held: bool = False
    #: What the placement did, when one ran.
    plan: GroupPlan | None = None
    #: Pods to evict so that the nominated members fit (preemption), with their node.
    evict: list[Placement] = field(default_factory=list)
    #: Whom they are evicted for (``default/hello-job``), and why ("": preemption).
    preemptor: str = ""
    eviction_why: str = ""
    #: Pods of other groups whose nominations are given up.
    drop_nominations: list[str] = field(default_factory=list)
    #: How long a preemption dry run took, if one ran (seconds).
    dry_run_seconds: float | None = None
    #: Writes to make whatever else happens (PostFilter's: claims given back).
    writes: tuple[ObjectWrite, ...] = ()
    #: The PodScheduled reason of the members that wait (``unplaced`` and ``explain``): a
    #: Provisioning plugin's when no autoscaler can add the room they lack.
    reason: str = "Unschedulable"


def run_cycle(
    framework: Framework, group: SchedulingGroup, snapshot: Snapshot, now: float
) -> CycleOutcome:
    # Room nominated to another scheduler's pod stays taken for this group unless that pod's
    # priority is lower (kube-scheduler's rule for its own nominations): every filter, the
    # gang's decision and preemption's dry run see the same view.
    snapshot.pass_over(group.lowest_priority())
    outcome = _run(framework, group, snapshot, now)
    _ask_provisioning(framework, outcome, snapshot)
    return outcome


def _ask_provisioning(framework: Framework, outcome: CycleOutcome, snapshot: Snapshot) -> None:
    """Members left without room, none being made for them: whether an autoscaler could add
    it decides what they say (and the reason autoscalers read)."""
    if (
        not framework.provisioners
        or not outcome.unplaced
        or outcome.nominated
        or outcome.status.code is Code.ERROR
    ):
        return
    needed = _still_needed(outcome)
    if not needed:
        return
    group = outcome.group
    verdict = framework.run_provisioning(group, needed, snapshot)
    if verdict is None:
        return
    outcome.reason = verdict.reason
    for messages in (outcome.unplaced, outcome.explain):
        for uid, message in messages.items():
            messages[uid] = f"{message}; {verdict.note}" if message else verdict.note


def _still_needed(outcome: CycleOutcome) -> list[PodInfo]:
    """The unplaced members without which the group cannot start: per part, as many as its
    minimum still lacks after what this cycle placed (the members it names first)."""
    placed = {p.pod.uid for p in (*outcome.bind, *outcome.hold)}
    wanted: list[PodInfo] = []
    for part in outcome.group.parts:
        needed = part.needed()
        short = len(needed) - sum(1 for pod in part.pending if pod.uid in placed)
        if short <= 0:
            continue
        first = [pod for pod in needed if pod.uid in outcome.unplaced]
        named = {pod.uid for pod in first}
        rest = [p for p in part.pending if p.uid in outcome.unplaced and p.uid not in named]
        wanted += (first + rest)[:short]
    return wanted


def _run(
    framework: Framework, group: SchedulingGroup, snapshot: Snapshot, now: float
) -> CycleOutcome:
    state = CycleState()
    outcome = CycleOutcome(group)
    status = framework.run_group_pre_filter(state, group, snapshot)
    if not status.is_success:
        outcome.status = status
        message = status.message()
        own = state.read(UNPLACED_MESSAGES, dict) or {}
        outcome.unplaced = {pod.uid: own.get(pod.uid, message) for pod in group.members()}
        # Members held from earlier attempts are not in the group, yet they belong to the same
        # gangs: left out, they would go on saying what the last placement said (its count,
        # its reservations) while the others say why the group cannot be tried now.
        outcome.explain = {
            held.pod.uid: own.get(held.pod.uid, message)
            for part in group.parts
            for held in framework.waiting.in_part(part.key)
            if held.pod.uid not in outcome.unplaced
        }
        return outcome

    # Held room the group may use (backfill: it is done with it before the room is needed)
    # is free in the fork it is placed on, not for PostFilter: preemption and the starvation
    # guard plan on the room as held.
    lent = framework.backfill_room(state, group)
    # A pod alone needs no fork otherwise: whatever it does not keep, it did not place.
    work = snapshot if not group.key and group.size == 1 and not lent else snapshot.fork()
    if lent:
        work.pass_over_held(lent)
    plan = framework.run_group_placement(state, group, work)
    outcome.plan = plan
    _take_back_extras(plan, work)
    messages: dict[str, str] = {}
    placements = plan.placements()
    complete = plan.complete
    if not complete:
        result = framework.run_post_filter(state, group, plan, snapshot)
        messages.update(result.messages)
        outcome.dry_run_seconds = result.dry_run_seconds
        outcome.writes = result.writes
        if result.status.is_success:
            # Room is being made (victims go): the members wait for it, holding nothing else.
            outcome.status = Status(Code.UNSCHEDULABLE, ("waiting for preemption",))
            outcome.nominated = dict(result.nominated)
            outcome.evict = list(result.evict)
            outcome.preemptor = result.preemptor
            outcome.eviction_why = result.eviction_why
            outcome.drop_nominations = list(result.drop_nominations)
            messages.update(result.notes)
            _leave_all(outcome, group, plan, messages)
            return outcome
        if result.notes:
            own = _own_failures(plan)
            for uid, note in result.notes.items():
                base = messages.get(uid) or own.get(uid, "")
                messages[uid] = f"{base}; {note}" if base else note
        if result.drop_placements:
            # Nothing of the group is kept, not even what it held from earlier cycles.
            outcome.status = _failure(plan)
            outcome.release_held = True
            _leave_all(outcome, group, plan, messages)
            return outcome

    if not placements and not group.key:
        outcome.status = _failure(plan)
        _leave_all(outcome, group, plan, messages)
        return outcome

    status = framework.run_reserve(state, group, placements)
    if not status.is_success:
        outcome.status = status
        _leave_all(outcome, group, plan, messages, status.message())
        return outcome
    permit = framework.run_permit(state, group, plan, now)
    messages.update(permit.messages)
    if permit.decision is Decision.REJECT:
        framework.run_unreserve(group.key, placements, UnreserveReason.REJECTED)
        outcome.status = _failure(plan)
        outcome.release_held = True
        _leave_all(outcome, group, plan, messages)
        return outcome

    if placements:
        if work is not snapshot:
            work.commit()
        snapshot.commit()
    if permit.decision is Decision.WAIT:
        kept = {p.pod.uid for p in placements}
        outcome.status = Status(Code.WAIT)
        outcome.hold = placements
        outcome.deadline = permit.deadline
        outcome.explain = {
            uid: text for uid, text in messages.items() if uid in kept or uid in framework.waiting
        }
    else:
        outcome.status = SUCCESS if placements or permit.also_allow else _failure(plan)
        outcome.bind = placements
        outcome.allow_waiting = permit.also_allow
    if not complete:
        own = _own_failures(plan)
        outcome.unplaced = {
            pod.uid: messages.get(pod.uid) or own.get(pod.uid, "") for pod in plan.unplaced()
        }
    return outcome


def _take_back_extras(plan: GroupPlan, work: Snapshot) -> None:
    """A group of gangs of gangs whose need is met binds the parts its need keeps; what it
    placed of the others is taken back (each part all or nothing, each nested level at its own
    minimum), and their members wait to be placed later."""
    for part in plan.extra_parts():
        if not part.placed:
            continue
        missing = part.short
        reason = (
            f"{part.part.key} is not placed whole with the others ({missing} more "
            f"member{'s' if missing != 1 else ''} did not fit); it is placed later, whole"
            if missing
            else f"{part.part.key} is whole, but the CompositePodGroup it is in is short of its "
            "own minimum; it is placed later"
        )
        status = Status(Code.UNSCHEDULABLE, (reason,))
        for placement in part.placed:
            work.remove(placement.pod)
            part.failed.append(PodResult(placement.pod, None, status, None, monotone=False))
        part.placed = []


def _failure(plan: GroupPlan) -> Status:
    for part in plan.parts:
        for result in part.failed:
            return Status(result.status.code, (result.message,), result.status.plugin)
    return Status(Code.UNSCHEDULABLE)


def _own_failures(plan: GroupPlan) -> dict[str, str]:
    """Why each unplaced member went nowhere: its own diagnosis, or for a member not tried,
    its part's first failure."""
    own: dict[str, str] = {}
    for part in plan.parts:
        for result in part.failed:
            own[result.pod.uid] = result.message
        for pod in part.skipped:
            own[pod.uid] = part.first_failure
    return own


def _leave_all(
    outcome: CycleOutcome,
    group: SchedulingGroup,
    plan: GroupPlan,
    messages: dict[str, str],
    default: str = "",
) -> None:
    """Nothing of this cycle is kept: every member stays pending, each told why."""
    own = _own_failures(plan)
    unplaced = {
        pod.uid: messages.get(pod.uid) or default or own.get(pod.uid, "") for pod in group.members()
    }
    outcome.unplaced = unplaced
    outcome.explain = {uid: text for uid, text in messages.items() if uid not in unplaced}
