"""Pods of other schedulers are never touched, but their requests count."""

from __future__ import annotations

import time

from harness.daemon import Daemon
from harness.kube import Cluster, pod_body, scheduled_condition, wait_until


def test_foreign_pods_are_left_alone_and_their_requests_respected(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["shared-1", "shared-2"], {"cpu": "4", "memory": "16Gi"})
    # Another scheduler's pod, already placed (as a kubelet-bound static pod would be).
    cluster.create_pod(
        namespace,
        pod_body(
            "theirs-bound",
            scheduler="default-scheduler",
            requests={"cpu": "3500m"},
            node_name="shared-1",
        ),
    )
    # Another scheduler's pod that nobody schedules (no default scheduler runs here).
    cluster.create_pod(
        namespace, pod_body("theirs-pending", scheduler="other-scheduler", requests={"cpu": "1"})
    )
    wait_until(
        lambda: cluster.pod(namespace, "theirs-bound").status.phase == "Running",
        what="foreign pod running",
    )

    for i in range(3):
        cluster.create_pod(namespace, pod_body(f"ours-{i}", requests={"cpu": "1"}))

    def ours_settled() -> bool:
        pods = [cluster.pod(namespace, f"ours-{i}") for i in range(3)]
        return all(p.spec.node_name or scheduled_condition(p) for p in pods)

    wait_until(ours_settled, timeout=60, what="our pods bound or explained")
    nodes = sorted(cluster.pod(namespace, f"ours-{i}").spec.node_name or "" for i in range(3))
    # shared-1 has only 500m free: all three 1-cpu pods must be on shared-2... which has room for 4.
    assert nodes == ["shared-2", "shared-2", "shared-2"]

    time.sleep(2)  # give a misbehaving scheduler time to touch the foreign pod
    theirs = cluster.pod(namespace, "theirs-pending")
    assert theirs.spec.node_name is None
    assert scheduled_condition(theirs) is None
    assert cluster.events_for(namespace, "theirs-pending") == []
