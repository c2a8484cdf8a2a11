"""SchedulingQueue: active / backoff / unschedulable, with an explicit transition table."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from koordgang.model.dra import PodClaimRef
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.state.queue import (
    TRANSITIONS,
    QueuedPod,
    QueueState,
    QueueTransitionError,
    SchedulingQueue,
    SortKey,
)

T0 = 1000.0


def pod(
    name: str,
    *,
    priority: int = 0,
    created: str = "2024-01-01T00:00:00Z",
    namespace: str = "ns",
    cpu: str = "1",
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
) -> PodInfo:
    spec: dict[str, Any] = {
        "schedulerName": "koord-scheduler",
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return parse_pod(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{name}",
                "creationTimestamp": created,
                "labels": labels or {},
            },
            "spec": spec,
            "status": {"phase": "Pending"},
        }
    )


def by_priority_then_age(p: PodInfo) -> SortKey:
    return (-p.priority, p.creation_timestamp, p.namespace, p.name)


def by_priority_only(p: PodInfo) -> SortKey:
    return (-p.priority,)


def new_queue(**kwargs: float) -> SchedulingQueue:
    return SchedulingQueue(by_priority_then_age, **kwargs)


def pop_names(queue: SchedulingQueue, now: float = T0) -> list[str]:
    names = []
    while (entry := queue.pop(now)) is not None:
        names.append(entry.pod.name)
    return names


def parked(queue: SchedulingQueue, p: PodInfo, now: float = T0) -> QueuedPod:
    """Adds ``p``, pops it and requeues it as unschedulable (attempt 1: backoff 1 s)."""
    queue.add(p, now)
    entry = queue.pop(now)
    assert entry is not None and entry.pod.uid == p.uid
    queue.requeue(entry, now, unschedulable=True)
    assert entry.state is QueueState.UNSCHEDULABLE
    return entry


# -- ordering and popping --------------------------------------------------------------------


def test_pop_returns_none_when_the_queue_is_empty() -> None:
    queue = new_queue()
    assert queue.pop(T0) is None
    assert len(queue) == 0


@pytest.mark.parametrize(
    ("pods", "order"),
    [
        (
            [pod("low", priority=1), pod("high", priority=100), pod("mid", priority=10)],
            ["high", "mid", "low"],
        ),
        (
            [
                pod("young", created="2024-01-03T00:00:00Z"),
                pod("old", created="2024-01-01T00:00:00Z"),
                pod("middle", created="2024-01-02T00:00:00Z"),
            ],
            ["old", "middle", "young"],
        ),
        (
            [pod("b", namespace="z"), pod("c", namespace="a"), pod("a", namespace="z")],
            ["c", "a", "b"],
        ),
        (
            [
                pod("young-high", priority=5, created="2024-01-09T00:00:00Z"),
                pod("old-low", priority=0, created="2024-01-01T00:00:00Z"),
                pod("negative", priority=-10, created="2023-01-01T00:00:00Z"),
            ],
            ["young-high", "old-low", "negative"],
        ),
    ],
    ids=["priority", "age", "namespace then name", "priority beats age"],
)
def test_pods_pop_in_sort_key_order(pods: list[PodInfo], order: list[str]) -> None:
    queue = new_queue()
    for p in pods:
        queue.add(p, T0)
    assert pop_names(queue) == order


def test_pods_with_equal_keys_pop_first_in_first_out() -> None:
    queue = SchedulingQueue(by_priority_only)
    for name in ("first", "second", "third"):
        queue.add(pod(name), T0)
    queue.add(pod("urgent", priority=1), T0)
    assert pop_names(queue) == ["urgent", "first", "second", "third"]


def test_pop_moves_the_pod_in_flight_and_counts_the_attempt() -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    queue.add(pod("b"), T0)
    first = queue.pop(T0)
    second = queue.pop(T0)
    assert first is not None and second is not None
    assert (first.state, second.state) == (QueueState.IN_FLIGHT, QueueState.IN_FLIGHT)
    assert (first.attempts, second.attempts) == (1, 1)
    assert (first.popped_cycle, second.popped_cycle) == (1, 2)
    assert queue.scheduling_cycle == 2
    assert "uid-a" in queue  # still tracked while in flight
    assert queue.pop(T0) is None


def test_a_priority_change_while_active_reorders_the_pod() -> None:
    queue = new_queue()
    queue.add(pod("a", priority=10), T0)
    queue.add(pod("b", priority=5), T0)
    queue.add(pod("b", priority=50), T0 + 1)
    assert pop_names(queue) == ["b", "a"]


def test_a_newer_version_of_an_active_pod_replaces_it_without_duplicating_it() -> None:
    queue = new_queue()
    first = queue.add(pod("a"), T0)
    second = queue.add(pod("a", labels={"v": "2"}), T0 + 5)
    assert first is second
    assert second.enqueued_at == T0
    assert second.pod.labels == {"v": "2"}
    assert pop_names(queue) == ["a"]


# -- backoff ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempts", "seconds"),
    [(0, 1.0), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (6, 10.0), (100, 10.0)],
)
def test_backoff_doubles_from_one_second_up_to_ten(attempts: int, seconds: float) -> None:
    assert new_queue().backoff_duration(attempts) == seconds


@pytest.mark.parametrize(
    ("attempts", "seconds"), [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (9, 3.0)]
)
def test_backoff_follows_the_configured_initial_and_maximum(attempts: int, seconds: float) -> None:
    queue = new_queue(initial_backoff=0.5, max_backoff=3.0)
    assert queue.backoff_duration(attempts) == seconds


def test_a_failed_attempt_waits_out_its_backoff_before_popping_again() -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    entry = queue.pop(T0)
    assert entry is not None
    queue.requeue(entry, T0, unschedulable=False)

    assert entry.state is QueueState.BACKOFF
    assert entry.backoff_until == T0 + 1.0
    assert queue.next_wakeup(T0) == 1.0
    assert queue.pop(T0 + 0.99) is None
    assert queue.pop(T0 + 1.0) is entry
    assert entry.attempts == 2

    queue.requeue(entry, T0 + 1.0, unschedulable=False)
    assert entry.backoff_until == T0 + 3.0  # second failure: 2 s
    assert queue.next_wakeup(T0 + 2.5) == 0.5
    assert queue.pop(T0 + 2.9) is None
    assert queue.pop(T0 + 3.0) is entry


def test_next_wakeup_is_none_without_pods_in_backoff() -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    assert queue.next_wakeup(T0) is None


def test_a_pod_whose_backoff_passed_pops_by_sort_key_among_active_pods() -> None:
    queue = new_queue()
    queue.add(pod("important", priority=100), T0)
    entry = queue.pop(T0)
    assert entry is not None
    queue.requeue(entry, T0, unschedulable=False)
    queue.add(pod("ordinary"), T0)
    assert pop_names(queue, T0 + 1) == ["important", "ordinary"]


# -- unschedulable ---------------------------------------------------------------------------


def test_requeue_as_unschedulable_parks_the_pod() -> None:
    queue = new_queue()
    entry = parked(queue, pod("a"))
    assert entry.parked_at == T0
    assert entry.backoff_until == T0 + 1.0
    assert queue.pop(T0 + 30) is None
    assert queue.next_wakeup(T0) is None
    assert queue.depths()[QueueState.UNSCHEDULABLE] == 1


@pytest.mark.parametrize(
    ("moved_at", "state", "pops_at"),
    [
        # Its 1 s backoff has not passed: it waits in backoff first.
        (T0 + 0.5, QueueState.BACKOFF, T0 + 1.0),
        # Its backoff has passed: straight to active.
        (T0 + 1.0, QueueState.ACTIVE, T0 + 1.0),
        (T0 + 5.0, QueueState.ACTIVE, T0 + 5.0),
    ],
)
def test_a_cluster_event_releases_parked_pods_to_active_or_backoff(
    moved_at: float, state: QueueState, pops_at: float
) -> None:
    queue = new_queue()
    entry = parked(queue, pod("a"))
    assert queue.move_all_to_active_or_backoff(moved_at) == 1
    assert entry.state is state
    if state is QueueState.BACKOFF:
        assert queue.pop(pops_at - 0.01) is None
    assert queue.pop(pops_at) is entry


def test_a_cluster_event_leaves_active_backoff_and_in_flight_pods_alone() -> None:
    queue = new_queue()
    queue.add(pod("a-flying"), T0)
    queue.add(pod("b-backing-off"), T0)
    flying = queue.pop(T0)
    backing_off = queue.pop(T0)
    assert flying is not None and backing_off is not None
    assert (flying.pod.name, backing_off.pod.name) == ("a-flying", "b-backing-off")
    queue.requeue(backing_off, T0, unschedulable=False)
    queue.add(pod("c-active"), T0)

    assert queue.move_all_to_active_or_backoff(T0) == 0
    assert flying.state is QueueState.IN_FLIGHT
    assert backing_off.state is QueueState.BACKOFF
    assert queue.depths() == {
        QueueState.ACTIVE: 1,
        QueueState.BACKOFF: 1,
        QueueState.UNSCHEDULABLE: 0,
        QueueState.IN_FLIGHT: 1,
        QueueState.GONE: 0,
    }


def test_a_pod_whose_attempt_overlapped_a_cluster_event_goes_to_backoff_not_parked() -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    entry = queue.pop(T0)
    assert entry is not None
    # A node was added while the attempt was deciding; it may have made room.
    queue.move_all_to_active_or_backoff(T0 + 0.1)
    queue.requeue(entry, T0 + 0.2, unschedulable=True)

    assert entry.state is QueueState.BACKOFF
    assert queue.pop(T0 + 1.19) is None
    assert queue.pop(T0 + 1.2) is entry


def test_a_cluster_event_before_the_pop_does_not_save_the_pod_from_being_parked() -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    queue.move_all_to_active_or_backoff(T0)
    entry = queue.pop(T0 + 0.1)
    assert entry is not None
    queue.requeue(entry, T0 + 0.2, unschedulable=True)
    assert entry.state is QueueState.UNSCHEDULABLE


def test_an_event_during_another_pods_attempt_also_covers_earlier_pods_still_in_flight() -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    queue.add(pod("b"), T0)
    a = queue.pop(T0)
    b = queue.pop(T0)
    assert a is not None and b is not None
    queue.requeue(b, T0, unschedulable=True)  # b's attempt ended before the event
    queue.move_all_to_active_or_backoff(T0 + 0.1)  # releases b
    queue.requeue(a, T0 + 0.2, unschedulable=True)  # a's attempt overlapped it
    assert a.state is QueueState.BACKOFF
    assert b.state is QueueState.BACKOFF


@pytest.mark.parametrize(
    ("flushed_at", "moved", "state"),
    [
        (T0 + 59.9, 0, QueueState.UNSCHEDULABLE),
        (T0 + 60.0, 1, QueueState.ACTIVE),
        (T0 + 600.0, 1, QueueState.ACTIVE),
    ],
)
def test_parked_pods_are_flushed_after_the_retry_interval(
    flushed_at: float, moved: int, state: QueueState
) -> None:
    queue = new_queue()
    entry = parked(queue, pod("a"))
    assert queue.flush_unschedulable(flushed_at) == moved
    assert entry.state is state


def test_the_retry_interval_is_configurable() -> None:
    queue = new_queue(unschedulable_retry_interval=5.0)
    entry = parked(queue, pod("a"))
    assert queue.flush_unschedulable(T0 + 4.9) == 0
    assert queue.flush_unschedulable(T0 + 5.0) == 1
    assert queue.pop(T0 + 5.0) is entry


def test_updating_a_parked_pod_with_a_changed_shape_re_activates_it() -> None:
    queue = new_queue()
    entry = parked(queue, pod("a", cpu="64"))
    same = queue.add(pod("a", cpu="1"), T0 + 2)
    assert same is entry
    assert entry.state is QueueState.ACTIVE
    assert queue.pop(T0 + 2) is entry
    assert entry.pod.requests.get("cpu") == 1000


def test_updating_a_parked_pod_with_a_changed_shape_respects_its_backoff() -> None:
    queue = new_queue()
    entry = parked(queue, pod("a", cpu="64"))
    queue.add(pod("a", node_selector={"zone": "b"}), T0 + 0.5)
    assert entry.state is QueueState.BACKOFF
    assert queue.pop(T0 + 1.0) is entry


def test_a_parked_pod_told_the_claims_made_for_it_is_tried_again() -> None:
    queue = new_queue()
    waiting = replace(pod("a"), resource_claims=(PodClaimRef("gpu", template_name="t"),))
    entry = parked(queue, waiting)
    queue.add(replace(waiting, claim_statuses={"gpu": "a-gpu-x1"}), T0 + 2)
    assert entry.state is QueueState.ACTIVE


def test_updating_a_parked_pod_without_a_shape_change_keeps_it_parked() -> None:
    queue = new_queue()
    entry = parked(queue, pod("a"))
    queue.add(pod("a", labels={"touched": "yes"}), T0 + 5)
    assert entry.state is QueueState.UNSCHEDULABLE
    assert entry.pod.labels == {"touched": "yes"}
    assert queue.pop(T0 + 5) is None


# -- deletion --------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["active", "backoff", "unschedulable"])
def test_deleting_a_queued_pod_removes_it(where: str) -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    if where != "active":
        entry = queue.pop(T0)
        assert entry is not None
        queue.requeue(entry, T0, unschedulable=where == "unschedulable")
    deleted = queue.delete("uid-a")
    assert deleted is not None and deleted.state is QueueState.GONE
    assert "uid-a" not in queue
    assert queue.pop(T0 + 1000) is None
    assert queue.move_all_to_active_or_backoff(T0 + 1000) == 0
    assert queue.delete("uid-a") is None


@pytest.mark.parametrize("unschedulable", [True, False])
def test_a_pod_deleted_while_in_flight_is_not_requeued(unschedulable: bool) -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    entry = queue.pop(T0)
    assert entry is not None
    queue.delete("uid-a")
    assert entry.state is QueueState.GONE

    queue.requeue(entry, T0, unschedulable=unschedulable)

    assert entry.state is QueueState.GONE
    assert "uid-a" not in queue
    assert queue.pop(T0 + 1000) is None


def test_a_pod_deleted_while_in_flight_then_placed_leaves_the_queue_quietly() -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    entry = queue.pop(T0)
    assert entry is not None
    queue.delete("uid-a")

    queue.done(entry)  # the attempt placed it before learning of the deletion

    assert entry.state is QueueState.GONE
    assert "uid-a" not in queue


def test_a_pod_recreated_while_its_old_entry_is_in_flight_keeps_the_new_entry() -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    old = queue.pop(T0)
    assert old is not None
    queue.delete("uid-a")
    new = queue.add(pod("a"), T0 + 1)

    queue.requeue(old, T0 + 1, unschedulable=True)

    assert new is not old
    assert queue.get("uid-a") is new
    assert new.state is QueueState.ACTIVE
    assert queue.pop(T0 + 1) is new


def test_done_removes_a_placed_pod() -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    entry = queue.pop(T0)
    assert entry is not None
    queue.done(entry)
    assert entry.state is QueueState.GONE
    assert len(queue) == 0


# -- requeue helpers -------------------------------------------------------------------------


def test_a_pod_whose_binding_failed_comes_back_with_the_backoff_of_its_attempts() -> None:
    queue = new_queue()
    entry = queue.readd_after_failure(pod("a"), T0, attempts=3)
    assert entry.state is QueueState.BACKOFF
    assert entry.attempts == 3
    assert entry.backoff_until == T0 + 4.0
    assert queue.pop(T0 + 3.9) is None
    assert queue.pop(T0 + 4.0) is entry


@pytest.mark.parametrize("where", ["active", "backoff", "unschedulable"])
def test_take_pulls_a_specific_queued_pod_into_flight(where: str) -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    if where != "active":
        entry = queue.pop(T0)
        assert entry is not None
        queue.requeue(entry, T0, unschedulable=where == "unschedulable")
    taken = queue.take("uid-a")
    assert taken is not None
    assert taken.state is QueueState.IN_FLIGHT
    # Its old heap entries are stale: it does not pop a second time.
    assert queue.pop(T0 + 1000) is None
    assert queue.take("uid-a") is None
    assert queue.take("uid-unknown") is None


# -- activate ----------------------------------------------------------------------------------


def _backing_off(queue: SchedulingQueue, p: PodInfo) -> QueuedPod:
    queue.add(p, T0)
    entry = queue.pop(T0)
    assert entry is not None
    queue.requeue(entry, T0, unschedulable=False)  # backoff until T0 + 1
    assert entry.state is QueueState.BACKOFF
    return entry


@pytest.mark.parametrize("where", ["new", "active", "backoff", "unschedulable"])
def test_activate_makes_a_pod_active_at_once_wherever_it_waited(where: str) -> None:
    queue = new_queue()
    a = pod("a")
    if where == "active":
        queue.add(a, T0)
    elif where == "backoff":
        _backing_off(queue, a)
    elif where == "unschedulable":
        parked(queue, a)

    entry = queue.activate(a, T0 + 0.1)

    assert entry is queue.get("uid-a")
    assert entry.state is QueueState.ACTIVE
    assert queue.pop(T0 + 0.1) is entry  # before its backoff would have ended
    assert queue.pop(T0 + 1000) is None  # and only once: older heap entries are stale


def test_activate_takes_the_newer_version_of_the_pod() -> None:
    queue = new_queue()
    parked(queue, pod("a", priority=0))
    queue.add(pod("b", priority=5), T0)

    queue.activate(pod("a", priority=10), T0 + 1)

    assert pop_names(queue, T0 + 1) == ["a", "b"]


def test_activate_leaves_a_pod_in_flight_in_flight() -> None:
    queue = new_queue()
    queue.add(pod("a"), T0)
    entry = queue.pop(T0)
    assert entry is not None

    assert queue.activate(pod("a", priority=3), T0 + 1) is entry

    assert entry.state is QueueState.IN_FLIGHT
    assert entry.pod.priority == 3
    assert queue.pop(T0 + 1) is None


def test_activate_clears_the_backoff_wakeup() -> None:
    queue = new_queue()
    _backing_off(queue, pod("a"))
    assert queue.next_wakeup(T0) == 1.0

    queue.activate(pod("a"), T0)

    assert queue.next_wakeup(T0) is None


# -- the transition table --------------------------------------------------------------------

S = QueueState
ALLOWED = {
    (S.ACTIVE, S.ACTIVE),
    (S.ACTIVE, S.IN_FLIGHT),
    (S.ACTIVE, S.GONE),
    (S.IN_FLIGHT, S.ACTIVE),
    (S.IN_FLIGHT, S.BACKOFF),
    (S.IN_FLIGHT, S.UNSCHEDULABLE),
    (S.IN_FLIGHT, S.GONE),
    (S.BACKOFF, S.ACTIVE),
    (S.BACKOFF, S.IN_FLIGHT),
    (S.BACKOFF, S.GONE),
    (S.UNSCHEDULABLE, S.ACTIVE),
    (S.UNSCHEDULABLE, S.BACKOFF),
    (S.UNSCHEDULABLE, S.IN_FLIGHT),
    (S.UNSCHEDULABLE, S.GONE),
}
ALL_PAIRS = [(a, b) for a in QueueState for b in QueueState]


def test_the_transition_table_allows_exactly_the_documented_moves() -> None:
    table = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}
    assert table == ALLOWED


@pytest.mark.parametrize(("old", "new"), ALL_PAIRS, ids=[f"{a}->{b}" for a, b in ALL_PAIRS])
def test_moves_outside_the_table_raise_queue_transition_error(
    old: QueueState, new: QueueState
) -> None:
    entry = QueuedPod(pod=pod("a"), state=old, enqueued_at=T0)
    if (old, new) in ALLOWED:
        entry.move(new)
        assert entry.state is new
    else:
        with pytest.raises(QueueTransitionError, match=f"ns/a: {old} -> {new} is not allowed"):
            entry.move(new)
        assert entry.state is old


def test_requeueing_a_pod_that_was_never_popped_is_a_bug() -> None:
    queue = new_queue()
    entry = queue.add(pod("a"), T0)
    with pytest.raises(QueueTransitionError):
        queue.requeue(entry, T0, unschedulable=True)
