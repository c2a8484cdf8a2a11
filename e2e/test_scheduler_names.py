"""One daemon answering to two scheduler names on a real API server: its own, and the name an
operator hard-codes (KubeRay's scheduler-plugins mode writes `scheduler-plugins-scheduler` on
every pod of a RayCluster, with a `scheduling.x-k8s.io` PodGroup)."""

from __future__ import annotations

from typing import Any

from harness.gangs import X_K8S, X_K8S_LABEL, declaration, wait_explained
from harness.kube import Cluster, pod_body, scheduled_by, wait_until

OURS = "koord-scheduler"
HARD_CODED = "scheduler-plugins-scheduler"


def bound_nodes(cluster: Cluster, namespace: str, names: list[str]) -> dict[str, str] | None:
    nodes = {name: cluster.pod(namespace, name).spec.node_name for name in names}
    return nodes if all(nodes.values()) else None


def test_one_daemon_serves_two_names_and_a_gang_split_between_them_waits_and_says_why(
    clean_nodes: Cluster, namespace: str, daemon_factory: Any, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["names-1", "names-2"], {"cpu": "8", "memory": "16Gi"})
    daemon = daemon_factory("--scheduler-name", OURS, "--scheduler-name", HARD_CODED)
    daemon.start()

    # A RayCluster as KubeRay makes it: a PodGroup of head + workers, every pod naming
    # scheduler-plugins' scheduler.
    cluster.custom.create_namespaced_custom_object(
        *X_K8S,
        namespace,
        "podgroups",
        {
            "apiVersion": f"{X_K8S[0]}/{X_K8S[1]}",
            "kind": "PodGroup",
            "metadata": {"name": "ray"},
            "spec": {"minMember": 3},
        },
    )
    ray = ["ray-head", "ray-worker-0", "ray-worker-1"]
    for name in ray:
        body = pod_body(
            name, requests={"cpu": "2"}, scheduler=HARD_CODED, labels={X_K8S_LABEL: "ray"}
        )
        cluster.create_pod(namespace, body)
    cluster.create_pod(namespace, pod_body("plain", requests={"cpu": "1"}))

    # A gang whose members name both: none binds, each says why.
    labels, annotations = declaration("annotations", "mixed", "3")
    for i, scheduler in enumerate((OURS, OURS, HARD_CODED)):
        body = pod_body(
            f"mixed-{i}",
            requests={"cpu": "1"},
            scheduler=scheduler,
            labels=labels,
            annotations=annotations,
        )
        cluster.create_pod(namespace, body)

    wait_until(lambda: bound_nodes(cluster, namespace, [*ray, "plain"]), what="ray and plain bound")
    assert scheduled_by(cluster, namespace, "ray-head") == {HARD_CODED}
    assert scheduled_by(cluster, namespace, "plain") == {OURS}
    messages = wait_explained(
        cluster,
        namespace,
        ["mixed-0", "mixed-1", "mixed-2"],
        [
            "members name different schedulers",
            f"{OURS} (2), {HARD_CODED} (1)",
        ],
    )
    assert len(messages) == 3
