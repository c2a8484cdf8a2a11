"""Random operation sequences against SchedulingQueue: no pod is lost, duplicated or stuck."""

from __future__ import annotations

import random
from typing import Any

import pytest

from koordgang.model.pod import PodInfo, parse_pod
from koordgang.state.queue import QueuedPod, QueueState, SchedulingQueue, SortKey

NAMES = tuple(f"p{i}" for i in range(10))
STEPS = 400


def pod(name: str, priority: int, cpu: str) -> PodInfo:
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    return parse_pod({"metadata": {"name": name, "namespace": "q", "uid": name}, "spec": spec})


def sort_key(p: PodInfo) -> SortKey:
    return (-p.priority, p.name)


class Driver:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.queue = SchedulingQueue(sort_key)
        self.now = 0.0
        #: Entries popped (or taken) whose attempt has not finished yet. A pod deleted and
        #: added again meanwhile has a new entry, so one uid may appear twice here.
        self.in_flight: list[QueuedPod] = []
        #: id(entry) -> (entry, earliest time pop may return it: the backoff of its last
        #: failure). The entry is kept so that its id is not reused by another one.
        self.not_before: dict[int, tuple[QueuedPod, float]] = {}
        self.log: list[str] = []

    def random_pod(self, name: str) -> PodInfo:
        return pod(name, self.rng.choice((0, 0, 5, 10)), self.rng.choice(("1", "2")))

    def step(self) -> None:
        rng, queue = self.rng, self.queue
        name = rng.choice(NAMES)
        action = rng.choice(
            (
                "add",
                "add",
                "activate",
                "pop",
                "pop",
                "take",
                "finish",
                "finish",
                "delete",
                "move",
                "flush",
                "tick",
            )
        )
        self.log.append(f"t={self.now:.1f} {action} {name}")
        if action == "add":
            queue.add(self.random_pod(name), self.now)
        elif action == "activate":
            # To the active queue at once, whatever backoff it was serving.
            entry = queue.activate(self.random_pod(name), self.now)
            self.not_before[id(entry)] = (entry, 0.0)
        elif action in ("pop", "take"):
            taken = queue.pop(self.now) if action == "pop" else queue.take(name)
            if taken is not None:
                if action == "pop":
                    _, earliest = self.not_before.get(id(taken), (taken, 0.0))
                    assert self.now >= earliest, self.where()
                assert taken.state is QueueState.IN_FLIGHT
                assert queue.get(taken.pod.uid) is taken
                assert all(e is not taken for e in self.in_flight), self.where()
                self.in_flight.append(taken)
        elif action == "finish":
            if not self.in_flight:
                return
            entry = self.in_flight.pop(rng.randrange(len(self.in_flight)))
            how = rng.choice(("done", "unschedulable", "backoff", "bind-failed"))
            self.log[-1] += f" {entry.pod.uid} {how}"
            if how == "done":
                queue.done(entry)
            elif how == "bind-failed":
                # Placed, then its binding failed: back with backoff if it still exists.
                deleted = queue.get(entry.pod.uid) is not entry
                queue.done(entry)
                if not deleted:
                    again = queue.readd_after_failure(entry.pod, self.now, entry.attempts)
                    assert again.state is QueueState.BACKOFF, self.where()
                    self.not_before[id(again)] = (again, again.backoff_until)
            else:
                queue.requeue(entry, self.now, unschedulable=how == "unschedulable")
                self.not_before[id(entry)] = (entry, entry.backoff_until)
        elif action == "delete":
            queue.delete(name)
            # An in-flight entry stays with its attempt, which finishes it later.
        elif action == "move":
            queue.move_all_to_active_or_backoff(self.now)
        elif action == "flush":
            queue.flush_unschedulable(self.now)
        else:
            self.now += rng.choice((0.1, 0.5, 1.0, 3.0, 30.0))

    def where(self) -> str:
        return "\n".join(self.log[-12:])

    def check(self) -> None:
        queue = self.queue
        depths = queue.depths()
        assert sum(depths.values()) == len(queue), self.where()
        assert depths[QueueState.GONE] == 0, self.where()
        flying = {e.pod.uid for e in queue.entries() if e.state is QueueState.IN_FLIGHT}
        # Every in-flight entry the queue knows is one an attempt holds.
        live = [e for e in self.in_flight if queue.get(e.pod.uid) is e]
        assert flying == {e.pod.uid for e in live}, self.where()
        assert len(live) == len(flying), self.where()
        for entry in self.in_flight:
            if queue.get(entry.pod.uid) is entry:
                assert entry.state is QueueState.IN_FLIGHT, self.where()
            else:
                assert entry.state is QueueState.GONE, self.where()

    def drain(self) -> None:
        """Finishes every attempt, releases every parked pod, and pops all: each exactly once."""
        queue = self.queue
        for entry in self.in_flight:
            queue.requeue(entry, self.now, unschedulable=True)
        self.in_flight.clear()
        waiting = {e.pod.uid for e in queue.entries()}
        self.now += 1000.0
        queue.move_all_to_active_or_backoff(self.now)
        popped = []
        while (left := queue.pop(self.now)) is not None:
            popped.append(left)
        assert sorted(e.pod.uid for e in popped) == sorted(waiting), self.where()
        keys = [sort_key(e.pod) for e in popped]
        assert keys == sorted(keys), self.where()
        assert queue.next_wakeup(self.now) is None
        # The popped pods are now in flight; later steps finish them.
        self.in_flight = popped


@pytest.mark.parametrize("seed", range(20))
def test_random_queue_operations_never_lose_duplicate_or_strand_a_pod(seed: int) -> None:
    driver = Driver(seed)
    for index in range(STEPS):
        driver.step()
        driver.check()
        if index % 100 == 99:
            driver.drain()
            driver.check()
    driver.drain()
