"""Devices in the forms a 1.37 GPU cluster offers them, on the real API server: a GPU published
whole and in partitions drawing on one counter set (how MIG is offered), and claims that list
alternatives (`firstAvailable`) placed where their first choice fits."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from harness.daemon import Daemon
from harness.dra import (
    API_VERSION,
    GROUP,
    VERSION,
    Devices,
    allocated_devices,
    allocated_node,
    claims,
    with_claims,
)
from harness.gangs import GangBook, holds, wait_bound, wait_event
from harness.kube import KEEP_RUNNING, Cluster, job_body, pod_body, wait_until


def profile_class(devices: Devices, profile: str) -> str:
    """A DeviceClass of the driver's devices with ``profile`` (``whole`` or ``part``)."""
    return devices.create_class(
        f"{devices.driver}-{profile}",
        selectors=[f'device.attributes["{devices.driver}"].profile == "{profile}"'],
    )


def test_a_gang_of_four_shares_one_partitioned_gpu_and_the_whole_gpu_waits_for_it(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    """One GPU offered whole and as four 20Gi partitions: a gang of four pods asking one
    partition each binds whole, each on its own partition; a pod asking for the whole GPU
    waits, told which counter is spent, and gets it once the gang is gone."""
    cluster = clean_nodes
    [node] = cluster.add_nodes(["mig-0"], {"cpu": "8", "memory": "32Gi"})
    devices.publish_partitioned(node)
    part = profile_class(devices, "part")
    whole = profile_class(devices, "whole")
    devices.create_template(namespace, "part", 1, device_class=part)
    devices.create_template(namespace, "whole", 1, device_class=whole)
    gang = gang_book.gang("mig", 4, way="podgroup")
    gang_book.create_podgroup(gang)
    pod = with_claims(gang.pod(0), {"gpus": {"resourceClaimTemplateName": "part"}})
    pod["metadata"].setdefault("annotations", {}).update(KEEP_RUNNING)
    batch.create_namespaced_job(namespace, client.V1Job.model_validate(job_body("mig", 4, pod)))

    placed = wait_bound(cluster, gang, 4, timeout=60)
    assert {p.spec.node_name for p in placed} == {node}
    given = sorted(
        device for c in claims(cluster, namespace) for _, _, device in allocated_devices(c)
    )
    assert given == [f"part-{i}" for i in range(4)]

    big = with_claims(
        pod_body("big", requests={"cpu": "100m"}), {"gpus": {"resourceClaimTemplateName": "whole"}}
    )
    cluster.create_pod(namespace, big)
    # First told which counter is spent; then, as the starvation guard holds the node for it,
    # that it waits for the gang's pods to finish.
    wait_event(cluster, namespace, "big", "FailedScheduling", "counter memory", timeout=45)
    holds(lambda: not cluster.pod(namespace, "big").spec.node_name, 2, what="big waits")

    batch.delete_namespaced_job("mig", namespace, propagation_policy="Background")
    wait_until(
        lambda: cluster.pod(namespace, "big").spec.node_name == node,
        timeout=90,
        what="the whole GPU given once its partitions are free",
    )
    [mine] = [
        c for c in claims(cluster, namespace) if allocated_node(c) and "big" in name_of_claim(c)
    ]
    assert [device for _, _, device in allocated_devices(mine)] == ["whole"]


def name_of_claim(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def first_available_template(
    namespace: str, custom: client.CustomObjectsApi, classes: list[str]
) -> None:
    """A template whose one request takes a device of ``classes[0]``, else of ``classes[1]``."""
    alternatives = [{"name": c.rsplit("-", 1)[-1], "deviceClassName": c} for c in classes]
    body = {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "prefer-big"},
        "spec": {
            "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": alternatives}]}}
        },
    }
    custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "resourceclaimtemplates", body
    )


def test_pods_listing_alternatives_go_where_their_first_choice_fits(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    check_invariants: None,
) -> None:
    """Eight equal nodes, four with a big device and four with a small one: four pods that
    prefer a big device and would take a small one all land on the big devices' nodes."""
    cluster = clean_nodes
    capacity = {"cpu": "8", "memory": "32Gi"}
    bigs = cluster.add_nodes([f"fa-big-{i}" for i in range(4)], capacity)
    smalls = cluster.add_nodes([f"fa-small-{i}" for i in range(4)], capacity)
    for name in bigs:
        devices.publish(name, 1, attributes={"size": {"string": "big"}})
    for name in smalls:
        devices.publish(name, 1, attributes={"size": {"string": "small"}})
    classes = [
        devices.create_class(
            f"{devices.driver}-{size}",
            selectors=[f'device.attributes["{devices.driver}"].size == "{size}"'],
        )
        for size in ("big", "small")
    ]
    first_available_template(namespace, devices.custom, classes)
    names = [f"prefers-{i}" for i in range(4)]
    for name in names:
        body = pod_body(name, requests={"cpu": "100m"})
        cluster.create_pod(
            namespace, with_claims(body, {"gpus": {"resourceClaimTemplateName": "prefer-big"}})
        )

    def placed() -> dict[str, str] | None:
        nodes = {n: cluster.pod(namespace, n).spec.node_name for n in names}
        return nodes if all(nodes.values()) else None

    nodes = wait_until(placed, timeout=60, what="four pods bound")
    assert nodes is not None
    assert sorted(nodes.values()) == sorted(bigs), nodes
    results = [
        r["request"]
        for c in claims(cluster, namespace)
        for r in c["status"]["allocation"]["devices"]["results"]
    ]
    assert results == ["gpu/big"] * 4, results
