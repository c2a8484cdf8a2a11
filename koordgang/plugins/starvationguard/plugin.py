"""The starvation guard: a job that has waited ``reserve_after`` without fitting holds the nodes
it will fit on once pods of ours there finish; backfill goes to every other node.

Why: small pods placed on the least-used nodes keep every node partly busy, so a job that needs
whole nodes never finds them free, however long it waits; preemption does not help when the
pods in the way have the job's own priority. The guard plans the job with preemption's dry run
(on a fork of the cycle's snapshot, the running pods of ours with the same or lower priority
being the pods that may leave) but waits for them instead of evicting:

- the members are nominated to the chosen nodes (``status.nominatedNodeName``) and the room is
  held as preemption's is: each nomination is an assumed pod in the cache, so nothing of ours
  is placed there meanwhile, while the pods already running there finish as they would;
- the job is planned again on every attempt, on the same nodes while they still do, and binds,
  whole, once they have room for it; a higher-priority job may take the room (preemption
  counts lower-priority nominations as gone), and the reserving job then plans again;
- nothing the job found there is ever evicted for a reservation;
- backfill into held room (``backfill.py``): a group whose time limits end before the job
  has its room on a held node, by the time limits of the pods there (those it let in left
  out), may use that node's held room; once what it let in is all the job waits for (the
  pods it found there ended, often well before their limits), that is evicted (``reclaim``):
  backfill never makes the job start later than it would have without it. Without
  ``reclaim`` the job waits for what it let in (which ends by its promised start).

Bounds: at most ``max_reserving`` jobs hold room at a time (a higher-priority job takes the
place of a lower one; a free place goes to the first waiting job in queue order, not to the
first one tried); a reservation ends when the job binds, is deleted, or has held room for
its waiting time, or until the start it was promised if that is later (then it waits
``reserve_after`` again before it may reserve again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.group import GroupPlan, SchedulingGroup
from koordgang.framework.handle import Handle
from koordgang.framework.report import LATE_STARTS, MetricSpec
from koordgang.framework.results import HoldPreview, PostFilterResult, UnreserveReason
from koordgang.framework.status import SKIP, SUCCESS, Status
from koordgang.model.group_key import GroupKey
from koordgang.model.job import JobInfo
from koordgang.model.pod import PodInfo
from koordgang.model.time import format_rfc3339
from koordgang.model.time_limits import job_key
from koordgang.plugins.preemption.dry_run import DryRun, plan_room
from koordgang.plugins.preemption.victims import CostModel, running_members
from koordgang.plugins.starvationguard.backfill import ends_by, node_starts, starts_by
from koordgang.plugins.starvationguard.reservation import Reservation
from koordgang.plugins.starvationguard.waiting import Waiting, ahead
from koordgang.state.snapshot import Placement, Snapshot

NAME = "StarvationGuard"
RESERVING_JOBS = "koordgang_reserving_jobs"
RESERVED_NODES = "koordgang_reserved_nodes"
RESERVATION_WAIT = "koordgang_reservation_wait_seconds"
#: A job not seen failing for this long stopped waiting (it was placed, or it is gone).
FORGET_AFTER = 180.0
#: The cycle state's record of the reservations (keys) whose room a group was lent.
LENT = "starvationguard/lent"
#: Why a pod let in is evicted, on its DisruptionTarget condition (preemption's words would say
#: "higher priority", which the job holding the room need not have).
RECLAIMING = "reclaiming the room this pod was let into while another job held it"

_METRICS = (
    MetricSpec(RESERVING_JOBS, "Jobs holding nodes while the pods there finish.", "gauge"),
    MetricSpec(RESERVED_NODES, "Nodes held for reserving jobs.", "gauge"),
    MetricSpec(
        RESERVATION_WAIT,
        "Time from a job's reservation to its binding.",
        "histogram",
        buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600),
    ),
)


class StarvationGuard:
    name = NAME

    def __init__(
        self,
        handle: Handle,
        *,
        scheduler_names: Iterable[str],
        reserve_after: float = 30.0,
        max_reserving: int = 1,
        default_waiting_time: float = 600.0,
        reclaim: bool = True,
    ) -> None:
        #: 0 (or less) turns the guard off.
        self.reserve_after = reserve_after
        self.max_reserving = max(0, max_reserving)
        self._default_waiting_time = default_waiting_time
        #: Evict what backfill let in once it is all the job waits for.
        self.reclaim = reclaim
        self._scheduler_names = frozenset(scheduler_names)
        self._waiting: dict[str, Waiting] = {}
        self._reservations: dict[str, Reservation] = {}
        #: member uid -> the job it holds room for.
        self._member_of: dict[str, str] = {}
        self.handle = handle
        self._pruned = 0.0

    @property
    def enabled(self) -> bool:
        return self.reserve_after > 0 and self.max_reserving > 0

    # -- what others ask -------------------------------------------------------------------------

    def reservations(self) -> Mapping[str, Reservation]:
        """The jobs holding room now, by group key."""
        return self._reservations

    def reservation_of(self, job: str) -> Reservation | None:
        """The reservation of a job, by its name as users read it (``default/big``)."""
        for reservation in self._reservations.values():
            if reservation.job == job:
                return reservation
        return None

    def gang_facts(self, gang_key: str) -> Mapping[str, Any]:
        """The nodes a starving job holds, and whom it waits for there."""
        reservation = self.reservation_of(gang_key)
        if reservation is None:
            return {}
        facts: dict[str, Any] = {
            "reserved": sorted(reservation.nodes),
            "waitingFor": reservation.describe(),
        }
        if reservation.promised is not None and reservation.waits_for():
            facts["expectedStart"] = format_rfc3339(reservation.promised)
            facts["promised"] = True
        return facts

    def metrics(self) -> Sequence[MetricSpec]:
        return _METRICS

    def gauges(self) -> Mapping[str, Mapping[str, float]]:
        self._drop_stale()
        nodes = {n for r in self._reservations.values() for n in r.nodes}
        return {
            RESERVING_JOBS: {"": float(len(self._reservations))},
            RESERVED_NODES: {"": float(len(nodes))},
        }

    # -- events --------------------------------------------------------------------------------

    def on_pod_left_pending(self, pod: PodInfo, gone: bool) -> None:
        key = self._member_of.get(pod.uid)
        if key is None:
            return
        # A member bound, or gone: the reservation ends when none is left waiting.
        reservation = self._reservations.get(key)
        del self._member_of[pod.uid]
        if reservation is None:
            return
        reservation.nominations.pop(pod.uid, None)
        if not reservation.nominations:
            if not gone:
                self.handle.record(RESERVATION_WAIT, self.handle.now() - reservation.since)
                promised = reservation.promised
                if promised is not None and self.handle.wall() > promised:
                    # A higher priority would have taken its room (the reservation ends); it
                    # bound, late: a pod it waited for outlived its bound.
                    self.handle.record(LATE_STARTS, 1.0, "outlived_bound")
            self._end(key)
            self._waiting.pop(key, None)

    def on_pod_gone(self, pod: PodInfo) -> None:
        """When the last pod a reservation waits for is gone (those it let in too, unless
        they are to be evicted: then the last of the others), its members are tried at once
        (not after their backoff): the room is theirs now, or is to be taken back."""
        for reservation in self._reservations.values():
            blocked = reservation.blockers.pop(pod.uid, None) is not None
            blocked = reservation.let_in.pop(pod.uid, None) is not None or blocked
            left = reservation.blockers.keys() - reservation.let_in.keys()
            if not self.reclaim:
                left |= reservation.let_in.keys()
            if blocked and not left:
                cache = self.handle.cache
                members = [p for uid in reservation.nominations if (p := cache.pod(uid))]
                self.handle.activate(members)

    # -- Reclaim: room the job may wait for (so that minResources does not refuse it) ---------

    def reclaimable(self, group: SchedulingGroup, snapshot: Snapshot) -> Mapping[str, int]:
        """Once a job may reserve, the running pods of ours it would wait for count as room
        for its minResources check (as preemption's victims do)."""
        if not self.enabled:
            return {}
        key = str(group.key) or group.trigger.uid
        now = self.handle.now()
        if key not in self._reservations and not self._may_reserve(key, now):
            return {}
        below = min(p.priority for p in group.members())
        return snapshot.requested_by(lambda pod: self._may_wait_for(pod, below))

    # -- Backfill into held room, and Reserve: what it let in -----------------------------------

    def backfill_room(self, state: CycleState, group: SchedulingGroup) -> Sequence[str]:
        """The members of reservations whose held room ``group`` may use: those nominated to
        nodes it is done with by the time the job has its room there at the latest (by the
        bounds of the pods there, those let in left out; each node by itself, see
        ``backfill.py``). Only a group
        whose every member has a time limit, and only where the job's start is known (every
        pod it waits for has a bound, and none is past it)."""
        if not self._reservations:
            return ()
        own = str(group.key) or group.trigger.uid
        now = self.handle.wall()
        ends: float | None = None
        lent: list[str] = []
        keys: list[str] = []
        for key, reservation in self._reservations.items():
            if key == own or not reservation.nominations:
                continue
            if ends is None:
                waiting = _waiting_time(group, self._default_waiting_time)
                ends = ends_by(group, self._job_of, now, waiting)
                if ends is None:
                    return ()
            # By the pods it held the room for, not by what it let in (``backfill.py``).
            starts = node_starts(
                reservation.nominations, self.handle.cache, self._job_of, now, reservation.let_in
            )
            if None in starts.values():
                continue  # the job's start is not known: nothing ends before it
            free = {node for node, at in starts.items() if at is not None and ends <= at}
            members = [uid for uid, node in reservation.nominations.items() if node in free]
            if members:
                keys.append(key)
                lent.extend(members)
        if keys:
            state.write(LENT, tuple(keys))
        return lent

    def reserve(
        self, state: CycleState, group: SchedulingGroup, placements: Sequence[Placement]
    ) -> Status:
        """Placements on a reservation's nodes in a cycle it lent its room to: the job waits
        for them as for the pods it held the room for (they end before it starts)."""
        for key in state.read(LENT, tuple) or ():
            reservation = self._reservations.get(key)
            if reservation is None:
                continue
            nodes = reservation.nodes
            for placement in placements:
                if placement.node_name in nodes:
                    reservation.let_in[placement.pod.uid] = placement.node_name
        return SUCCESS

    def unreserve(
        self, group_key: GroupKey, placements: Sequence[Placement], reason: UnreserveReason
    ) -> None:
        for reservation in self._reservations.values():
            for placement in placements:
                reservation.let_in.pop(placement.pod.uid, None)

    def _job_of(self, pod: PodInfo) -> JobInfo | None:
        key = job_key(pod)
        return self.handle.stores.jobs.get(key) if key is not None else None

    # -- PostFilter ----------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> PostFilterResult:
        if not self.enabled or plan.satisfied:
            return PostFilterResult(SKIP)
        needed = plan.needed()
        if not needed or not snapshot.nodes:
            return PostFilterResult(SKIP)
        key = str(group.key) or group.trigger.uid
        now = self.handle.now()
        self._prune(now)
        members = list(group.members())
        priority = min(p.priority for p in members)
        current = self._reservations.get(key)
        if current is not None and now >= current.until:
            # Held for its whole waiting time (or to its promised start): others get their
            # turn first.
            self._end(key)
            self._waiting[key] = Waiting(now, now)
            return PostFilterResult(SKIP)
        displaced = [] if current is not None else self._place_for(key, members, needed, now)
        if displaced is None:
            return PostFilterResult(SKIP)

        run = self._plan(group, needed, snapshot, current)
        if key in self._waiting:
            self._waiting[key].could_hold = run is not None and not run.failure
        if run is None or run.failure:
            # Not even with every pod it could wait for gone (a higher-priority pod took room):
            # holding would not help, and the group's own explanation says what it lacks. It
            # keeps its place in time, and reserves again once it could.
            if current is not None:
                self._end(key)
            return PostFilterResult(SKIP)

        reclaimed = self._reclaimed(current, run)
        dropped = [uid for other in displaced for uid in self._end(other)]
        reservation = current or Reservation(
            job=group.job_name(),
            priority=priority,
            since=now,
            since_wall=self.handle.wall(),
            until=now + _waiting_time(group, self._default_waiting_time),
        )
        for uid in reservation.nominations:
            self._member_of.pop(uid, None)
        reservation.nominations = dict(run.nominations)
        reservation.blockers = {p.pod.uid: p.node_name for p in run.victims}
        if current is None:
            self._promise(reservation, now)
        for uid in reservation.nominations:
            self._member_of[uid] = key
        self._reservations[key] = reservation
        held = reservation.nodes
        # Lower-priority pods nominated where the job goes give their room up (as preemption's
        # nominations do); the job does not wait for them.
        dropped += [
            n.pod.uid
            for n in self.handle.nominations.on_nodes(held)
            if n.pod.priority < priority and n.pod.uid not in reservation.nominations
        ]
        note = reservation.describe(reclaiming=len(reclaimed))
        return PostFilterResult(
            SUCCESS,
            nominated=dict(reservation.nominations),
            notes={p.uid: note for p in members},
            evict=reclaimed,
            preemptor=reservation.job,
            eviction_why=RECLAIMING if reclaimed else "",
            drop_nominations=dropped,
        )

    def _reclaimed(self, current: Reservation | None, run: DryRun) -> list[Placement]:
        """Room lent is taken back once it is all the job waits for: the pods it held the
        room for gone (often well before their limits), those it let in would make it start
        later than it would have without them. They are evicted (only those still running),
        so that backfill never delays it."""
        if current is None or not self.reclaim or not run.victims:
            return []
        if any(p.pod.uid not in current.let_in for p in run.victims):
            return []
        return self._with_whole_jobs([p for p in run.victims if not p.pod.is_terminating])

    def _with_whole_jobs(self, victims: list[Placement]) -> list[Placement]:
        """A job disrupted whole or not at all (upstream's ``disruptionMode: {all: {}}``)
        loses every running member with the one in the way, as preemption would have it,
        wherever they run."""
        job_of = self.handle.job_of
        keys = {job.key for p in victims if (job := job_of(p.pod)) is not None and job.whole}
        if not keys:
            return victims
        chosen = {p.pod.uid for p in victims}
        running = running_members(self.handle.cache.pods(), job_of, keys)
        more = [
            Placement(pod, pod.node_name)
            for pods in running.values()
            for pod in pods
            if pod.uid not in chosen and not pod.is_terminating
        ]
        return victims + more

    def _promise(self, reservation: Reservation, now: float) -> None:
        """The promise, made once, as it begins to hold room: by the pods there then. Given up
        before that start, the room would go to others and the job, holding again later, be
        promised a later start: it holds the room until then if its waiting time ends first."""
        wall = self.handle.wall()
        promised = starts_by(reservation.nominations, self.handle.cache, self._job_of, wall)
        reservation.promised = promised
        if promised is not None:
            reservation.until = max(reservation.until, now + promised - wall)

    def hold_preview(
        self, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> HoldPreview | None:
        reservation = self.plan_for(group, plan, snapshot)
        if reservation is None:
            return None
        return HoldPreview(self.reserve_after, reservation.nominations, reservation.blockers)

    def plan_for(
        self, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> Reservation | None:
        """What ``group`` would hold if it reserved now, whatever it has waited (the what-if
        asks); nothing is recorded. None: it fits whole, or holding would not let it fit."""
        if not self.enabled or plan.satisfied:
            return None
        needed = plan.needed()
        if not needed:
            return None
        run = self._plan(group, needed, snapshot, None)
        if run is None or run.failure:
            return None
        now = self.handle.now()
        return Reservation(
            job=group.job_name(),
            priority=min(p.priority for p in group.members()),
            since=now,
            since_wall=self.handle.wall(),
            until=now + _waiting_time(group, self._default_waiting_time),
            nominations=dict(run.nominations),
            blockers={p.pod.uid: p.node_name for p in run.victims},
        )

    # -- planning ------------------------------------------------------------------------------

    def _plan(
        self,
        group: SchedulingGroup,
        needed: list[PodInfo],
        snapshot: Snapshot,
        current: Reservation | None,
    ) -> DryRun | None:
        """Preemption's dry run, with the pods the job would wait for as the ones that leave:
        on the nodes it holds already if they still do, else wherever waiting costs least
        (inside one domain for a MustGather rule)."""
        scopes = self.handle.placement_scopes(group, snapshot)
        if current is not None:
            held = frozenset(current.nodes)
            inside = scopes is None or any(held <= scope for scope in scopes)
            if inside and all(snapshot.node(n) is not None for n in held):
                kept = self._as_nominated(group, needed, snapshot, current)
                if kept is not None:
                    return kept
                run = self._dry_run(group, needed, snapshot, held, held)
                if not run.failure:
                    return run
        if scopes is None:
            return self._dry_run(group, needed, snapshot, None, None)
        best: DryRun | None = None
        failure: DryRun | None = None
        for scope in scopes:
            run = self._dry_run(group, needed, snapshot, scope, scope)
            if run.failure:
                failure = failure or run
            elif best is None or run.cost < best.cost:
                best = run
        return best or failure

    def _as_nominated(
        self,
        group: SchedulingGroup,
        needed: list[PodInfo],
        snapshot: Snapshot,
        current: Reservation,
    ) -> DryRun | None:
        """The job planned again with each member on the node it holds, node by node; None
        when a member has no node held or no longer fits there. Planned over the held nodes
        as a whole, a member could move to another of them (a cheaper dry run there), where
        the room for two comes later than the start promised by the room for one."""
        by_node: dict[str, list[PodInfo]] = {}
        for member in needed:
            node = current.nominations.get(member.uid)
            if node is None:
                return None
            by_node.setdefault(node, []).append(member)
        kept = DryRun()
        for node, members in sorted(by_node.items()):
            only = frozenset((node,))
            run = self._dry_run(group, members, snapshot, only, only)
            if run.failure:
                return None
            kept.nominations.update(run.nominations)
            kept.victims += run.victims
            kept.freed += run.freed
        return kept

    def _dry_run(
        self,
        group: SchedulingGroup,
        needed: list[PodInfo],
        snapshot: Snapshot,
        candidates: frozenset[str] | None,
        within: frozenset[str] | None,
    ) -> DryRun:
        below = min(p.priority for p in group.members())
        nominations = self.handle.nominations

        def gone(pod: PodInfo) -> bool:
            return pod.is_terminating or (pod.uid in nominations and pod.priority < below)

        model = CostModel(self.handle.job_of)
        names = sorted(candidates) if candidates is not None else [n.name for n in snapshot.nodes]
        eligible: dict[str, list[PodInfo]] = {}
        for name in names:
            node = snapshot.node(name)
            if node is None:
                continue
            pods = [p for p in snapshot.pods_on(node) if self._may_wait_for(p, below)]
            if pods:
                eligible[name] = sorted(pods, key=model.eviction_order)
        placer = self.handle.placer
        return plan_room(needed, snapshot, placer, model, names, eligible, gone, within)

    def _may_wait_for(self, pod: PodInfo, below: int) -> bool:
        """Pods of ours that run, not above the job's priority, and will end by themselves
        (a DaemonSet's or a static pod would come back); and the pods a reservation let in
        (bound, or still binding)."""
        if any(pod.uid in r.let_in for r in self._reservations.values()):
            return True
        return (
            bool(pod.node_name)
            and pod.scheduler_name in self._scheduler_names
            and pod.priority <= below
            and not pod.is_terminating
            and pod.owner_kind != "DaemonSet"
            and not pod.mirror
        )

    # -- bookkeeping ---------------------------------------------------------------------------

    def _may_reserve(self, key: str, now: float) -> bool:
        waiting = self._waiting.get(key)
        if waiting is None:
            self._waiting[key] = Waiting(now, now)
            return False
        waiting.last = now
        return now - waiting.first >= self.reserve_after

    def _place_for(
        self, key: str, members: list[PodInfo], needed: list[PodInfo], now: float
    ) -> list[str] | None:
        """May a job not holding room begin to: the reservations it displaces ([] when a
        place is free), or None."""
        if not self._may_reserve(key, now):
            # Tried again when reserveAfter has passed, not at the next event or the
            # periodic retry (a minute on a quiet cluster).
            self.handle.retry_at(members, self._waiting[key].first + self.reserve_after)
            return None
        priority = min(p.priority for p in members)
        waiting = self._waiting[key]
        waiting.priority = priority
        waiting.created = min(p.creation_timestamp for p in members)
        waiting.members = tuple(p.uid for p in needed)
        # None: every place taken by jobs at least as important.
        displaced = self._make_room_for(priority)
        if displaced is None or self._turn_of_another(key, now):
            return None
        return displaced

    def _turn_of_another(self, key: str, now: float) -> bool:
        """Places to hold room go in queue order (priority, then age), not to whichever job
        happens to be tried first when one comes free: a job ahead of ``key`` whose members
        still wait goes first, tried at once; ``key`` waits its turn."""
        cache, nominations = self.handle.cache, self.handle.nominations
        for other in ahead(self._waiting, key, self._reservations, now, self.reserve_after):
            # Still waiting: not bound, nor placed and binding (nor nominated: room is made
            # for it some other way).
            pending = [
                p
                for uid in other.members
                if (p := cache.pod(uid))
                and not p.node_name
                and not cache.is_assumed(uid)
                and uid not in nominations
            ]
            if pending:
                self.handle.activate(pending)
                return True
        return False

    def _drop_stale(self) -> None:
        """A reservation whose job was planned again without the guard (its nominations were
        given back first, and it was refused before placement, or preemption took over) holds
        nothing any more: it ends."""
        nominations = self.handle.nominations
        for key, reservation in list(self._reservations.items()):
            if not any(uid in nominations for uid in reservation.nominations):
                self._end(key)

    def _make_room_for(self, priority: int) -> list[str] | None:
        """The reservations to end so that a job of ``priority`` may reserve ([] when a place
        is free); None when every place is held by a job at least as important."""
        self._drop_stale()
        if len(self._reservations) < self.max_reserving:
            return []
        weakest = min(self._reservations.items(), key=lambda kv: (kv[1].priority, -kv[1].since))
        if weakest[1].priority >= priority:
            return None
        return [weakest[0]]

    def _end(self, key: str) -> list[str]:
        """Ends ``key``'s reservation; returns the members whose nominations it held."""
        reservation = self._reservations.pop(key, None)
        if reservation is None:
            return []
        for uid in reservation.nominations:
            self._member_of.pop(uid, None)
        return list(reservation.nominations)

    def _prune(self, now: float) -> None:
        if now - self._pruned < FORGET_AFTER / 4:
            return
        self._pruned = now
        for key in [k for k, w in self._waiting.items() if now - w.last > FORGET_AFTER]:
            del self._waiting[key]


def _waiting_time(group: SchedulingGroup, default: float) -> float:
    """The shortest waiting time among the group's gangs (the daemon's default if none says)."""
    times = [p.waiting_time for p in group.parts if p.waiting_time]
    return min(times) if times else default
