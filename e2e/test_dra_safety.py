"""Devices never handed out when they must not be, and never kept from a gang when they are
free, on the real API server (Kubernetes 1.37; the DeviceTaintRule test also on 1.36, where
the kind is not served): DeviceTaintRules and drivers' taints, the device-taint eviction
controller on pods already bound, monitoring claims with admin access, pools not all published,
a claim shared by more pods than it can name, and a selector that fails on a device."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from harness.daemon import Daemon
from harness.dra import (
    GROUP,
    VERSION,
    Devices,
    allocated_devices,
    allocated_node,
    claims,
    consumers,
    doubly_allocated,
    with_claims,
)
from harness.gangs import GangBook, holds, members, wait_bound, wait_explained
from harness.kube import (
    KEEP_RUNNING,
    Cluster,
    deployment_body,
    job_body,
    name_of,
    pod_body,
    wait_until,
)

ADMIN_LABEL = "resource.kubernetes.io/admin-access"


def gang_job(gang_pod: dict[str, Any], name: str, count: int, template: str) -> client.V1Job:
    pod = with_claims(gang_pod, {"gpus": {"resourceClaimTemplateName": template}})
    pod["metadata"].setdefault("annotations", {}).update(KEEP_RUNNING)
    return client.V1Job.model_validate(job_body(name, count, pod))


def claimed_pod(name: str, claim: str, *, template: bool = False) -> dict[str, Any]:
    key = "resourceClaimTemplateName" if template else "resourceClaimName"
    return with_claims(pod_body(name, requests={"cpu": "100m"}), {"gpus": {key: claim}})


def serves_rules(cluster: Cluster) -> bool:
    """Whether the API server serves DeviceTaintRules in resource.k8s.io/v1."""
    try:
        client.CustomObjectsApi(cluster.api_client).list_cluster_custom_object(
            GROUP, VERSION, "devicetaintrules"
        )
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def name_of_claim(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def bound(cluster: Cluster, namespace: str, name: str) -> str:
    return str(cluster.pod(namespace, name).spec.node_name or "")


def test_a_gang_is_never_placed_on_devices_an_admin_drained(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    """Two nodes of two devices, one drained by a NoSchedule rule: a gang of 2 pods x 2
    devices does not fit, waits naming the rule, and binds whole once the rule is gone."""
    cluster = clean_nodes
    nodes = cluster.add_nodes(["drain-0", "drain-1"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    for node in nodes:
        devices.publish(node, 2)
    rule = devices.taint(f"{devices.driver}-drain", pool=nodes[0])
    devices.create_template(namespace, "pair", 2)
    gang = gang_book.gang("train", 2, way="podgroup")
    gang_book.create_podgroup(gang)
    batch.create_namespaced_job(namespace, gang_job(gang.pod(0), "train", 2, "pair"))
    pods = wait_until(
        lambda: (p := members(cluster, gang)) and len(p) == 2 and p, timeout=60, what="2 pods"
    )
    names = [name_of(p) for p in pods]

    def told_the_rule() -> dict[str, str] | None:
        # A member whose claim the resourceclaim controller has not made yet says so first.
        messages = wait_explained(cluster, namespace, names, "1/2 members placed")
        return (
            messages if any(f"(DeviceTaintRule {rule})" in m for m in messages.values()) else None
        )

    wait_until(told_the_rule, timeout=60, what="a member told of the DeviceTaintRule")
    holds(
        lambda: (
            not any(p.spec.node_name for p in members(cluster, gang))
            and not any(allocated_node(c) is not None for c in claims(cluster, namespace))
        ),
        3,
        what="nothing bound, nothing allocated",
    )
    devices.untaint(rule)
    placed = wait_bound(cluster, gang, 2)
    assert sorted(p.spec.node_name for p in placed) == sorted(nodes)
    assert not doubly_allocated(claims(cluster))


def test_a_noexecute_rule_evicts_the_pods_on_its_devices_and_nothing_goes_there_again(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    check_invariants: None,
) -> None:
    """What users get from NoExecute: kube-controller-manager's device-taint eviction
    controller evicts the pods already using the devices; koordgang places nothing there."""
    cluster = clean_nodes
    [node] = cluster.add_nodes(["evict-0"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    devices.publish(node, 2)
    devices.create_template(namespace, "one", 1)
    cluster.create_pod(namespace, claimed_pod("before", "one", template=True))
    wait_until(lambda: bound(cluster, namespace, "before"), timeout=60, what="before bound")
    devices.taint(f"{devices.driver}-failing", pool=node, effect="NoExecute")

    def evicted() -> bool:
        try:
            pod = cluster.pod(namespace, "before")
        except ApiException as error:
            return bool(error.status == 404)
        return pod.metadata.deletion_timestamp is not None

    wait_until(evicted, timeout=60, what="the pod on the tainted devices evicted")
    cluster.create_pod(namespace, claimed_pod("after", "one", template=True))
    wait_explained(cluster, namespace, ["after"], ["NoExecute", "does not tolerate"], timeout=60)


def test_a_driver_taint_the_request_tolerates_lets_it_have_the_devices(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    [node] = cluster.add_nodes(["tolerate-0"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    taint = {"key": "example.com/maintenance", "value": "soon", "effect": "NoSchedule"}
    devices.publish(node, 2, taints=[taint])
    toleration = {"key": "example.com/maintenance", "operator": "Exists"}
    devices.create_claim(namespace, "tolerant", 1, tolerations=[toleration])
    devices.create_claim(namespace, "plain", 1)
    cluster.create_pod(namespace, claimed_pod("tolerant", "tolerant"))
    cluster.create_pod(namespace, claimed_pod("plain", "plain"))
    wait_until(lambda: bound(cluster, namespace, "tolerant"), timeout=60, what="tolerant bound")
    wait_explained(cluster, namespace, ["plain"], "tainted example.com/maintenance=soon:NoSchedule")


def test_monitors_holding_every_gpu_with_admin_access_leave_them_free_for_a_gang(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    """A DCGM-style monitoring DaemonSet holds every GPU of every node with admin access (its
    own claims are allocated by koordgang too); a gang of 2 x 2 devices binds beside it."""
    cluster = clean_nodes
    cluster.core.patch_namespace(namespace, {"metadata": {"labels": {ADMIN_LABEL: "true"}}})
    nodes = cluster.add_nodes(["watch-0", "watch-1"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    for node in nodes:
        devices.publish(node, 2)
    devices.create_template(namespace, "all", 2, adminAccess=True)
    monitor = claimed_pod("dcgm", "all", template=True)
    monitor["metadata"]["labels"] = {"app": "dcgm"}
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "dcgm"},
        "spec": {
            "selector": {"matchLabels": {"app": "dcgm"}},
            "template": {"metadata": monitor["metadata"], "spec": monitor["spec"]},
        },
    }
    apps = client.AppsV1Api(cluster.api_client)
    apps.create_namespaced_daemon_set(namespace, client.V1DaemonSet.model_validate(daemonset))
    try:
        wait_until(
            lambda: (
                (p := cluster.pods(namespace, "app=dcgm"))
                and len(p) == 2
                and all(x.spec.node_name for x in p)
            ),
            timeout=60,
            what="a monitor bound on each node",
        )
        admin = [c for c in claims(cluster, namespace) if allocated_node(c) is not None]
        assert len(admin) == 2
        for obj in admin:
            results = obj["status"]["allocation"]["devices"]["results"]
            assert all(r.get("adminAccess") is True for r in results), results
        devices.create_template(namespace, "pair", 2)
        gang = gang_book.gang("train", 2, way="podgroup")
        gang_book.create_podgroup(gang)
        batch.create_namespaced_job(namespace, gang_job(gang.pod(0), "train", 2, "pair"))
        placed = wait_bound(cluster, gang, 2, timeout=60)
        assert sorted(p.spec.node_name for p in placed) == sorted(nodes)
    finally:
        apps.delete_namespaced_daemon_set("dcgm", namespace)


def test_a_pool_with_a_slice_still_missing_serves_nothing_until_it_is_published(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    [node] = cluster.add_nodes(["pool-0"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    devices.publish(node, 2, name=f"{node}-a", pool="split", slices_in_pool=2)
    devices.create_claim(namespace, "one", 1)
    cluster.create_pod(namespace, claimed_pod("waits", "one"))
    wait_explained(cluster, namespace, ["waits"], f"pool {devices.driver}/split has 1 of its 2")
    holds(lambda: not bound(cluster, namespace, "waits"), 2, what="not bound")
    devices.publish(node, 2, name=f"{node}-b", pool="split", slices_in_pool=2, first=2)
    wait_until(lambda: bound(cluster, namespace, "waits"), timeout=60, what="bound once whole")


def test_pods_past_the_256_a_claim_can_name_wait_and_nothing_is_written_and_undone(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    [node] = cluster.add_nodes(["fabric-0"], {"cpu": "100", "memory": "400Gi", "pods": "300"})
    devices.create_class()
    devices.publish(node, 1)
    devices.create_claim(namespace, "shared-fabric", 1)
    pod = with_claims(
        pod_body("user", requests={"cpu": "10m"}),
        {"gpus": {"resourceClaimName": "shared-fabric"}},
    )
    apps = client.AppsV1Api(cluster.api_client)
    apps.create_namespaced_deployment(
        namespace, client.V1Deployment.model_validate(deployment_body("users", 258, pod))
    )
    try:

        def split() -> tuple[list[str], list[str]] | None:
            pods = cluster.pods(namespace, "app=users")
            if len(pods) != 258:
                return None
            placed = [name_of(p) for p in pods if p.spec.node_name]
            waiting = [name_of(p) for p in pods if not p.spec.node_name]
            return (placed, waiting) if len(placed) == 256 else None

        found = wait_until(split, timeout=240, what="256 of 258 pods bound")
        assert found is not None
        wait_explained(
            cluster,
            namespace,
            found[1],
            "claim shared-fabric is reserved for 256 pods, the most a claim can name",
            timeout=60,
        )
        [obj] = [c for c in claims(cluster, namespace) if name_of_claim(c) == "shared-fabric"]
        assert len(consumers(obj)) == 256
        holds(
            lambda: (
                len([p for p in cluster.pods(namespace, "app=users") if p.spec.node_name]) == 256
            ),
            3,
            what="no more than 256 bound",
        )
        # No reservation past 256 was ever sent (the API server refuses it with a 422).
        refused = [line for line in daemon.logs().splitlines() if "pre-bind write refused" in line]
        too_many = [line for line in refused if "error='422" in line]
        assert not too_many, too_many[:3]
    finally:
        apps.delete_namespaced_deployment("users", namespace, propagation_policy="Background")


def test_a_selector_failing_on_a_device_names_it_and_the_daemon_goes_on(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    [node] = cluster.add_nodes(["cel-0"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    devices.publish(node, 2)
    expression = f'device.attributes["{devices.driver}"].model == "a100"'
    broken = devices.create_class(f"{devices.driver}-model", selectors=[expression])
    devices.create_claim(namespace, "model", 1, device_class=broken)
    cluster.create_pod(namespace, claimed_pod("model", "model"))
    messages = wait_explained(cluster, namespace, ["model"], "no such key: model")
    message = messages["model"]
    assert expression in message and f"DeviceClass {broken}" in message, message
    assert f"on device {devices.driver}/{node}/dev-" in message, message
    devices.create_claim(namespace, "good", 1)
    cluster.create_pod(namespace, claimed_pod("good", "good"))
    wait_until(lambda: bound(cluster, namespace, "good"), timeout=30, what="good bound")
    [good] = [c for c in claims(cluster, namespace) if name_of_claim(c) == "good"]
    assert allocated_devices(good)


@pytest.mark.upstream
def test_a_cluster_that_serves_no_device_taint_rules_simply_has_none(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    check_invariants: None,
) -> None:
    """Kubernetes 1.36 serves no v1 DeviceTaintRule: the daemon's informer for them finds
    none, and pods with claims bind as on 1.37."""
    cluster = clean_nodes
    served = serves_rules(cluster)
    [node] = cluster.add_nodes(["rules-0"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    devices.publish(node, 1)
    devices.create_claim(namespace, "one", 1)
    cluster.create_pod(namespace, claimed_pod("p", "one"))
    wait_until(lambda: bound(cluster, namespace, "p"), timeout=60, what="p bound")
    if not served:
        logs = daemon.logs()
        assert "not served by the API server; treated as empty" in logs
        assert "devicetaintrules" in logs
