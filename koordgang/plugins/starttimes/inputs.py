"""What the start plan is made of, read from a cycle's snapshot: the room each node has, the
pods holding it with their time bounds, and the jobs waiting for it with theirs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from koordgang.model.job import JobInfo
from koordgang.model.node import NodeInfo
from koordgang.model.pod import PodInfo
from koordgang.model.resources import Resources
from koordgang.model.taints import first_untolerated
from koordgang.model.time_limits import LAG_SECONDS, free_by, job_key
from koordgang.state.snapshot import Snapshot
from koordgang.state.start_plan import Holder, Waiter

__all__ = ["WaitingJob", "holders", "job_of", "room", "waiter"]

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


def holders(
    snapshot: Snapshot, jobs: JobOf, now: float, nominated: Callable[[str], bool]
) -> list[Holder]:
    """Every pod counted on a node, with when its room is free at the latest. A pod
    nominated there and not bound yet (preemption's, the starvation guard's) starts when its
    room is made, which this plan does not know: its room has no known end. One placed by a
    cycle and about to bind starts now."""
    held: list[Holder] = []
    for node in snapshot.nodes:
        for pod in snapshot.pods_on(node):
            end = None if not pod.node_name and nominated(pod.uid) else free_by(pod, jobs(pod), now)
            held.append(Holder(pod.key, node.name, pod.requests, end))
    return held


def waiter(job: WaitingJob, nodes: Sequence[NodeInfo], jobs: JobOf) -> Waiter:
    """The plan's view of a waiting job: its members' requests, the nodes every member may go
    to, and when its room is free again once it starts. A member ends at its own deadline
    (counted from its start) or its Job's (whose clock already runs), whichever comes first;
    the job's room is free when the last member's is, taken here as the latest of each kind
    of bound (a member with none of a kind leaves the job without it): never earlier than
    it is."""
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
    return Waiter(
        job.key,
        tuple(p.requests for p in job.members),
        max(own) if len(own) == count else None,
        _eligible(job.members, nodes),
        max(by_job) if len(by_job) == count else None,
    )


def _eligible(members: Iterable[PodInfo], nodes: Sequence[NodeInfo]) -> frozenset[str] | None:
    """The nodes every member may go to as far as their labels, taints and state go (room
    aside); None when that is every node."""
    names = {
        node.name
        for node in nodes
        if node.ready and not node.unschedulable and all(_may_go(p, node) for p in members)
    }
    return None if len(names) == len(nodes) else frozenset(names)


def _may_go(pod: PodInfo, node: NodeInfo) -> bool:
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if pod.required_affinity is not None and not pod.required_affinity.matches(
        node.name, node.labels
    ):
        return False
    return first_untolerated(node.scheduling_taints, pod.tolerations) is None
