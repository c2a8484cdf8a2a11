"""Gangs as the scheduler sees them: members, PodGroup, and where each gang is in its lifecycle.
Pure and synchronous; the coscheduling plugin drives it from informer events and cycles.

Members held for a gang (placed, waiting for the rest) are not recorded here: the registry of
waiting pods owns that fact, and a gang asks it (``held``).

A gang's lifecycle (``GangState``) is derived from facts rather than stored, except for the two
one-way latches ``satisfied`` and ``timed_out``, which ``TRANSITIONS`` governs:

    pending --(members placed, NonStrict)--> waiting --(group reaches min)--> satisfied
       |                                        |
       +-----------(group reaches min)----------+--> satisfied
                                                +--(waiting time over)--> timed-out

Both latches survive a restart because they are visible in the cluster: a bound member means
the gang was satisfied; the timeout annotation on members means it timed out. The one way back
is ``undo_satisfied``: the decision that satisfied the gang was given up before any member was
bound (the writes its members needed before binding failed), which is what a restart would
see too.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Sequence

from koordgang.model.gang import KOORDINATOR, GangRef, GangSource, MatchPolicy, PodGroupInfo
from koordgang.model.gang_keys import VOLCANO_TASK
from koordgang.model.gang_spec import GangSpec, resolve_gang_spec
from koordgang.model.koordinator import is_timed_out
from koordgang.model.pod import PodInfo
from koordgang.state.composites import CompositeForest
from koordgang.state.waiting import WaitingPods

#: The pod annotation naming a member's task (Volcano); task minimums count per task.
TASK_ANNOTATION = VOLCANO_TASK


class GangState(enum.StrEnum):
    #: Not enough members yet, or its PodGroup is missing, or it is waiting for its group.
    PENDING = "Pending"
    #: NonStrict: holds reservations while still short of its minimum.
    WAITING = "Waiting"
    #: Its group reached the minimum and was bound; later members schedule like plain pods.
    SATISFIED = "Satisfied"
    #: Held reservations past its waiting time; its members are never scheduled again.
    TIMED_OUT = "TimedOut"
    #: Its declaration is unusable (say, min-available is not a number).
    INVALID = "Invalid"


TRANSITIONS: dict[GangState, frozenset[GangState]] = {
    # A group times out as a whole, so a gang that holds nothing itself can time out too.
    GangState.PENDING: frozenset(
        {GangState.WAITING, GangState.SATISFIED, GangState.INVALID, GangState.TIMED_OUT}
    ),
    GangState.WAITING: frozenset({GangState.PENDING, GangState.SATISFIED, GangState.TIMED_OUT}),
    # Only by ``undo_satisfied``, while no member is bound.
    GangState.SATISFIED: frozenset({GangState.PENDING}),
    GangState.TIMED_OUT: frozenset(),
    GangState.INVALID: frozenset({GangState.PENDING, GangState.TIMED_OUT}),
}


class GangTransitionError(RuntimeError):
    pass


class Gang:
    """One gang: its members (our pods that name it), its PodGroup if any, its reservations."""

    def __init__(self, ref: GangRef, default_waiting_time: float, waiting: WaitingPods) -> None:
        self.ref = ref
        self.key = ref.key
        self.members: dict[str, PodInfo] = {}
        self.podgroup: PodGroupInfo | None = None
        self._waiting = waiting
        #: Wall-clock time of the first scheduling attempt (PodGroup scheduleStartTime).
        self.first_attempt: float | None = None
        self._satisfied = False
        self._timed_out = False
        #: Members that timed out (annotated, or about to be); the latch lifts when all are gone.
        self._timed_out_members: set[str] = set()
        #: The newest explanation given to its pending members (for `koordgang gangs`).
        self.last_message = ""
        #: Its minResources could fit once, so its client may make its pods (Volcano's
        #: enqueue); one-way.
        self.enqueued = False
        #: When it was enqueued (monotonic seconds): its promise of room lapses after its
        #: waiting time.
        self.enqueued_at: float | None = None
        #: It was told it fell below its minimum after running whole (told once per fall).
        self.told_below_minimum = False
        #: The last member a kubelet refused at admission, as told (``w-2 on node n1:
        #: OutOfcpu``), "" if none was: a fall below the minimum names it.
        self.last_refusal = ""
        #: Members bound and alive, or done: kept up to date member by member.
        self._working = 0
        #: Its minimum was bound and alive at once: it ran whole (a fall below is news).
        self._ran_whole = False
        #: Members that succeeded; once they reach the minimum the job is done, and members
        #: removed afterwards (clean-up) are no fall.
        self._done = 0
        self._finished = False
        self._default_waiting_time = default_waiting_time
        self._spec: GangSpec | None = None
        self._representative: PodInfo | None = None

    # -- derived facts ------------------------------------------------------------------------

    @property
    def spec(self) -> GangSpec:
        if self._spec is None:
            rep = self.representative()
            labels = rep.labels if rep is not None else {}
            annotations = rep.annotations if rep is not None else {}
            self._spec = resolve_gang_spec(
                self.ref, labels, annotations, self.podgroup, self._default_waiting_time
            )
        return self._spec

    def representative(self) -> PodInfo | None:
        """The member whose annotations configure the gang: the oldest, then by name."""
        if self._representative is None and self.members:
            self._representative = min(
                self.members.values(), key=lambda p: (p.creation_timestamp, p.name)
            )
        return self._representative

    @property
    def satisfied(self) -> bool:
        return self._satisfied

    @property
    def timed_out(self) -> bool:
        return self._timed_out

    @property
    def state(self) -> GangState:
        if self._timed_out:
            return GangState.TIMED_OUT
        if self._satisfied:
            return GangState.SATISFIED
        if not self.spec.startable and not self.needs_podgroup():
            return GangState.INVALID
        if self.held():
            return GangState.WAITING
        return GangState.PENDING

    def held(self) -> int:
        """Members placed and held for the gang (waiting for the rest of its group)."""
        return self._waiting.count_in_part(self.key)

    def created_at(self) -> float:
        if self.podgroup is not None:
            return self.podgroup.creation_timestamp
        rep = self.representative()
        return rep.creation_timestamp if rep is not None else 0.0

    def needs_podgroup(self) -> bool:
        return self.ref.source is GangSource.POD_GROUP and self.podgroup is None

    @property
    def api(self) -> str:
        return self.ref.api

    def is_gang(self) -> bool:
        """False when its group object's policy is not a gang (its pods go alone)."""
        return self.podgroup is None or self.podgroup.is_gang

    def task_of(self, pod: PodInfo) -> str:
        """The task (Volcano's ``volcano.sh/task-spec``) a member belongs to, "" if none."""
        return pod.annotations.get(TASK_ANNOTATION, "")

    def live_members(self) -> Iterator[PodInfo]:
        return (p for p in self.members.values() if not p.is_terminal and not p.is_terminating)

    def bound_members(self) -> Iterator[PodInfo]:
        return (p for p in self.members.values() if p.node_name and not p.is_terminal)

    def pending_members(self) -> list[PodInfo]:
        """Members that still need a node: unbound, alive, not held."""
        waiting = self._waiting
        return [
            p
            for p in self.members.values()
            if not p.node_name
            and not p.is_terminal
            and not p.is_terminating
            and p.uid not in waiting
        ]

    def counted(self) -> int:
        """Members that count toward the minimum right now, by the gang's match policy."""
        policy = self.spec.match_policy
        count = self.held()
        if policy is not MatchPolicy.ONLY_WAITING:
            count += sum(1 for _ in self.bound_members())
        return count

    def counted_members(self) -> list[PodInfo]:
        """The members :meth:`counted` counts."""
        members = [w.pod for w in self._waiting.in_part(self.key)]
        if self.spec.match_policy is not MatchPolicy.ONLY_WAITING:
            members.extend(self.bound_members())
        return members

    def is_timed_out_member(self, uid: str) -> bool:
        """Whether ``uid`` is one of the members the timeout was declared for (as opposed to a
        replacement created since)."""
        return uid in self._timed_out_members

    def exempt(self) -> bool:
        """Its pods schedule like plain pods: satisfied once, with the once-satisfied policy;
        or its group object is not a gang at all."""
        if not self.is_gang():
            return True
        return self._satisfied and self.spec.match_policy is MatchPolicy.ONCE_SATISFIED

    @property
    def ran_whole(self) -> bool:
        """Its minimum was bound (and alive, or done) at once."""
        return self._ran_whole

    @property
    def finished(self) -> bool:
        """Its minimum of members succeeded: the job is done (one-way while members remain)."""
        return self._finished

    def below_minimum(self) -> bool:
        """It ran whole once, and now fewer members than its minimum are alive on nodes or
        done: a member failed or was deleted (replacing it is the job controller's work)."""
        if not self._ran_whole or self._finished or not self.is_gang():
            return False
        return self._working < (self.spec.min_available or 0)

    # -- changes ------------------------------------------------------------------------------

    def _changed(self) -> None:
        self._spec = None
        self._representative = None

    def _member_changed(self, old: PodInfo | None, pod: PodInfo) -> None:
        """The spec depends on the representative only: forget it only when that may change
        (O(1) per event; a gang of thousands is not re-scanned per member)."""
        rep = self._representative
        if rep is None:
            self._spec = None  # nothing cached rests on a representative yet
            return
        if old is None:
            if (pod.creation_timestamp, pod.name) < (rep.creation_timestamp, rep.name):
                self._changed()
        elif pod.uid == rep.uid:
            if old.annotations != pod.annotations or old.labels != pod.labels:
                self._changed()
            else:
                self._representative = pod

    def upsert(self, pod: PodInfo) -> bool:
        """Records a member; True when its timeout annotation timed the gang out just now."""
        was_timed_out = self._timed_out
        old = self.members.get(pod.uid)
        self.members[pod.uid] = pod
        working = _working(pod) - (_working(old) if old is not None else 0)
        self._working += working
        done = int(pod.phase == "Succeeded") - int(old is not None and old.phase == "Succeeded")
        self._done += done
        self._member_changed(old, pod)
        if pod.node_name and not pod.is_terminal and not self._timed_out:
            # A bound member: the gang was satisfied (by us before a restart, or just now).
            self._latch(GangState.SATISFIED)
        if is_timed_out(pod.annotations) and not self._satisfied:
            self._latch(GangState.TIMED_OUT)
            self._timed_out_members.add(pod.uid)
        if self._satisfied and (working or done) and not self._finished:
            minimum = self.spec.min_available or 0
            self._ran_whole = self._ran_whole or self._working >= minimum > 0
            self._finished = self._done >= minimum > 0
        return self._timed_out and not was_timed_out

    def remove(self, uid: str) -> bool:
        old = self.members.pop(uid, None)
        if old is None:
            return False
        self._working -= _working(old)
        self._done -= int(old.phase == "Succeeded")
        self._timed_out_members.discard(uid)
        if not self.members or (self._timed_out and not self._timed_out_members):
            # Nothing left that remembers the past (a restart would see a new gang): the next
            # members start afresh. This is how a user retries a timed-out gang: delete its
            # pods, and their replacements (a Job makes them at once) are scheduled anew.
            self._satisfied = self._satisfied and bool(self.members) and not self._timed_out
            self._ran_whole = self._ran_whole and bool(self.members) and not self._timed_out
            self._finished = self._finished and bool(self.members)
            self._timed_out = False
            self.first_attempt = None
            self.last_message = ""
        if self._representative is None or self._representative.uid == uid:
            self._changed()
        return True

    def set_podgroup(self, podgroup: PodGroupInfo | None) -> None:
        self.podgroup = podgroup
        self._changed()

    def mark_satisfied(self) -> None:
        self._latch(GangState.SATISFIED)

    def undo_satisfied(self) -> bool:
        """The batch that satisfied the gang was given up before any member was bound (its
        writes before binding failed): the gang is pending again, its members decided about
        whole, as after a restart. Refused (False) once a member is bound."""
        if not self._satisfied or self._timed_out:
            return False
        if any(p.node_name and not p.is_terminal for p in self.members.values()):
            return False
        if GangState.PENDING not in TRANSITIONS[GangState.SATISFIED]:
            raise GangTransitionError(f"gang {self.key}: satisfied -> pending is not allowed")
        self._satisfied = False
        self._ran_whole = self._finished = False
        return True

    def mark_timed_out(self) -> None:
        self._latch(GangState.TIMED_OUT)
        self._timed_out_members.update(
            uid for uid, pod in self.members.items() if not pod.node_name and not pod.is_terminal
        )

    def _latch(self, target: GangState) -> None:
        current = self.state
        if current is target:
            return
        allowed = TRANSITIONS[current]
        if current is GangState.INVALID and target is GangState.SATISFIED:
            allowed = allowed | {GangState.SATISFIED}  # bound before its spec was broken
        if target not in allowed:
            raise GangTransitionError(f"gang {self.key}: {current} -> {target} is not allowed")
        if target is GangState.SATISFIED:
            self._satisfied = True
        elif target is GangState.TIMED_OUT:
            self._timed_out = True


#: Finds the gangs a pod names, in the documented order of the gang APIs (the first wins):
#: which APIs are read is the registry's maker's choice (``gangapis.Resolve``).
GangResolver = Callable[[PodInfo], Sequence[GangRef]]


def _declared(ref: GangRef) -> tuple[str, str, str]:
    return (ref.min_label, ref.min_annotation, ref.named_by)


def _working(pod: PodInfo) -> int:
    """1 for a member bound and alive, or done; 0 otherwise."""
    if pod.phase == "Succeeded":
        return 1
    return int(bool(pod.node_name) and not pod.is_terminal and not pod.is_terminating)


class GangRegistry:
    """Every gang, keyed ``namespace/name``: one gang per name in a namespace, whatever API
    declares it. Group objects are kept per API; a gang uses the one of its own API.
    ``resolve`` finds the gangs a pod names (the gang APIs read)."""

    def __init__(
        self,
        default_waiting_time: float,
        waiting: WaitingPods | None = None,
        *,
        resolve: GangResolver,
    ) -> None:
        self._default_waiting_time = default_waiting_time
        self.waiting = waiting if waiting is not None else WaitingPods()
        self._resolve = resolve
        self._gangs: dict[str, Gang] = {}
        self._gang_of: dict[str, str] = {}
        self._podgroups: dict[tuple[str, str], PodGroupInfo] = {}
        #: Pods that name gangs in more than one API: uid -> the refs, the one used first.
        self.conflicts: dict[str, tuple[GangRef, ...]] = {}
        #: Gangs of gangs: the CompositePodGroups, and which PodGroups hang under them.
        self.composites = CompositeForest()
        #: Gangs whose group object's status may have changed since the statuses were last
        #: written: marked by whoever changes what a status says, taken by the status writer.
        self._touched: set[str] = set()
        self._timed_out_by_event: list[Gang] = []

    def touch(self, key: str) -> None:
        self._touched.add(key)

    @property
    def touched(self) -> frozenset[str]:
        """The gangs touched and not taken yet."""
        return frozenset(self._touched)

    def take_touched(self) -> list[str]:
        """The gangs touched since the last call, by key (and forgets them)."""
        keys = sorted(self._touched)
        self._touched.clear()
        return keys

    def get(self, key: str) -> Gang | None:
        return self._gangs.get(key)

    def gang_of(self, uid: str) -> Gang | None:
        key = self._gang_of.get(uid)
        return None if key is None else self._gangs.get(key)

    def gangs(self) -> Iterable[Gang]:
        return self._gangs.values()

    def _gang(self, ref: GangRef) -> Gang:
        gang = self._gangs.get(ref.key)
        if gang is None:
            gang = self._gangs[ref.key] = Gang(ref, self._default_waiting_time, self.waiting)
            gang.set_podgroup(self._podgroups.get((ref.api, ref.key)))
        elif gang.ref != ref and not gang.members:
            # Known so far from a group object only (or from other members, all gone): the
            # members say how it is declared.
            gang.ref = ref
            gang.set_podgroup(self._podgroups.get((ref.api, ref.key)))
        elif gang.ref == ref and _declared(gang.ref) != _declared(ref):
            # Same gang, first heard of from its object: the members say where the minimum
            # may be overridden and how they name the object.
            gang.ref = ref
            gang.set_podgroup(gang.podgroup)
        return gang

    def on_pod(self, pod: PodInfo) -> Gang | None:
        """Records one of our pods; returns its gang (None if it belongs to none)."""
        refs = self._resolve(pod)
        ref = refs[0] if refs else None
        if len(refs) > 1:
            self.conflicts[pod.uid] = tuple(refs)
        else:
            self.conflicts.pop(pod.uid, None)
        previous = self._gang_of.get(pod.uid)
        if previous is not None and (ref is None or ref.key != previous):
            self.on_pod_deleted(pod.uid)
        if ref is None:
            return None
        gang = self._gang(ref)
        if gang.upsert(pod):
            self._timed_out_by_event.append(gang)
        self._gang_of[pod.uid] = ref.key
        return gang

    def take_timed_out_by_event(self) -> list[Gang]:
        """Gangs a member's timeout annotation timed out since the last call (another leader
        timed them out, or a user did): their members still queued must leave the queue."""
        gangs, self._timed_out_by_event = self._timed_out_by_event, []
        return gangs

    def on_pod_deleted(self, uid: str) -> Gang | None:
        self.conflicts.pop(uid, None)
        key = self._gang_of.pop(uid, None)
        if key is None:
            return None
        gang = self._gangs.get(key)
        if gang is None:
            return None
        gang.remove(uid)
        self._drop_if_empty(gang)
        return gang

    def on_podgroup(self, podgroup: PodGroupInfo) -> Gang | None:
        """Records a group object; returns its gang (None when the gang of that name is
        declared in another API by its members: the object is kept, unused, meanwhile)."""
        self._podgroups[(podgroup.api, podgroup.key)] = podgroup
        gang = self._gangs.get(podgroup.key)
        if gang is None:
            ref = GangRef(podgroup.namespace, podgroup.name, GangSource.POD_GROUP, api=podgroup.api)
            gang = self._gang(ref)
        if gang.ref.api != podgroup.api:
            return None
        if gang.podgroup is not None and gang.podgroup.uid != podgroup.uid:
            # Deleted and made again: the new object has not been enqueued.
            gang.enqueued = False
            gang.enqueued_at = None
        gang.set_podgroup(podgroup)
        return gang

    def on_podgroup_status(self, podgroup: PodGroupInfo) -> None:
        """Records a new status of a known group object (its spec unchanged): the gang's spec
        does not depend on it, so nothing is worked out again."""
        self._podgroups[(podgroup.api, podgroup.key)] = podgroup
        gang = self._gangs.get(podgroup.key)
        if gang is not None and gang.ref.api == podgroup.api and gang.podgroup is not None:
            gang.podgroup = podgroup

    def podgroup(self, api: str, key: str) -> PodGroupInfo | None:
        return self._podgroups.get((api, key))

    def on_podgroup_deleted(self, key: str, api: str = KOORDINATOR) -> Gang | None:
        self._podgroups.pop((api, key), None)
        gang = self._gangs.get(key)
        if gang is not None and gang.ref.api == api:
            gang.set_podgroup(None)
            self._drop_if_empty(gang)
            return gang
        return None

    def _drop_if_empty(self, gang: Gang) -> None:
        if not gang.members and gang.podgroup is None:
            del self._gangs[gang.key]

    def group(self, gang: Gang) -> list[tuple[str, Gang | None]]:
        """The gangs of ``gang``'s GangGroup (itself included), by key; None where a gang named
        in the group has neither members nor a PodGroup yet."""
        return [(key, self._gangs.get(key)) for key in gang.spec.groups]
