"""nodeSelector, node affinity, taints and tolerations, and extended resources each decide."""

from __future__ import annotations

from kubernetes import client

from harness.daemon import Daemon
from harness.kube import Cluster, pod_body, scheduled_condition, wait_until

GPU = "nvidia.com/gpu"


def _node_of(cluster: Cluster, namespace: str, name: str) -> str:
    node: str = wait_until(
        lambda: cluster.pod(namespace, name).spec.node_name, timeout=30, what=f"{name} bound"
    )
    return node


def _explanation(cluster: Cluster, namespace: str, name: str) -> str:
    condition = wait_until(
        lambda: scheduled_condition(cluster.pod(namespace, name)),
        timeout=30,
        what=f"{name} explained",
    )
    assert condition.status == "False" and condition.reason == "Unschedulable"
    return str(condition.message)


def test_each_placement_rule_decides_where_pods_go(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(
        ["zone-a-1", "zone-a-2"], {"cpu": "16", "memory": "64Gi"}, labels={"zone": "a"}
    )
    cluster.add_nodes(
        ["zone-b-1"], {"cpu": "16", "memory": "64Gi"}, labels={"zone": "b", "disk": "ssd"}
    )
    cluster.add_nodes(
        ["gpu-1", "gpu-2"],
        {"cpu": "32", "memory": "128Gi", GPU: "8"},
        labels={"zone": "c", "accelerator": "a100"},
        taints=[("dedicated", "gpu", "NoSchedule")],
    )
    cluster.add_nodes(
        ["cordoned"], {"cpu": "64", "memory": "256Gi"}, labels={"zone": "d"}, unschedulable=True
    )

    cluster.create_pod(
        namespace, pod_body("by-selector", requests={"cpu": "1"}, node_selector={"zone": "b"})
    )
    cluster.create_pod(
        namespace,
        pod_body(
            "by-affinity",
            requests={"cpu": "1"},
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "zone", "operator": "In", "values": ["a"]}
                                ]
                            }
                        ]
                    }
                }
            },
        ),
    )
    cluster.create_pod(
        namespace,
        pod_body(
            "gpu-job",
            requests={"cpu": "4", GPU: "8"},
            tolerations=[
                {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
            ],
        ),
    )
    cluster.create_pod(namespace, pod_body("gpu-no-toleration", requests={"cpu": "1", GPU: "1"}))
    cluster.create_pod(
        namespace, pod_body("no-match", requests={"cpu": "1"}, node_selector={"zone": "mars"})
    )
    cluster.create_pod(
        namespace,
        pod_body(
            "too-many-gpus",
            requests={GPU: "16"},
            tolerations=[{"key": "dedicated", "operator": "Exists"}],
        ),
    )

    assert _node_of(cluster, namespace, "by-selector") == "zone-b-1"
    assert _node_of(cluster, namespace, "by-affinity") in {"zone-a-1", "zone-a-2"}
    assert _node_of(cluster, namespace, "gpu-job") in {"gpu-1", "gpu-2"}

    message = _explanation(cluster, namespace, "gpu-no-toleration")
    assert message.startswith("0/6 nodes are available: ")
    assert "2 node(s) had untolerated taint {dedicated: gpu}" in message
    assert "3 Insufficient nvidia.com/gpu" in message
    assert "1 node(s) were unschedulable" in message

    message = _explanation(cluster, namespace, "no-match")
    assert "node(s) didn't match Pod's node affinity/selector" in message

    message = _explanation(cluster, namespace, "too-many-gpus")
    assert "5 Insufficient nvidia.com/gpu" in message

    # The cordoned node took nothing even though it is the emptiest.
    for pod in cluster.pods(namespace):
        assert pod.spec.node_name != "cordoned"


def test_not_ready_nodes_take_no_pods(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    cluster = clean_nodes
    # A node that no kubelet (kwok) manages never becomes Ready.
    cluster.core.create_node(
        client.V1Node.model_validate(
            {
                "metadata": {"name": "orphan", "labels": {"type": "kwok"}},
                "status": {
                    "capacity": {"cpu": "8", "memory": "8Gi", "pods": "110"},
                    "allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"},
                },
            }
        )
    )
    cluster.created_nodes.append("orphan")
    cluster.create_pod(namespace, pod_body("lonely", requests={"cpu": "1"}))
    message = _explanation(cluster, namespace, "lonely")
    assert message == (
        "0/1 nodes are available: 1 node(s) were not ready.; "
        "preemption is not helpful: 1 node(s) were not ready"
    )
