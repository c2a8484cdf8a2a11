"""High availability: two daemons run for one Lease; only the leader schedules. Killing the
leader while a gang binds lets the other take over within the lease duration and finish the
gang whole; a SIGTERM'd leader hands over at once."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pytest

from controlplane import LocalControlPlane
from harness.daemon import LocalDaemon
from harness.invariants import (
    AuditLog,
    daemon_user_agent,
    describe_writes,
    pods_bound_twice,
    writes_by,
)
from harness.kube import Cluster, bound, pod_body, unique, wait_until
from harness.rbac import rbac_denials

pytestmark = pytest.mark.skipif(
    os.environ.get("KOORDGANG_E2E_DAEMON") == "deployment",
    reason="runs daemon processes of its own",
)

LEASE_SECONDS = 6


@pytest.fixture
def audit() -> AuditLog | None:
    """The local control plane's audit log from the start of the test; None on another cluster
    (KOORDGANG_E2E_KUBECONFIG), where the checks that read it are left out."""
    if os.environ.get("KOORDGANG_E2E_KUBECONFIG"):
        return None
    path = LocalControlPlane().state.audit_log
    assert path.exists(), "the local control plane runs with an audit log"
    return AuditLog(path)


def daemon(kubeconfig: str, tmp_path: Path, lease: str) -> LocalDaemon:
    """A daemon with the scheduler's own credentials; its Lease goes to the namespace of
    manifests/ (POD_NAMESPACE, as in the Deployment), the only one its Role covers."""
    return LocalDaemon(
        kubeconfig,
        tmp_path,
        "--leader-elect=true",
        f"--leader-elect-resource-name={lease}",
        f"--leader-elect-lease-duration={LEASE_SECONDS}s",
        "--leader-elect-renew-deadline=4s",
        "--leader-elect-retry-period=1s",
        # Few binds in flight: binding the gang takes long enough to kill the leader midway.
        "--bind-concurrency=2",
    )


def test_a_killed_leader_is_replaced_and_the_gang_ends_whole(
    clean_nodes: Cluster,
    namespace: str,
    scheduler_kubeconfig: str,
    tmp_path: Path,
    audit: AuditLog | None,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["ha-1", "ha-2"], {"cpu": "200", "memory": "400Gi", "pods": "500"})
    lease = unique("koordgang-ha")
    first, second = (
        daemon(scheduler_kubeconfig, tmp_path, lease),
        daemon(scheduler_kubeconfig, tmp_path, lease),
    )
    try:
        first.start()
        wait_until(lambda: first.role() == "leader", what="the first daemon leads")
        second.start()
        assert second.role() == "follower"

        size = 500
        annotations = {
            "gang.scheduling.koordinator.sh/name": "ha",
            "gang.scheduling.koordinator.sh/min-available": str(size),
        }
        for i in range(size):
            cluster.create_pod(
                namespace, pod_body(f"ha-{i}", requests={"cpu": "100m"}, annotations=annotations)
            )
        wait_until(lambda: len(bound(cluster.pods(namespace))) > 0, what="binding begins")
        killed_at = time.monotonic()
        first.kill()
        before = len(bound(cluster.pods(namespace)))
        assert before < size, "the gang was bound before the leader could be killed"

        def taken_over() -> bool:
            return second.role() == "leader"

        wait_until(taken_over, timeout=LEASE_SECONDS + 10, what="the second daemon leads")
        wait_until(
            lambda: len(bound(cluster.pods(namespace))) > before,
            timeout=LEASE_SECONDS + 30,
            what="the new leader binds",
        )
        first_bind = time.monotonic() - killed_at
        wait_until(
            lambda: len(bound(cluster.pods(namespace))) == size,
            timeout=120,
            what="the whole gang bound",
        )
        takeover = time.monotonic() - killed_at
        print(f"first bind by the new leader {first_bind:.1f} s after the kill; the gang "
              f"whole after {takeover:.1f} s ({before} of {size} bound before)")  # fmt: skip
        assert takeover < LEASE_SECONDS + 60

        # The killed one comes back as a follower; a SIGTERM'd leader hands over at once.
        first.start()
        assert first.role() == "follower"
        assert first.process is not None
        follower_agent = daemon_user_agent(first.process.pid)
        following_since = dt.datetime.now(dt.UTC)
        time.sleep(2)  # long enough for a follower to write, were it to
        following_until = dt.datetime.now(dt.UTC)
        stopped_at = time.monotonic()
        second.stop()
        wait_until(lambda: first.role() == "leader", timeout=LEASE_SECONDS, what="handover")
        assert time.monotonic() - stopped_at < LEASE_SECONDS
    finally:
        first.kill()
        second.kill()
    assert not rbac_denials(first.logs() + second.logs())
    if audit is not None:
        events = audit.events()
        # Two leaders bound the gang one after the other: none of its pods twice.
        assert pods_bound_twice(events) == {}
        # The restarted daemon wrote nothing while the other one held the lease.
        follower = writes_by(events, follower_agent, since=following_since, until=following_until)
        assert not follower, f"a follower wrote: {describe_writes(follower)}"


def test_a_follower_never_writes(
    clean_nodes: Cluster,
    namespace: str,
    scheduler_kubeconfig: str,
    tmp_path: Path,
    audit_log: AuditLog,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["quiet-1"], {"cpu": "8", "memory": "16Gi"})
    lease = unique("koordgang-quiet")
    leader, follower = (
        daemon(scheduler_kubeconfig, tmp_path, lease),
        daemon(scheduler_kubeconfig, tmp_path, lease),
    )
    try:
        leader.start()
        wait_until(lambda: leader.role() == "leader", what="the first daemon leads")
        follower.start()
        assert follower.role() == "follower"
        for i in range(10):
            cluster.create_pod(namespace, pod_body(f"quiet-{i}", requests={"cpu": "100m"}))
        cluster.create_pod(namespace, pod_body("too-big", requests={"cpu": "100"}))
        wait_until(lambda: len(bound(cluster.pods(namespace))) == 10, what="pods bound")
        time.sleep(3)  # writes (explanations, Events) settle
        assert leader.process is not None and follower.process is not None
        events = audit_log.events()
        # The bindings at least: the log does see our writes.
        assert len(writes_by(events, daemon_user_agent(leader.process.pid))) >= 10
        written = writes_by(events, daemon_user_agent(follower.process.pid))
        assert not written, f"a follower wrote: {describe_writes(written)}"
    finally:
        leader.kill()
        follower.kill()
    assert not rbac_denials(leader.logs() + follower.logs())
