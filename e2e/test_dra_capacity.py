"""Consumable capacity on the real API server (1.37): one GPU that several claims may have at
once (``allowMultipleAllocations``), each claim a share of its memory. The API server takes
the shares (``shareID``, ``consumedCapacity``) as written, and the shared checker sees no
device given twice and no capacity overdrawn."""

from __future__ import annotations

import re

from kubernetes import client

from harness.daemon import Daemon
from harness.dra import Devices, allocated_node, claims, share_ids, shares, with_claims
from harness.gangs import wait_event
from harness.kube import KEEP_RUNNING, Cluster, job_body, pod_body, wait_until

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def test_four_pods_share_one_gpu_in_20gi_slices_and_a_fifth_waits_naming_the_capacity(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    check_invariants: None,
) -> None:
    """A Job's four pods each ask 20Gi of one GPU's 80Gi: all four bind beside it, each claim
    a share of the GPU; a fifth pod asking as much waits, told how much is left, and gets its
    share once the Job is gone."""
    cluster = clean_nodes
    [node] = cluster.add_nodes(["share-0"], {"cpu": "8", "memory": "32Gi"})
    devices.publish_shared(node)
    devices.create_class()
    devices.create_template(namespace, "slice", 1, capacity={"requests": {"memory": "20Gi"}})
    pod = with_claims(
        pod_body("share", requests={"cpu": "100m"}),
        {"gpus": {"resourceClaimTemplateName": "slice"}},
    )
    pod["metadata"].setdefault("annotations", {}).update(KEEP_RUNNING)
    batch.create_namespaced_job(namespace, client.V1Job.model_validate(job_body("share", 4, pod)))

    def bound() -> list[str] | None:
        nodes = [p.spec.node_name for p in cluster.pods(namespace, "job-name=share")]
        return nodes if len(nodes) == 4 and all(nodes) else None

    assert wait_until(bound, timeout=60, what="the Job's four pods bound") == [node] * 4
    allocated = [c for c in claims(cluster, namespace) if allocated_node(c)]
    assert len(allocated) == 4
    given = [found for c in allocated for found in shares(c)]
    assert [(device[2], consumed) for device, consumed in given] == [
        ("gpu-0", {"memory": "20Gi"})
    ] * 4
    ids = [i for c in allocated for i in share_ids(c)]
    assert len(set(ids)) == 4 and all(UUID.match(i) for i in ids), ids

    fifth = with_claims(
        pod_body("fifth", requests={"cpu": "100m"}),
        {"gpus": {"resourceClaimTemplateName": "slice"}},
    )
    cluster.create_pod(namespace, fifth)
    wait_event(
        cluster,
        namespace,
        "fifth",
        "FailedScheduling",
        "device gpu-0 has 0 of memory left, the request asks 20Gi",
        timeout=45,
    )
    assert not cluster.pod(namespace, "fifth").spec.node_name

    batch.delete_namespaced_job("share", namespace, propagation_policy="Background")
    wait_until(
        lambda: cluster.pod(namespace, "fifth").spec.node_name == node,
        timeout=90,
        what="the fifth pod given its share once the Job's shares are given back",
    )


def test_the_device_policy_rounds_a_share_up_to_its_next_step(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    check_invariants: None,
) -> None:
    """Memory taken in 10Gi steps: a pod asking 15Gi gets a 20Gi share, written as such."""
    cluster = clean_nodes
    [node] = cluster.add_nodes(["share-1"], {"cpu": "8", "memory": "32Gi"})
    policy = {"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}
    devices.publish_shared(node, policy=policy)
    devices.create_class()
    devices.create_template(namespace, "odd", 1, capacity={"requests": {"memory": "15Gi"}})
    body = pod_body("odd", requests={"cpu": "100m"})
    cluster.create_pod(namespace, with_claims(body, {"gpus": {"resourceClaimTemplateName": "odd"}}))
    wait_until(
        lambda: cluster.pod(namespace, "odd").spec.node_name == node,
        timeout=60,
        what="the pod bound with its share",
    )
    [mine] = [c for c in claims(cluster, namespace) if allocated_node(c)]
    assert [consumed for _, consumed in shares(mine)] == [{"memory": "20Gi"}]
