"""What the watches record, from the objects the API server sends (no cluster)."""

from __future__ import annotations

from typing import Any, cast

from bench.cluster import BenchCluster
from bench.watch import BindWatcher, ScheduledEvents


def test_a_pod_counts_once_when_first_seen_bound() -> None:
    watcher = BindWatcher(cast(BenchCluster, None), "ns")
    watcher._record({"metadata": {"name": "p-1"}, "spec": {}}, 1.0)
    watcher._record({"metadata": {"name": "p-1"}, "spec": {"nodeName": "n-1"}}, 2.0)
    watcher._record({"metadata": {"name": "p-1"}, "spec": {"nodeName": "n-1"}}, 3.0)
    assert (watcher.count, watcher.last_bind(), watcher.node_of) == (1, 2.0, {"p-1": "n-1"})
    assert watcher.path == "/api/v1/namespaces/ns/pods"


def test_a_pods_scheduled_event_counts_once_and_other_objects_events_not_at_all() -> None:
    events = ScheduledEvents(cast(BenchCluster, None), "ns")
    assert (events.path, events.selector) == ("/api/v1/namespaces/ns/events", "reason=Scheduled")

    def event(kind: str, name: str) -> dict[str, Any]:
        return {"reason": "Scheduled", "involvedObject": {"kind": kind, "name": name}}

    events._record(event("Pod", "p-1"), 1.0)
    events._record(event("Pod", "p-1"), 2.0)  # a second Event for one pod
    events._record(event("PodGroup", "g-1"), 3.0)
    events._record(event("Pod", "p-2"), 4.0)
    assert events.bound_at == {"p-1": 1.0, "p-2": 4.0}
