"""Constraints that look at other pods, and scheduling gates, as users of any scheduler expect
them: required pod anti-affinity, topology spreading over a gang, gated pods."""

from __future__ import annotations

from collections import Counter
from typing import Any

from harness.daemon import Daemon
from harness.gangs import Gang
from harness.kube import (
    Cluster,
    bound,
    metadata,
    name_of,
    pod_body,
    scheduled_condition,
    wait_until,
)

ZONE = "topology.kubernetes.io/zone"


def _anti_affinity(app: str, topology_key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": topology_key}
            ]
        }
    }


def _condition(cluster: Cluster, namespace: str, name: str) -> Any:
    return wait_until(
        lambda: scheduled_condition(cluster.pod(namespace, name)),
        timeout=30,
        what=f"{name} explained",
    )


def test_a_pod_with_required_anti_affinity_never_shares_a_node_with_its_match(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["anti-1", "anti-2"], {"cpu": "16", "memory": "64Gi"})
    # Three replicas that each refuse a node with another replica: two nodes take two.
    for index in range(3):
        cluster.create_pod(
            namespace,
            pod_body(
                f"db-{index}",
                requests={"cpu": "1"},
                labels={"app": "db"},
                affinity=_anti_affinity("db"),
            ),
        )
    # A pod without any affinity of its own must still keep off: the replicas' anti-affinity
    # matches its label (the rule holds both ways).
    cluster.create_pod(namespace, pod_body("intruder", requests={"cpu": "1"}, labels={"app": "db"}))

    def settled() -> bool:
        pods = cluster.pods(namespace)
        return len(bound(pods)) == 2 and all(
            p.spec.node_name or scheduled_condition(p) is not None for p in pods
        )

    wait_until(settled, timeout=60, what="two replicas bound, the rest explained")
    pods = cluster.pods(namespace)
    nodes = Counter(p.spec.node_name for p in bound(pods))
    assert all(count == 1 for count in nodes.values()), nodes
    for pod in pods:
        if pod.spec.node_name:
            continue
        condition = _condition(cluster, namespace, pod.metadata.name)
        assert condition.reason == "Unschedulable"
        assert "anti-affinity rules" in condition.message, condition.message


def test_a_gang_of_12_spreads_4_4_4_over_3_zones_with_max_skew_1(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    cluster = clean_nodes
    # Zone a is much larger: without the constraint, spreading by free room would put most
    # members there.
    cluster.add_nodes(
        [f"za-{i}" for i in range(4)], {"cpu": "64", "memory": "256Gi"}, labels={ZONE: "a"}
    )
    cluster.add_nodes(["zb-0"], {"cpu": "16", "memory": "64Gi"}, labels={ZONE: "b"})
    cluster.add_nodes(["zc-0"], {"cpu": "16", "memory": "64Gi"}, labels={ZONE: "c"})
    gang = Gang(namespace, "spread", 12, requests={"cpu": "1"})
    for index in range(12):
        body = gang.pod(index)
        body["metadata"].setdefault("labels", {})["job"] = "spread"
        body["spec"]["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"job": "spread"}},
            }
        ]
        cluster.create_pod(namespace, body)

    wait_until(
        lambda: len(bound(cluster.pods(namespace, gang.selector))) == 12,
        timeout=60,
        what="the gang bound",
    )
    zone_of = {
        name_of(n): (metadata(n).labels or {}).get(ZONE) for n in cluster.core.list_node().items
    }
    zones = Counter(zone_of[p.spec.node_name] for p in cluster.pods(namespace, gang.selector))
    assert zones == {"a": 4, "b": 4, "c": 4}, zones


def test_a_gated_pod_waits_until_its_gate_is_removed(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["gate-1"], {"cpu": "8", "memory": "32Gi"})
    body = pod_body("gated", requests={"cpu": "1"})
    body["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    cluster.create_pod(namespace, body)
    cluster.create_pod(namespace, pod_body("free", requests={"cpu": "1"}))

    wait_until(lambda: cluster.pod(namespace, "free").spec.node_name, timeout=30, what="free bound")
    # The plain pod bound while the gated one stayed out, saying why.
    gated = cluster.pod(namespace, "gated")
    assert not gated.spec.node_name
    condition = scheduled_condition(gated)
    assert condition is not None and condition.reason == "SchedulingGated"

    cluster.core.patch_namespaced_pod("gated", namespace, {"spec": {"schedulingGates": None}})
    wait_until(
        lambda: cluster.pod(namespace, "gated").spec.node_name, timeout=30, what="gated bound"
    )
