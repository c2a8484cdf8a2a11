"""Start, stop, crash and restart: nothing double-booked, nothing lost, nothing written by kopf."""

from __future__ import annotations

import os
import signal
import time
import urllib.request
from collections import Counter

import pytest

from harness.daemon import DaemonFactory, LocalDaemon
from harness.invariants import kopf_marks_on_pods, overcommitted_nodes
from harness.kube import Cluster, bound, pending, pod_body, scheduled_condition, wait_until

local_only = pytest.mark.skipif(
    os.environ.get("KOORDGANG_E2E_DAEMON") == "deployment",
    reason="needs a daemon process of its own",
)


def _scheduled_events(cluster: Cluster, namespace: str) -> Counter[str]:
    events = cluster.core.list_namespaced_event(namespace).items
    return Counter(e.involved_object.name or "" for e in events if e.reason == "Scheduled")


def test_sigkill_and_restart_double_books_nothing(
    clean_nodes: Cluster, namespace: str, daemon_factory: DaemonFactory, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes([f"crash-{i}" for i in range(10)], {"cpu": "40", "memory": "160Gi"})
    # 600 pods of 1 cpu for 400 cpu of room: the cluster ends exactly full.
    for i in range(600):
        cluster.create_pod(
            namespace, pod_body(f"c-{i:03d}", requests={"cpu": "1", "memory": "1Gi"})
        )

    # One bind at a time keeps the first daemon busy long enough to be killed half-way.
    first = daemon_factory("--bind-concurrency", "1")
    first.start()
    wait_until(
        lambda: len(bound(cluster.pods(namespace))) >= 20,
        timeout=60,
        interval=0.05,
        what="some pods bound",
    )
    first.kill()
    after_kill = {p.metadata.name: p.spec.node_name for p in bound(cluster.pods(namespace))}
    assert 20 <= len(after_kill) < 400

    second = daemon_factory()
    second.start()
    wait_until(
        lambda: len(bound(cluster.pods(namespace))) == 400, timeout=90, what="the cluster full"
    )
    wait_until(
        lambda: all(scheduled_condition(p) for p in pending(cluster.pods(namespace))),
        timeout=60,
        what="the 200 leftovers explained",
    )
    time.sleep(1)
    pods = cluster.pods(namespace)
    assert len(bound(pods)) == 400
    assert overcommitted_nodes(cluster) == {}
    # Pods bound before the crash stayed where they were.
    for pod in pods:
        if pod.metadata.name in after_kill:
            assert pod.spec.node_name == after_kill[pod.metadata.name]
    per_node = Counter(p.spec.node_name for p in bound(pods))
    assert set(per_node.values()) == {40}
    # No pod was announced as scheduled twice; the second daemon announced what it bound
    # (the first may have lost a few announcements with the SIGKILL).
    announced = _scheduled_events(cluster, namespace)
    assert all(count == 1 for count in announced.values()), announced
    assert len(announced) >= 400 - len(after_kill)


@local_only
def test_sigterm_finishes_binds_in_flight_and_exits_cleanly(
    clean_nodes: Cluster, namespace: str, daemon_factory: DaemonFactory, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes([f"term-{i}" for i in range(5)], {"cpu": "100", "memory": "400Gi"})
    for i in range(300):
        cluster.create_pod(namespace, pod_body(f"t-{i:03d}", requests={"cpu": "100m"}))
    daemon = daemon_factory()
    assert isinstance(daemon, LocalDaemon)
    daemon.start()
    wait_until(lambda: len(bound(cluster.pods(namespace))) >= 1, timeout=60, what="binding started")
    daemon.stop()
    assert daemon.returncode == 0, daemon.logs()[-3000:]
    logs = daemon.logs()
    assert "scheduler stopped" in logs
    assert "binds cut off by shutdown" not in logs
    # Whatever it had assumed got bound: a restarted daemon finds every pod either bound or
    # pending and schedules the rest.
    second = daemon_factory()
    second.start()
    wait_until(lambda: len(bound(cluster.pods(namespace))) == 300, timeout=90, what="all 300 bound")


@local_only
def test_health_endpoints_and_metrics(
    clean_nodes: Cluster, namespace: str, daemon_factory: DaemonFactory
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["metrics-1"], {"cpu": "4", "memory": "4Gi"})
    daemon = daemon_factory()
    assert isinstance(daemon, LocalDaemon)
    daemon.start()
    base = f"http://127.0.0.1:{daemon.port}"
    for path in ("/healthz", "/readyz"):
        with urllib.request.urlopen(base + path, timeout=5) as reply:
            assert reply.status == 200
    cluster.create_pod(namespace, pod_body("fits", requests={"cpu": "1"}))
    cluster.create_pod(namespace, pod_body("too-big", requests={"cpu": "8"}))
    wait_until(lambda: cluster.pod(namespace, "fits").spec.node_name, what="bound")
    wait_until(lambda: scheduled_condition(cluster.pod(namespace, "too-big")), what="explained")
    text = daemon.metrics()
    # kube-scheduler's names and labels, so that its dashboards work.
    attempts = 'scheduler_schedule_attempts_total{profile="koord-scheduler",result='
    assert attempts + '"scheduled"} 1.0' in text
    assert attempts + '"unschedulable"}' in text
    assert 'scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"} 1.0' in text
    assert "scheduler_pod_scheduling_attempts_count 1.0" in text
    assert "koordgang_binding_duration_seconds_bucket" in text
    assert 'scheduler_pending_pods{queue="unschedulable"}' in text
    assert 'koordgang_gangs{phase="Satisfied"} 0.0' in text


def test_kopf_writes_nothing_to_pods(
    clean_nodes: Cluster, namespace: str, daemon_factory: DaemonFactory
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["hygiene-1"], {"cpu": "4", "memory": "4Gi"})
    daemon = daemon_factory()
    daemon.start()
    for i in range(5):
        cluster.create_pod(namespace, pod_body(f"h-{i}", requests={"cpu": "100m"}))
    cluster.create_pod(namespace, pod_body("h-waits", requests={"cpu": "64"}))
    wait_until(lambda: len(bound(cluster.pods(namespace))) == 5, what="bound")
    wait_until(lambda: scheduled_condition(cluster.pod(namespace, "h-waits")), what="explained")
    assert kopf_marks_on_pods(cluster) == []
    for pod in cluster.pods(namespace):
        assert not any("kopf" in (f or "") for f in (pod.metadata.finalizers or []))
        assert not any("kopf" in k for k in (pod.metadata.annotations or {}))
    kopf_events = [
        e
        for e in cluster.core.list_namespaced_event(namespace).items
        if (e.source and e.source.component == "kopf")
        or (e.reporting_component or "").startswith("kopf")
    ]
    assert kopf_events == []


@local_only
def test_a_second_signal_during_shutdown_prints_no_traceback(
    clean_nodes: Cluster, namespace: str, daemon_factory: DaemonFactory
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["twice-1"], {"cpu": "100", "memory": "400Gi"})
    for i in range(200):
        cluster.create_pod(namespace, pod_body(f"s-{i:03d}", requests={"cpu": "100m"}))
    daemon = daemon_factory()
    assert isinstance(daemon, LocalDaemon)
    daemon.start()
    wait_until(lambda: len(bound(cluster.pods(namespace))) >= 1, timeout=60, what="binding started")
    assert daemon.process is not None
    daemon.process.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    daemon.process.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    daemon.process.send_signal(signal.SIGINT)
    daemon.process.wait(timeout=30)
    logs = daemon.logs()
    assert "Traceback" not in logs, logs[-3000:]
    assert "scheduler stopped" in logs


@local_only
def test_a_daemon_whose_output_reader_went_away_schedules_and_stops_on_sigterm(
    clean_nodes: Cluster, namespace: str, daemon_factory: DaemonFactory
) -> None:
    """Its output piped to a reader that went away (every log line meets a broken pipe):
    lines are lost, scheduling and SIGTERM work as ever."""
    cluster = clean_nodes
    cluster.add_nodes(["pipe-1"], {"cpu": "10", "memory": "40Gi"})
    daemon = daemon_factory()
    assert isinstance(daemon, LocalDaemon)
    daemon.start(piped=True)
    assert daemon.process is not None and daemon.process.stdout is not None
    daemon.process.stdout.close()
    for i in range(5):
        cluster.create_pod(namespace, pod_body(f"p-{i}", requests={"cpu": "1"}))
    wait_until(lambda: len(bound(cluster.pods(namespace))) == 5, timeout=60, what="5 bound")
    daemon.stop()  # fails the test unless it exits within 30 s
    assert daemon.returncode == 0
