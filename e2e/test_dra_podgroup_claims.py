"""Claims of a whole gang on the real API server (Kubernetes 1.37's DRAWorkloadResourceClaims,
switched on by the local plane): a Job's pods in an upstream PodGroup that names a claim
template. The real resourceclaim controller makes one claim for the PodGroup (owned by it,
named in the PodGroup's and every member's status); koordgang allocates it once, inside the
gang's decision, reserves it for the PodGroup, and binds every member where the allocation
reaches. Once the PodGroup goes, so does its claim, and its devices serve the next gang. The
daemon's what-if for pods joining such a PodGroup says where its claim takes them, naming it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from harness.daemon import Daemon, LocalDaemon
from harness.dra import (
    Devices,
    allocated_devices,
    allocated_node,
    claim_of,
    claims,
    owner_of,
    reservations,
    with_claims,
)
from harness.gangs import UPSTREAM, group_object, upstream_podgroup_body
from harness.invariants import AuditLog
from harness.kube import KEEP_RUNNING, Cluster, job_body, json_object, pod_body, unique, wait_until

pytestmark = pytest.mark.skipif(
    UPSTREAM[1] == "v1alpha2", reason="PodGroup claims are beta from Kubernetes 1.37"
)

ENTRY = {"gpus": {"resourceClaimTemplateName": "pair"}}


@pytest.fixture
def podgroups(cluster: Cluster, namespace: str) -> Iterator[None]:
    """The test's PodGroups are deleted at the end: their claims go with them."""
    yield
    listed = json_object(
        cluster.custom.list_namespaced_custom_object(
            UPSTREAM[0], UPSTREAM[1], namespace, "podgroups"
        )
    )
    for item in listed["items"]:
        cluster.custom.delete_namespaced_custom_object(
            UPSTREAM[0], UPSTREAM[1], namespace, "podgroups", item["metadata"]["name"]
        )


def create_podgroup(cluster: Cluster, namespace: str, name: str, min_count: int) -> str:
    """The PodGroup, with the claim entry its members share; returns its uid."""
    body = upstream_podgroup_body(name, min_count, resource_claims=ENTRY)
    made = json_object(
        cluster.custom.create_namespaced_custom_object(
            UPSTREAM[0], UPSTREAM[1], namespace, "podgroups", body
        )
    )
    return str(made["metadata"]["uid"])


def podgroup_job(name: str, podgroup: str, pods: int, cpu: str) -> dict[str, Any]:
    """A Job whose pods belong to ``podgroup`` and name its claim entry as it does."""
    pod = with_claims(pod_body(name, requests={"cpu": cpu}), ENTRY)
    pod["metadata"]["annotations"] = dict(KEEP_RUNNING)
    pod["spec"]["schedulingGroup"] = {"podGroupName": podgroup}
    return job_body(name, pods, pod)


def create_job(
    batch: client.BatchV1Api, namespace: str, name: str, podgroup: str, pods: int, cpu: str
) -> None:
    body = podgroup_job(name, podgroup, pods, cpu)
    batch.create_namespaced_job(namespace, client.V1Job.model_validate(body))


def wait_all_bound(cluster: Cluster, namespace: str, job: str, pods: int) -> list[Any]:
    def placed() -> list[Any] | None:
        found = cluster.pods(namespace, f"job-name={job}")
        return found if len([p for p in found if p.spec.node_name]) == pods else None

    result: list[Any] = wait_until(placed, timeout=90, what=f"the {pods} pods of {job} bound")
    return result


def the_claim(cluster: Cluster, namespace: str) -> dict[str, Any]:
    [claim] = claims(cluster, namespace)
    return claim


def status_writes(audit_log: AuditLog, name: str) -> list[str]:
    """koordgang's writes to the status of claim ``name`` (its allocation, its consumers)."""
    return [
        str(e["verb"])
        for e in audit_log.events()
        if str(e.get("userAgent", "")).startswith("koordgang/")
        and e.get("objectRef", {}).get("resource") == "resourceclaims"
        and e.get("objectRef", {}).get("name") == name
        and e.get("objectRef", {}).get("subresource") == "status"
    ]


def podgroup_consumer(name: str, uid: str) -> Mapping[str, str]:
    return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": name, "uid": uid}


def test_a_jobs_pods_share_one_claim_of_their_podgroup_allocated_once_on_one_node(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    podgroups: None,
    audit_log: AuditLog,
    check_invariants: None,
) -> None:
    """3 pods in a PodGroup whose claim asks for 2 node-local GPUs: one claim, made by the
    controller for the PodGroup, allocated once, reserved for the PodGroup; every member on
    the node of its devices. The PodGroup deleted, its claim goes, and its GPUs serve the next
    gang."""
    cluster = clean_nodes
    nodes = cluster.add_nodes(["pgc-0", "pgc-1"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    for name in nodes:
        devices.publish(name, 2)
    devices.create_template(namespace, "pair", 2)
    uid = create_podgroup(cluster, namespace, "train", 3)
    create_job(batch, namespace, "train", "train", 3, "1")

    pods = wait_all_bound(cluster, namespace, "train", 3)
    claim = the_claim(cluster, namespace)
    name = claim["metadata"]["name"]
    assert name.startswith("train-gpus-")
    assert owner_of(claim) == ("PodGroup", "train")
    made = (group_object(cluster, UPSTREAM, namespace, "train") or {})["status"]
    assert made["resourceClaimStatuses"] == [{"name": "gpus", "resourceClaimName": name}]
    # Allocated and reserved in one write, for the whole gang.
    assert status_writes(audit_log, name) == ["patch"]
    assert reservations(claim) == [podgroup_consumer("train", uid)]
    node = allocated_node(claim)
    assert node in nodes
    assert len(allocated_devices(claim)) == 2
    # A node-local device draws every member onto its node; each names the PodGroup's claim.
    assert {p.spec.node_name for p in pods} == {node}
    assert {claim_of(p) for p in pods} == {name}

    # The PodGroup goes (its Job first): the claim goes with it, and its devices are free.
    batch.delete_namespaced_job("train", namespace, propagation_policy="Background")
    cluster.custom.delete_namespaced_custom_object(
        UPSTREAM[0], UPSTREAM[1], namespace, "podgroups", "train"
    )
    wait_until(lambda: not claims(cluster, namespace), timeout=60, what="the claim deleted")
    again = unique("again")
    create_podgroup(cluster, namespace, again, 2)
    create_job(batch, namespace, again, again, 2, "1")
    wait_all_bound(cluster, namespace, again, 2)
    assert len(allocated_devices(the_claim(cluster, namespace))) == 2


def test_members_of_a_podgroup_claim_on_a_network_pool_spread_over_the_nodes_it_reaches(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    podgroups: None,
    check_invariants: None,
) -> None:
    """A fabric pool on 2 of 4 nodes; a PodGroup's claim asks for 2 of its devices; 2 members
    that fill a node each: both bound on the pool's nodes, one on each, sharing one claim whose
    allocation carries the pool's node selector."""
    cluster = clean_nodes
    label = {"fabric.example.com/rack": unique("rack")}
    capacity = {"cpu": "8", "memory": "32Gi"}
    reached = cluster.add_nodes(["pgn-0", "pgn-1"], capacity, labels=label)
    cluster.add_nodes(["pgn-2", "pgn-3"], capacity)
    devices.create_class()
    selector = devices.publish_network("fabric", 2, node_labels=label)
    devices.create_template(namespace, "pair", 2)
    uid = create_podgroup(cluster, namespace, "spread", 2)
    create_job(batch, namespace, "spread", "spread", 2, "6")

    pods = wait_all_bound(cluster, namespace, "spread", 2)
    assert sorted(p.spec.node_name for p in pods) == sorted(reached)
    claim = the_claim(cluster, namespace)
    assert claim["status"]["allocation"]["nodeSelector"] == selector
    assert reservations(claim) == [podgroup_consumer("spread", uid)]


def test_a_what_if_for_pods_joining_a_podgroup_sends_them_to_its_claim(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    batch: client.BatchV1Api,
    podgroups: None,
    kubeconfig: str,
    tmp_path: Path,
    check_invariants: None,
) -> None:
    """A PodGroup's claim allocated for its first 2 members on one node: the daemon's what-if
    for a Job of 2 more pods joining it (the file holds the Job alone, not the template) says
    they go to that node sharing the claim, and names it (asked from the API server too);
    submitted, they land there, and the PodGroup still has its one claim."""
    if not isinstance(daemon, LocalDaemon):
        pytest.skip("asks the HTTP endpoint of a daemon process of its own")
    cluster = clean_nodes
    nodes = cluster.add_nodes(["pgw-0", "pgw-1"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    for name in nodes:
        devices.publish(name, 2)
    devices.create_template(namespace, "pair", 2)
    create_podgroup(cluster, namespace, "train", 2)
    create_job(batch, namespace, "train", "train", 2, "1")
    wait_all_bound(cluster, namespace, "train", 2)
    claim = the_claim(cluster, namespace)
    name, node = claim["metadata"]["name"], allocated_node(claim)

    job = podgroup_job("more", "train", 2, "1")
    job["metadata"]["namespace"] = namespace
    said = f"resourceclaim {namespace}/{name} of PodGroup {namespace}/train"

    replies: list[tuple[int, dict[str, Any]]] = []

    def answered() -> list[dict[str, Any]] | None:
        # The daemon hears of the PodGroup's claim through its watches: soon, not at once.
        replies.append(daemon.what_if(yaml.safe_dump(job)))
        status, answer = replies[-1]
        if status != 200:
            return None
        groups: list[dict[str, Any]] = answer["groups"]
        named = all(any(c.startswith(said) for c in g["podGroupClaims"]) for g in groups)
        return groups if named else None

    # The gang is at its minimum already: each new member is tried on its own.
    groups = wait_until(
        answered,
        timeout=30,
        what="a what-if naming the PodGroup's claim",
        last=lambda: replies[-1],
    )
    assert [g["outcome"] for g in groups] == ["bind", "bind"], groups
    placements = {pod: where for g in groups for pod, where in g["placements"].items()}
    assert placements == {f"{namespace}/more-whatif-{i}": node for i in range(2)}
    told = groups[0]["podGroupClaims"][0]
    assert f"allocated already on {node}: " in told
    assert all(g["devices"] == {} for g in groups)
    # Worked out from the API server alone, it says the same, in words.
    path = tmp_path / "more.yaml"
    path.write_text(yaml.safe_dump(job))
    command = [sys.executable, "-m", "koordgang", "whatif", "-f", str(path), "--from-cluster"]
    reply = subprocess.run(
        [*command, "--kubeconfig", kubeconfig], capture_output=True, text=True, timeout=120
    )
    assert reply.returncode == 0, reply.stderr
    for pod in placements:
        assert f"  {node}: {pod}\n" in reply.stdout
    assert f"  claim: {told}\n" in reply.stdout

    create_job(batch, namespace, "more", "train", 2, "1")
    pods = wait_all_bound(cluster, namespace, "more", 2)
    assert {p.spec.node_name for p in pods} == {node}
    assert {claim_of(p) for p in pods} == {name}
    assert [c["metadata"]["name"] for c in claims(cluster, namespace)] == [name]
