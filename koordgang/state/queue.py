"""The scheduling queue: pods of ours waiting for a scheduling attempt.

Three parts, as in kube-scheduler:
- *active*: ready to be tried, ordered by the queue-sort plugin's key;
- *backoff*: failed recently, ready again once their backoff has passed;
- *unschedulable*: failed for a reason that only a change in the cluster can lift; moved back
  when such a change happens (node added or changed, a pod gone), or after a while anyway.

A pod's lifecycle in the queue is a small state machine (see ``TRANSITIONS``); anything else is a
bug and raises. Time is passed in, so that all of this is testable without a clock.
"""

from __future__ import annotations

import enum
import heapq
import itertools
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

from koordgang.model.pod import PodInfo

SortKey = tuple[Any, ...]


class QueueState(enum.StrEnum):
    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    #: Popped; a scheduling attempt is deciding about it.
    IN_FLIGHT = "in-flight"
    #: Left the queue: scheduled, deleted, or no longer ours.
    GONE = "gone"


TRANSITIONS: dict[QueueState, frozenset[QueueState]] = {
    QueueState.ACTIVE: frozenset({QueueState.IN_FLIGHT, QueueState.GONE, QueueState.ACTIVE}),
    QueueState.IN_FLIGHT: frozenset(
        {QueueState.ACTIVE, QueueState.BACKOFF, QueueState.UNSCHEDULABLE, QueueState.GONE}
    ),
    QueueState.BACKOFF: frozenset({QueueState.ACTIVE, QueueState.IN_FLIGHT, QueueState.GONE}),
    QueueState.UNSCHEDULABLE: frozenset(
        {QueueState.ACTIVE, QueueState.BACKOFF, QueueState.IN_FLIGHT, QueueState.GONE}
    ),
    QueueState.GONE: frozenset(),
}


class QueueTransitionError(RuntimeError):
    pass


@dataclass(slots=True)
class QueuedPod:
    pod: PodInfo
    state: QueueState
    #: When the pod first entered the queue (for end-to-end latency).
    enqueued_at: float
    attempts: int = 0
    #: Scheduling cycle in which it was last popped.
    popped_cycle: int = 0
    #: When it may leave backoff.
    backoff_until: float = 0.0
    #: When it was parked as unschedulable.
    parked_at: float = 0.0
    #: Retry it, if parked, at this moment (a plugin's verdict changes then), not later.
    retry_at: float | None = None
    #: Version of its entries in the heaps; older heap entries are stale and skipped.
    seq: int = 0

    def move(self, new: QueueState) -> None:
        if new not in TRANSITIONS[self.state]:
            raise QueueTransitionError(f"{self.pod.key}: {self.state} -> {new} is not allowed")
        self.state = new


class SchedulingQueue:
    def __init__(
        self,
        sort_key: Callable[[PodInfo], SortKey],
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        unschedulable_retry_interval: float = 60.0,
    ) -> None:
        self._sort_key = sort_key
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._retry_interval = unschedulable_retry_interval
        self._entries: dict[str, QueuedPod] = {}
        self._active: list[tuple[SortKey, int, str]] = []
        self._backoff: list[tuple[float, int, str]] = []
        self._seq = itertools.count(1)
        #: Counts pops; a cluster event records the cycle it happened in, so that a pod whose
        #: attempt overlapped the event is retried soon instead of parked.
        self.scheduling_cycle = 0
        self._move_request_cycle = -1

    # -- feeding -----------------------------------------------------------------------------

    def add(self, pod: PodInfo, now: float) -> QueuedPod:
        """A new pod of ours, or a newer version of one already queued."""
        entry = self._entries.get(pod.uid)
        if entry is None or entry.state is QueueState.GONE:
            entry = QueuedPod(pod=pod, state=QueueState.ACTIVE, enqueued_at=now)
            self._entries[pod.uid] = entry
            self._push_active(entry)
            return entry
        old = entry.pod
        entry.pod = pod
        if entry.state is QueueState.ACTIVE and self._sort_key(old) != self._sort_key(pod):
            self._push_active(entry)
        elif entry.state is QueueState.UNSCHEDULABLE and (
            old.shape != pod.shape or old.claim_statuses != pod.claim_statuses
        ):
            # The pod itself changed in a way that may let it fit now (its spec, or the
            # resourceclaim controller named the claims it made for it).
            self._to_active_or_backoff(entry, now)
        return entry

    def activate(self, pod: PodInfo, now: float) -> QueuedPod:
        """A pod that may be schedulable now (a plugin said so): to the active queue at once,
        whether it was new, parked or backing off."""
        entry = self.add(pod, now)
        if entry.state in (QueueState.UNSCHEDULABLE, QueueState.BACKOFF):
            entry.move(QueueState.ACTIVE)
            self._push_active(entry)
        return entry

    def readd_after_failure(self, pod: PodInfo, now: float, attempts: int) -> QueuedPod:
        """A pod that was placed but whose binding failed: back, with backoff."""
        entry = QueuedPod(pod=pod, state=QueueState.IN_FLIGHT, enqueued_at=now)
        entry.attempts = attempts
        self._entries[pod.uid] = entry
        self.requeue(entry, now, unschedulable=False)
        return entry

    def delete(self, uid: str) -> QueuedPod | None:
        entry = self._entries.pop(uid, None)
        if entry is not None and entry.state is not QueueState.GONE:
            entry.move(QueueState.GONE)
        return entry

    # -- popping -----------------------------------------------------------------------------

    def pop(self, now: float) -> QueuedPod | None:
        """The best active pod, or None if there is none right now."""
        self.flush_backoff(now)
        while self._active:
            _, seq, uid = heapq.heappop(self._active)
            entry = self._entries.get(uid)
            if entry is None or entry.seq != seq or entry.state is not QueueState.ACTIVE:
                continue
            self._take(entry)
            return entry
        return None

    def take(self, uid: str) -> QueuedPod | None:
        """Pulls a specific queued pod into flight (used to schedule a gang together)."""
        entry = self._entries.get(uid)
        if entry is None or entry.state in (QueueState.IN_FLIGHT, QueueState.GONE):
            return None
        self._take(entry)
        return entry

    def _take(self, entry: QueuedPod) -> None:
        entry.move(QueueState.IN_FLIGHT)
        entry.seq = 0
        self.scheduling_cycle += 1
        entry.popped_cycle = self.scheduling_cycle
        entry.attempts += 1

    # -- after an attempt --------------------------------------------------------------------

    def done(self, entry: QueuedPod) -> None:
        """The pod was placed: it leaves the queue (it may have been deleted meanwhile)."""
        if entry.state is QueueState.GONE:
            return
        entry.move(QueueState.GONE)
        if self._entries.get(entry.pod.uid) is entry:
            del self._entries[entry.pod.uid]

    def requeue(self, entry: QueuedPod, now: float, *, unschedulable: bool) -> None:
        """Back after a failed attempt: parked if only a cluster change can help, else backoff."""
        if self._entries.get(entry.pod.uid) is not entry:
            # Deleted while in flight.
            if entry.state is QueueState.IN_FLIGHT:
                entry.move(QueueState.GONE)
            return
        overlapped = self._move_request_cycle >= entry.popped_cycle
        entry.backoff_until = now + self.backoff_duration(entry.attempts)
        if unschedulable and not overlapped:
            entry.move(QueueState.UNSCHEDULABLE)
            entry.parked_at = now
        else:
            entry.move(QueueState.BACKOFF)
            entry.seq = next(self._seq)
            heapq.heappush(self._backoff, (entry.backoff_until, entry.seq, entry.pod.uid))

    def backoff_duration(self, attempts: int) -> float:
        exponent = max(0, attempts - 1)
        return min(self._max_backoff, self._initial_backoff * float(2 ** min(exponent, 30)))

    # -- cluster events ----------------------------------------------------------------------

    def move_all_to_active_or_backoff(self, now: float) -> int:
        """Something changed that may let parked pods fit: retry them (after backoff)."""
        self._move_request_cycle = self.scheduling_cycle
        moved = 0
        for entry in list(self._entries.values()):
            if entry.state is QueueState.UNSCHEDULABLE:
                self._to_active_or_backoff(entry, now)
                moved += 1
        return moved

    def flush_backoff(self, now: float) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            _, seq, uid = heapq.heappop(self._backoff)
            entry = self._entries.get(uid)
            if entry is None or entry.seq != seq or entry.state is not QueueState.BACKOFF:
                continue
            entry.move(QueueState.ACTIVE)
            self._push_active(entry)

    def flush_unschedulable(self, now: float) -> int:
        """Parked pods are retried now and then even without an event, in case one was missed,
        and at the moment a plugin asked for (``retry_at``)."""
        moved = 0
        for entry in list(self._entries.values()):
            if entry.state is not QueueState.UNSCHEDULABLE:
                continue
            due = entry.retry_at is not None and entry.retry_at <= now
            if due or now - entry.parked_at >= self._retry_interval:
                entry.retry_at = None
                self._to_active_or_backoff(entry, now)
                moved += 1
        return moved

    def retry_at(self, uid: str, when: float) -> None:
        """Retry ``uid`` at ``when`` if it is parked then (the earliest of such requests)."""
        entry = self._entries.get(uid)
        if entry is not None and (entry.retry_at is None or when < entry.retry_at):
            entry.retry_at = when

    def next_wakeup(self, now: float) -> float | None:
        """Seconds until the earliest backoff expires, if any."""
        while self._backoff:
            until, seq, uid = self._backoff[0]
            entry = self._entries.get(uid)
            if entry is None or entry.seq != seq or entry.state is not QueueState.BACKOFF:
                heapq.heappop(self._backoff)
                continue
            return max(0.0, until - now)
        return None

    def _to_active_or_backoff(self, entry: QueuedPod, now: float) -> None:
        if entry.backoff_until > now:
            entry.move(QueueState.BACKOFF)
            entry.seq = next(self._seq)
            heapq.heappush(self._backoff, (entry.backoff_until, entry.seq, entry.pod.uid))
        else:
            entry.move(QueueState.ACTIVE)
            self._push_active(entry)

    def _push_active(self, entry: QueuedPod) -> None:
        entry.seq = next(self._seq)
        heapq.heappush(self._active, (self._sort_key(entry.pod), entry.seq, entry.pod.uid))

    # -- inspection --------------------------------------------------------------------------

    def get(self, uid: str) -> QueuedPod | None:
        return self._entries.get(uid)

    def __contains__(self, uid: Hashable) -> bool:
        return uid in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> Iterator[QueuedPod]:
        return iter(self._entries.values())

    def depths(self) -> dict[QueueState, int]:
        counts = dict.fromkeys(QueueState, 0)
        for entry in self._entries.values():
            counts[entry.state] += 1
        return counts
