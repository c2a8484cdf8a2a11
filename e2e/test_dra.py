"""Devices through Dynamic Resource Allocation, on the real API server.

Pods ask for devices through ResourceClaims, made from ResourceClaimTemplates by the
resourceclaim controller (kube-controller-manager) or created by hand; fake nodes publish
ResourceSlices as a driver would. What users see is checked: bindings, each claim's
allocation (on its pod's node, the delete-protection finalizer, the pod in reservedFor), the
explanation of pods that wait, and that no device is ever given to two claims.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from harness.daemon import Daemon, LocalDaemon
from harness.dra import (
    FINALIZER,
    Devices,
    allocated_devices,
    allocated_node,
    claim,
    claim_of,
    claims,
    consumers,
    doubly_allocated,
    with_claims,
)
from harness.faultproxy import FaultProxy, Rule, upstream_of, write_proxied_kubeconfig
from harness.gangs import (
    GangBook,
    holds,
    members,
    wait_bound,
    wait_explained,
)
from harness.invariants import AuditLog, daemon_user_agent
from harness.kube import (
    KEEP_RUNNING,
    Cluster,
    deployment_body,
    job_body,
    name_of,
    pod_body,
    wait_until,
)
from harness.rbac import rbac_denials


@pytest.fixture
def apps(cluster: Cluster, namespace: str) -> Iterator[client.AppsV1Api]:
    """Deployments of the test, deleted at the end (as ``batch`` deletes Jobs)."""
    api = client.AppsV1Api(cluster.api_client)
    yield api
    for deployment in api.list_namespaced_deployment(namespace).items:
        api.delete_namespaced_deployment(
            name_of(deployment), namespace, propagation_policy="Background"
        )
    wait_until(
        lambda: (
            not api.list_namespaced_deployment(namespace).items
            and not api.list_namespaced_replica_set(namespace).items
        ),
        what="deployments deleted",
    )


def job_with_claims(
    gang_pod: dict[str, Any], name: str, count: int, template: str
) -> dict[str, Any]:
    pod = with_claims(gang_pod, {"gpus": {"resourceClaimTemplateName": template}})
    pod["metadata"].setdefault("annotations", {}).update(KEEP_RUNNING)
    return job_body(name, count, pod)


def reserved_claim(cluster: Cluster, namespace: str, pod: Any) -> dict[str, Any] | None:
    """The claim of ``pod``'s ``gpus`` entry once it is reserved for a consumer, else None."""
    found = claim(cluster, namespace, claim_of(pod) or "")
    return found if found and consumers(found) else None


def test_a_gang_short_of_devices_binds_none_then_binds_whole_when_a_node_publishes_more(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    nodes = cluster.add_nodes([f"dra-{i}" for i in range(4)], {"cpu": "8", "memory": "32Gi"})
    devices.create_class(config={"sharing": "exclusive"})
    for node in nodes[:3]:
        devices.publish(node, 2)
    devices.create_template(namespace, "pair", 2)
    gang = gang_book.gang("train", 4, way="podgroup")
    gang_book.create_podgroup(gang)
    batch.create_namespaced_job(
        namespace, client.V1Job.model_validate(job_with_claims(gang.pod(0), "train", 4, "pair"))
    )

    # The resourceclaim controller makes a claim per pod; devices for 3 of the 4.
    pods = wait_until(
        lambda: (p := members(cluster, gang)) and len(p) == 4 and all(claim_of(x) for x in p) and p,
        timeout=60,
        what="4 pods with their claims made",
    )
    names = [p.metadata.name for p in pods]
    messages = wait_explained(
        cluster,
        namespace,
        names,
        ["3/4 members placed, min 4", f"devices of class {devices.device_class}"],
    )
    # Which request is short, and by how much, on the best node.
    assert all('request "gpus" wants 2 devices' in m for m in messages.values()), messages
    assert all("has 0 of 2 free" in m for m in messages.values()), messages
    holds(
        lambda: (
            not any(p.spec.node_name for p in members(cluster, gang))
            and not any(allocated_node(c) is not None for c in claims(cluster, namespace))
        ),
        3,
        what="no member bound and no claim allocated",
    )

    devices.publish(nodes[3], 2)
    pods = wait_bound(cluster, gang, 4)
    seen: list[tuple[str, str, str]] = []
    for pod in pods:
        obj = wait_until(
            partial(reserved_claim, cluster, namespace, pod),
            timeout=30,
            what=f"the claim of {pod.metadata.name} reserved",
        )
        assert allocated_node(obj) == pod.spec.node_name, obj["status"]
        assert FINALIZER in obj["metadata"]["finalizers"]
        assert consumers(obj) == [pod.metadata.name]
        found = allocated_devices(obj)
        assert len(found) == 2 and all(d[0] == devices.driver for d in found)
        # The devices are the node's own (its pool is named after it here).
        assert {d[1] for d in found} == {pod.spec.node_name}
        config = obj["status"]["allocation"]["devices"]["config"]
        assert config[0]["source"] == "FromClass"
        assert config[0]["opaque"]["parameters"] == {"sharing": "exclusive"}
        seen.extend(found)
    assert len(seen) == len(set(seen)) == 8

    # The pods go: their claims are deallocated (and, made for them, deleted).
    batch.delete_namespaced_job("train", namespace, propagation_policy="Background")
    wait_until(
        lambda: not any(allocated_node(c) is not None for c in claims(cluster, namespace)),
        timeout=60,
        what="every claim of the job deallocated or deleted",
    )


def test_a_claim_shared_by_two_pods_sends_both_to_its_node(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    apps: client.AppsV1Api,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    nodes = cluster.add_nodes(["share-1", "share-2"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    for node in nodes:
        devices.publish(node, 1)
    devices.create_claim(namespace, "team-gpu", 1)
    pod = with_claims(
        pod_body("user", requests={"cpu": "1"}), {"gpus": {"resourceClaimName": "team-gpu"}}
    )
    apps.create_namespaced_deployment(
        namespace, client.V1Deployment.model_validate(deployment_body("users", 2, pod))
    )

    pods = wait_until(
        lambda: (
            (p := cluster.pods(namespace, "app=users"))
            and len(p) == 2
            and all(x.spec.node_name for x in p)
            and p
        ),
        timeout=60,
        what="both replicas bound",
    )
    obj = claim(cluster, namespace, "team-gpu")
    assert {p.spec.node_name for p in pods} == {allocated_node(obj)}
    assert sorted(consumers(obj)) == sorted(p.metadata.name for p in pods)


def test_a_pod_of_lower_need_takes_devices_a_gang_cannot_use_and_nothing_is_given_twice(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    """Many pods racing for few devices: every device goes to one claim at most, and each
    pod that got none says so."""
    cluster = clean_nodes
    nodes = cluster.add_nodes([f"race-{i}" for i in range(3)], {"cpu": "16", "memory": "64Gi"})
    devices.create_class()
    for node in nodes:
        devices.publish(node, 4)
    devices.create_template(namespace, "one", 1)
    pod = with_claims(
        pod_body("solo", requests={"cpu": "100m"}), {"gpus": {"resourceClaimTemplateName": "one"}}
    )
    pod["metadata"]["annotations"] = dict(KEEP_RUNNING)
    batch.create_namespaced_job(namespace, client.V1Job.model_validate(job_body("solo", 16, pod)))

    def placed() -> list[Any] | None:
        pods = cluster.pods(namespace, "job-name=solo")
        return pods if len([p for p in pods if p.spec.node_name]) == 12 else None

    wait_until(placed, timeout=90, what="12 of 16 pods bound (12 devices)")
    holds(
        lambda: (
            len([p for p in cluster.pods(namespace, "job-name=solo") if p.spec.node_name]) == 12
        ),
        2,
        what="no more than 12 bound",
    )
    assert not doubly_allocated(claims(cluster))
    waiting = [
        p.metadata.name for p in cluster.pods(namespace, "job-name=solo") if not p.spec.node_name
    ]
    wait_explained(cluster, namespace, waiting, f"devices of class {devices.device_class}")


class TestBadInput:
    """Each gets a specific message on the pod; the daemon goes on."""

    def test_each_bad_claim_is_named_on_its_pod(
        self,
        clean_nodes: Cluster,
        namespace: str,
        daemon: Daemon,
        devices: Devices,
        check_invariants: None,
    ) -> None:
        cluster = clean_nodes
        nodes = cluster.add_nodes(["bad-1"], {"cpu": "8", "memory": "32Gi"})
        devices.create_class()
        devices.publish(nodes[0], 2)
        # A class whose selector Kubernetes accepts but koordgang cannot evaluate (IP library).
        iplib = devices.create_class(
            f"{devices.driver}-ip", selectors=['ip("10.0.0.1").family() == 4']
        )
        # A class whose selector reads an attribute the devices do not have.
        missing = devices.create_class(
            f"{devices.driver}-model",
            selectors=[f'device.attributes["{devices.driver}"].model == "a100"'],
        )
        devices.create_claim(namespace, "unknown-class", 1, device_class="no-such-class")
        devices.create_claim(namespace, "too-many", 5)
        devices.create_claim(namespace, "iplib", 1, device_class=iplib)
        devices.create_claim(namespace, "model", 1, device_class=missing)
        cases = {
            "missing-claim": ("does-not-exist", 'resourceclaim "does-not-exist" not found'),
            "unknown-class": ("unknown-class", 'deviceclass "no-such-class" not found'),
            "too-many": ("too-many", "wants 5 devices of class"),
            "iplib": ("iplib", "does not compile"),
            "model": ("model", "no such key: model"),
        }
        for name, (claim_name, _) in cases.items():
            body = with_claims(
                pod_body(name, requests={"cpu": "100m"}),
                {"gpus": {"resourceClaimName": claim_name}},
            )
            cluster.create_pod(namespace, body)
        for name, (_, expected) in cases.items():
            wait_explained(cluster, namespace, [name], expected)
        too_many = cluster.pod(namespace, "too-many").status.conditions
        assert any("has 2 of 2 free" in (c.message or "") for c in too_many)
        # The daemon goes on: a good claim's pod is placed.
        devices.create_claim(namespace, "good", 1)
        good = with_claims(
            pod_body("good", requests={"cpu": "100m"}), {"gpus": {"resourceClaimName": "good"}}
        )
        cluster.create_pod(namespace, good)
        wait_until(
            lambda: cluster.pod(namespace, "good").spec.node_name, timeout=30, what="good bound"
        )

    def test_a_pool_with_a_duplicate_device_is_skipped_and_logged(
        self,
        clean_nodes: Cluster,
        namespace: str,
        daemon: Daemon,
        devices: Devices,
        check_invariants: None,
    ) -> None:
        cluster = clean_nodes
        nodes = cluster.add_nodes(["dup-1"], {"cpu": "8", "memory": "32Gi"})
        devices.create_class()
        # Two slices of one pool, both with dev-0: the pool is invalid, none of it is used.
        devices.publish(nodes[0], 1, name="dup-a", pool="dup", slices_in_pool=2)
        devices.publish(nodes[0], 1, name="dup-b", pool="dup", slices_in_pool=2)
        devices.create_claim(namespace, "one", 1)
        cluster.create_pod(
            namespace,
            with_claims(
                pod_body("waits", requests={"cpu": "100m"}), {"gpus": {"resourceClaimName": "one"}}
            ),
        )
        wait_explained(cluster, namespace, ["waits"], f"no devices of class {devices.device_class}")
        wait_until(
            lambda: (
                "resource pool skipped: invalid" in daemon.logs()
                and "duplicate device name" in daemon.logs()
            ),
            timeout=30,
            what="the invalid pool logged",
        )


# -- a restart between a gang's claim writes and its bindings ----------------------------------

CLAIM_STATUS = r"^/apis/resource\.k8s\.io/v1/namespaces/[^/]+/resourceclaims/[^/]+/status$"


@pytest.fixture
def proxy(scheduler_kubeconfig: str) -> Iterator[FaultProxy]:
    server, ca = upstream_of(scheduler_kubeconfig)
    running = FaultProxy(server, ca, seed=33).start()
    yield running
    running.stop()


def test_a_restart_between_the_claim_writes_and_the_bindings_binds_the_gang_on_its_devices(
    clean_nodes: Cluster,
    namespace: str,
    devices: Devices,
    batch: client.BatchV1Api,
    gang_book: GangBook,
    proxy: FaultProxy,
    scheduler_kubeconfig: str,
    tmp_path: Path,
    audit_log: AuditLog,
    check_invariants: None,
) -> None:
    """The first daemon writes every claim of a gang, then dies with its bindings held; the
    next one binds the gang where the claims say, writing no allocation of its own."""
    cluster = clean_nodes
    nodes = cluster.add_nodes([f"rs-{i}" for i in range(4)], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    for node in nodes:
        devices.publish(node, 2)
    devices.create_template(namespace, "pair", 2)
    gang = gang_book.gang("train", 4, way="podgroup")
    gang_book.create_podgroup(gang)

    binds = rf"^/api/v1/namespaces/{namespace}/pods/[^/]+/binding$"
    held = proxy.add(Rule("hold", method="POST", path=binds))
    proxied = write_proxied_kubeconfig(scheduler_kubeconfig, proxy.url, tmp_path / "proxied")
    first = LocalDaemon(str(proxied), tmp_path)
    first.start()
    second: LocalDaemon | None = None
    try:
        batch.create_namespaced_job(
            namespace, client.V1Job.model_validate(job_with_claims(gang.pod(0), "train", 4, "pair"))
        )
        wait_until(lambda: held.hits >= 4, timeout=60, what="the 4 bindings sent (and held)")
        written = {
            c["metadata"]["name"]: (allocated_node(c), allocated_devices(c))
            for c in claims(cluster, namespace)
        }
        assert len(written) == 4 and all(node for node, _ in written.values()), written
        first.kill()
        proxy.drop(held)
        proxy.clear()
        assert not any(p.spec.node_name for p in members(cluster, gang))

        second = LocalDaemon(scheduler_kubeconfig, tmp_path)
        second.start()
        pods = wait_bound(cluster, gang, 4)
        for pod in pods:
            obj = claim(cluster, namespace, claim_of(pod) or "")
            assert (allocated_node(obj), allocated_devices(obj)) == written[obj["metadata"]["name"]]
            assert allocated_node(obj) == pod.spec.node_name
        # The second daemon wrote no allocation: the first one's stood.
        agent = daemon_user_agent(second.process.pid) if second.process else "?"
        rewrites = [
            e
            for e in audit_log.events()
            if e.get("userAgent", "").startswith(agent)
            and e.get("objectRef", {}).get("resource") == "resourceclaims"
        ]
        assert rewrites == [], rewrites
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert not rbac_denials(first.logs() + (second.logs() if second is not None else ""))
