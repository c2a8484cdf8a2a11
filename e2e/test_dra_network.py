"""Network-attached DRA pools on the real API server: a pool whose slice names its nodes by a
label (``spec.nodeSelector``) serves pods on those nodes alone, and the claims' allocation
carries the slice's selector, as kube-scheduler writes it."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from harness.daemon import Daemon
from harness.dra import Devices, allocated_devices, claims, with_claims
from harness.kube import KEEP_RUNNING, Cluster, job_body, pod_body, unique, wait_until


def test_a_jobs_pods_get_devices_of_a_network_pool_only_on_the_nodes_it_reaches(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    check_invariants: None,
) -> None:
    """4 nodes, 2 of them labelled for the pool; 4 devices in the pool, 4 pods asking one
    each: every pod lands on a labelled node, and each claim's allocation carries the slice's
    node selector."""
    cluster = clean_nodes
    label = {"fabric.example.com/rack": unique("rack")}
    capacity = {"cpu": "16", "memory": "64Gi"}
    reached = cluster.add_nodes(["net-0", "net-1"], capacity, labels=label)
    cluster.add_nodes(["net-2", "net-3"], capacity)
    devices.create_class()
    selector = devices.publish_network("fabric", 4, node_labels=label)
    devices.create_template(namespace, "one", 1)
    pod = with_claims(
        pod_body("net", requests={"cpu": "100m"}), {"gpus": {"resourceClaimTemplateName": "one"}}
    )
    pod["metadata"]["annotations"] = dict(KEEP_RUNNING)
    batch.create_namespaced_job(namespace, client.V1Job.model_validate(job_body("net", 4, pod)))

    def placed() -> list[Any] | None:
        pods = cluster.pods(namespace, "job-name=net")
        return pods if len([p for p in pods if p.spec.node_name]) == 4 else None

    pods = wait_until(placed, timeout=90, what="4 pods bound")
    assert {p.spec.node_name for p in pods} <= set(reached)
    made = claims(cluster, namespace)
    assert len(made) == 4
    for obj in made:
        allocation = obj["status"]["allocation"]
        assert allocation["nodeSelector"] == selector
    given = sorted(device for obj in made for _, _, device in allocated_devices(obj))
    assert given == [f"dev-{i}" for i in range(4)]
