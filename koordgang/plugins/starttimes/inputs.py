"""What the start plan is made of, read from a cycle's snapshot: the room each node has, the
pods holding it with their time bounds, and the jobs waiting for it with theirs."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from koordgang.model.job import JobInfo
from koordgang.model.node import NodeInfo
from koordgang.model.pod import PodInfo
from koordgang.model.resources import Resources
from koordgang.model.taints import first_untolerated
from koordgang.model.time_limits import LAG_SECONDS, free_by, job_key, overdue, steady_until
from koordgang.state.snapshot import Snapshot
from koordgang.state.start_plan import Holder, Waiter

__all__ = ["Eligible", "Holders", "WaitingJob", "job_of", "room", "waiter"]

#: The Job a pod belongs to, if the daemon knows it.
JobOf = Callable[[PodInfo], JobInfo | None]


@dataclass(slots=True)
class WaitingJob:
    """A job seen waiting for room: its members still to place, its place in the queue."""

    key: str
    priority: int
    #: When it was made (its oldest member's creation): the queue's order within a priority.
    created: float
    members: tuple[PodInfo, ...]
    #: Monotonic seconds it was last seen waiting.
    seen: float


def job_of(jobs: Callable[[str], JobInfo | None]) -> JobOf:
    def find(pod: PodInfo) -> JobInfo | None:
        key = job_key(pod)
        return jobs(key) if key is not None else None

    return find


def room(snapshot: Snapshot) -> dict[str, Resources]:
    """Each node's allocatable (a node without its object has none)."""
    return {
        node.name: node.info.allocatable if node.info is not None else Resources.EMPTY
        for node in snapshot.nodes
    }


@dataclass(frozen=True, slots=True)
class _Read:
    """A pod's holder as last read, and what it was read from."""

    pod: PodInfo
    job: JobInfo | None
    nominated: bool
    holder: Holder
    #: Wall-clock time up to which the same reading gives the same holder.
    until: float


class Holders:
    """Every pod counted on a node, with when its room is free at the latest, read for each
    plan. A pod whose object, Job and nomination are those of the last plan, and whose bound
    does not follow the clock yet (``steady_until``), keeps the holder read then: at 100,000
    running pods, working out each bound again was most of a plan's reading on the loop."""

    def __init__(self) -> None:
        self._read: dict[str, _Read] = {}

    def read(
        self, snapshot: Snapshot, jobs: JobOf, now: float, nominated: Callable[[str], bool]
    ) -> list[Holder]:
        """A pod nominated to a node and not bound yet (preemption's, the starvation
        guard's) starts when its room is made, which the plan does not know: its room has no
        known end. One placed by a cycle and about to bind starts now."""
        last = self._read
        kept: dict[str, _Read] = {}
        held: list[Holder] = []
        for node in snapshot.nodes:
            name = node.name
            for pod in snapshot.pods_on(node):
                job = jobs(pod)
                waits = not pod.node_name and nominated(pod.uid)
                read = last.get(pod.uid)
                if (
                    read is None
                    or read.pod is not pod
                    or read.job is not job
                    or read.nominated is not waits
                    or read.holder.node != name
                    or read.until < now
                ):
                    read = _read(pod, job, waits, name, now)
                kept[pod.uid] = read
                held.append(read.holder)
        self._read = kept
        return held


def _read(pod: PodInfo, job: JobInfo | None, waits: bool, node: str, now: float) -> _Read:
    if waits:
        return _Read(pod, job, waits, Holder(pod.key, node, pod.requests, None), float("inf"))
    end = free_by(pod, job, now)
    late = end is not None and overdue(pod, job, now)
    holder = Holder(pod.key, node, pod.requests, end, late)
    return _Read(pod, job, waits, holder, steady_until(pod, job, now))


def waiter(job: WaitingJob, eligible: Eligible, jobs: JobOf) -> Waiter:
    """The plan's view of a waiting job: its members' requests, the nodes each may go to (one
    set for all when they agree), and when its room is free again once it starts. A member
    ends at its own deadline (counted from its start) or its Job's (whose clock already
    runs), whichever comes first; the job's room is free when the last member's is, taken
    here as the latest of each kind of bound (a member with none of a kind leaves the job
    without it): never earlier than it is."""
    own: list[float] = []
    by_job: list[float] = []
    for pod in job.members:
        grace = pod.grace_seconds + LAG_SECONDS
        if pod.active_deadline_seconds is not None:
            own.append(pod.active_deadline_seconds + grace)
        owner = jobs(pod)
        if (
            owner is not None
            and owner.active_deadline_seconds is not None
            and owner.start_time is not None
            and not owner.suspended
        ):
            by_job.append(owner.start_time + owner.active_deadline_seconds + grace)
    count = len(job.members)
    each = tuple(eligible.nodes_for([pod]) for pod in job.members)
    alike = len(set(each)) <= 1
    return Waiter(
        job.key,
        tuple(p.requests for p in job.members),
        max(own) if len(own) == count else None,
        each[0] if alike and each else None,
        max(by_job) if len(by_job) == count else None,
        member_nodes=() if alike else each,
    )


class Eligible:
    """The nodes a pod may go to as far as its labels, taints and the nodes' state go (room
    aside), worked out once per plan for each kind of constraint: most pods of a queue share
    theirs (none), and a node looked at for each member of each job was most of a plan."""

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self._nodes = nodes
        self._known: dict[Hashable, frozenset[str]] = {}

    def nodes_for(self, members: Iterable[PodInfo]) -> frozenset[str] | None:
        """The nodes every member may go to; None when that is every node."""
        names: frozenset[str] | None = None
        for kind in {_constraints(pod) for pod in members}:
            found = self._known.get(kind)
            if found is None:
                found = self._known[kind] = frozenset(
                    node.name
                    for node in self._nodes
                    if node.ready and not node.unschedulable and _may_go(kind, node)
                )
            names = found if names is None else names & found
        return None if names is None or len(names) == len(self._nodes) else names


_Constraints = tuple[tuple[tuple[str, str], ...], Any, tuple[Any, ...]]


def _constraints(pod: PodInfo) -> _Constraints:
    return (tuple(sorted(pod.node_selector.items())), pod.required_affinity, pod.tolerations)


def _may_go(kind: _Constraints, node: NodeInfo) -> bool:
    selector, affinity, tolerations = kind
    if any(node.labels.get(k) != v for k, v in selector):
        return False
    if affinity is not None and not affinity.matches(node.name, node.labels):
        return False
    return first_untolerated(node.scheduling_taints, tolerations) is None
