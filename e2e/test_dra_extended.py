"""Extended resources a DeviceClass provides (DRA-backed extended resources, KEP-5004, GA in
Kubernetes 1.37) on the real API server: pods of a Job asking for ``<domain>/gpu: 2`` on nodes
that publish devices and have no such allocatable get two devices each, in a claim made for
each pod as kube-scheduler makes it, named in the pod's status. kwok runs no kubelet: what a
user checks is the claims and the pods' status."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from harness.daemon import Daemon
from harness.dra import (
    Devices,
    allocated_devices,
    allocated_node,
    claims,
    consumers,
    doubly_allocated,
)
from harness.gangs import GangBook, holds, members, wait_bound, wait_explained
from harness.kube import (
    KEEP_RUNNING,
    Cluster,
    job_body,
    name_of,
    plain,
    scheduled_condition,
    wait_until,
)

ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def gpu_job(gang_pod: dict[str, Any], name: str, count: int) -> client.V1Job:
    gang_pod["metadata"].setdefault("annotations", {}).update(KEEP_RUNNING)
    return client.V1Job.model_validate(job_body(name, count, gang_pod))


def special_claims(cluster: Cluster, namespace: str) -> dict[str, dict[str, Any]]:
    """The claims made for pods' extended resources, by the pod that owns each."""
    found = {}
    for obj in claims(cluster, namespace):
        meta = obj["metadata"]
        if (meta.get("annotations") or {}).get(ANNOTATION) == "true":
            owners = [o for o in meta.get("ownerReferences") or [] if o.get("controller")]
            found[owners[0]["name"]] = obj
    return found


def test_a_podgroup_of_three_gets_devices_for_its_extended_resource(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    """Three nodes of two devices, none with the extended resource as allocatable: a PodGroup
    of 3 pods (a Job's) asking for 2 each binds whole, each pod on the devices of the claim
    made for it."""
    cluster = clean_nodes
    resource = f"{devices.driver}/gpu"
    nodes = cluster.add_nodes([f"acc-{i}" for i in range(3)], {"cpu": "8", "memory": "32Gi"})
    device_class = devices.create_class(extended_resource=resource)
    for node in nodes:
        devices.publish(node, 2)
    gang = gang_book.gang("train", 3, way="podgroup")
    gang_book.create_podgroup(gang)
    pod = gang.pod(0, requests={"cpu": "100m", resource: "2"})
    batch.create_namespaced_job(namespace, gpu_job(pod, "train", 3))
    placed = wait_bound(cluster, gang, 3, timeout=60)
    assert sorted(p.spec.node_name for p in placed) == sorted(nodes)

    def written() -> dict[str, dict[str, Any]] | None:
        made = special_claims(cluster, namespace)
        pods = {name_of(p): plain(cluster.api_client, p) for p in members(cluster, gang)}
        done = len(made) == 3 and all(
            (p.get("status") or {}).get("extendedResourceClaimStatus") for p in pods.values()
        )
        return made if done else None

    made = wait_until(written, timeout=30, what="3 claims made and named")
    # Named by the container's index and the resource's place among its sorted requests.
    request_name = f"container-0-request-{sorted(['cpu', resource]).index(resource)}"
    for member in placed:
        name = name_of(member)
        obj = made[name]
        meta = obj["metadata"]
        assert meta["name"].startswith(f"{name}-extended-resources-"), meta["name"]
        [owner] = meta["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Pod",
            name,
            member.metadata.uid,
            True,
        )
        [request] = obj["spec"]["devices"]["requests"]
        assert request["name"] == request_name
        assert request["exactly"]["deviceClassName"] == device_class
        assert request["exactly"]["count"] == 2
        assert allocated_node(obj) == member.spec.node_name
        assert len(allocated_devices(obj)) == 2
        assert consumers(obj) == [name]
        status = plain(cluster.api_client, cluster.pod(namespace, name))["status"]
        assert status["extendedResourceClaimStatus"] == {
            "resourceClaimName": meta["name"],
            "requestMappings": [
                {
                    "containerName": "main",
                    "resourceName": resource,
                    "requestName": request_name,
                }
            ],
        }
    assert not doubly_allocated(claims(cluster))


def test_too_few_devices_bind_nobody_and_name_the_class(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    """Two nodes of two devices for a PodGroup of 3 pods x 2: nobody binds, no claim is made,
    and the pods say which class their extended resource maps to."""
    cluster = clean_nodes
    resource = f"{devices.driver}/gpu"
    nodes = cluster.add_nodes([f"few-{i}" for i in range(2)], {"cpu": "8", "memory": "32Gi"})
    device_class = devices.create_class(extended_resource=resource)
    for node in nodes:
        devices.publish(node, 2)
    gang = gang_book.gang("short", 3, way="podgroup")
    gang_book.create_podgroup(gang)
    pod = gang.pod(0, requests={"cpu": "100m", resource: "2"})
    batch.create_namespaced_job(namespace, gpu_job(pod, "short", 3))
    pods = wait_until(
        lambda: (p := members(cluster, gang)) and len(p) == 3 and p, timeout=60, what="3 pods"
    )
    wait_explained(cluster, namespace, [name_of(p) for p in pods])
    said = f"extended resource {resource} (DeviceClass {device_class})"

    def told() -> list[str]:
        found = [scheduled_condition(p) for p in members(cluster, gang)]
        return [c.message for c in found if c is not None and said in (c.message or "")]

    assert wait_until(told, timeout=30, what=f"a pod told {said!r}")
    holds(
        lambda: (
            not any(p.spec.node_name for p in members(cluster, gang))
            and not special_claims(cluster, namespace)
        ),
        3,
        what="nothing bound, no claim made",
    )
