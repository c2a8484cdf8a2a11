"""Gangs of gangs on a real API server (Kubernetes 1.37, ``scheduling.k8s.io/v1alpha3``): a
CompositePodGroup of three PodGroups of four pods, ``minGroupCount: 2``, each PodGroup's pods
made by a Job of its own, as a user who brings their own PodGroups makes them. At least two
children bind whole in one decision, none partly; the third binds later, whole; members say
why they wait; the composite's condition says what happened."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from kubernetes import client

from harness.daemon import Daemon
from harness.gangs import UPSTREAM, assert_no_partial_gangs, holds, wait_explained
from harness.invariants import assert_invariants
from harness.kube import KEEP_RUNNING, Cluster, bound, job_body, json_object, pod_body, wait_until

GROUP = "scheduling.k8s.io"
COMPOSITE_VERSION = "v1alpha3"
CONDITION = "CompositePodGroupInitiallyScheduled"
CHILDREN = ("train-0", "train-1", "train-2")


@pytest.fixture
def composites(cluster: Cluster, namespace: str) -> Iterator[None]:
    """CompositePodGroups are served (Kubernetes 1.37 with CompositePodGroup on), and what a
    test made of them goes with the test."""
    try:
        cluster.custom.list_cluster_custom_object(
            GROUP, COMPOSITE_VERSION, "compositepodgroups", limit=1
        )
    except client.exceptions.ApiException as error:
        # The local plane of 1.37 serves them; 1.36 has none, nor a kind node image of 1.34.
        if error.status == 404 and (
            UPSTREAM[1] == "v1alpha2" or os.environ.get("KOORDGANG_E2E_KUBECONFIG")
        ):
            pytest.skip(f"{GROUP}/{COMPOSITE_VERSION} is not served by this cluster")
        raise
    yield
    try:
        assert_invariants(cluster, namespace)
        assert_no_partial_gangs(cluster, [namespace])
    finally:
        client.BatchV1Api(cluster.api_client).delete_collection_namespaced_job(
            namespace, propagation_policy="Background"
        )


def create(cluster: Cluster, namespace: str, plural: str, version: str, body: Any) -> None:
    cluster.custom.create_namespaced_custom_object(GROUP, version, namespace, plural, body)


def make_tree(cluster: Cluster, namespace: str, min_groups: int = 2) -> None:
    create(
        cluster,
        namespace,
        "compositepodgroups",
        COMPOSITE_VERSION,
        {
            "apiVersion": f"{GROUP}/{COMPOSITE_VERSION}",
            "kind": "CompositePodGroup",
            "metadata": {"name": "train"},
            "spec": {
                "workloadRef": {"workloadName": "train", "templateName": "train"},
                "schedulingPolicy": {"gang": {"minGroupCount": min_groups}},
            },
        },
    )
    for child in CHILDREN:
        create(
            cluster,
            namespace,
            "podgroups",
            UPSTREAM[1],
            {
                "apiVersion": f"{GROUP}/{UPSTREAM[1]}",
                "kind": "PodGroup",
                "metadata": {"name": child},
                "spec": {
                    "parentCompositePodGroupName": "train",
                    "workloadRef": {"workloadName": "train", "templateName": "worker"},
                    "schedulingPolicy": {"gang": {"minCount": 4}},
                },
            },
        )
        pod = pod_body("worker", requests={"cpu": "1", "memory": "1Gi"}, annotations=KEEP_RUNNING)
        body = job_body(child, 4, pod)
        # The user's own PodGroup: the Job controller makes none for this Job.
        body["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": child}
        client.BatchV1Api(cluster.api_client).create_namespaced_job(
            namespace, client.V1Job.model_validate(body)
        )


def pods_of(cluster: Cluster, namespace: str) -> dict[str, list[Any]]:
    return {child: cluster.pods(namespace, f"job-name={child}") for child in CHILDREN}


def bound_counts(cluster: Cluster, namespace: str) -> dict[str, int]:
    return {child: len(bound(pods)) for child, pods in pods_of(cluster, namespace).items()}


def composite_condition(cluster: Cluster, namespace: str) -> Mapping[str, Any] | None:
    obj = json_object(
        cluster.custom.get_namespaced_custom_object(
            GROUP, COMPOSITE_VERSION, namespace, "compositepodgroups", "train"
        )
    )
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == CONDITION:
            found: Mapping[str, Any] = condition
            return found
    return None


def test_a_composite_binds_its_minimum_of_children_whole_then_the_rest_whole(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, composites: None
) -> None:
    cluster = clean_nodes
    # Room for one child of four cpu and three pods more: below the minimum of two children.
    cluster.add_nodes(["cpg-1"], {"cpu": "7", "memory": "32Gi"})
    make_tree(cluster, namespace)
    wait_until(
        lambda: all(len(p) == 4 for p in pods_of(cluster, namespace).values()),
        timeout=60,
        what="the three Jobs' pods",
    )
    names = [p.metadata.name for pods in pods_of(cluster, namespace).values() for p in pods]
    wait_explained(cluster, namespace, names, "CompositePodGroup")
    messages = wait_explained(
        cluster, namespace, names, f"CompositePodGroup {namespace}/train: 1 of min 2"
    )
    assert len(messages) == 12, messages
    holds(lambda: sum(bound_counts(cluster, namespace).values()) == 0, 2, what="nothing bound")
    waiting = wait_until(
        lambda: (c := composite_condition(cluster, namespace)) and c.get("status") == "False" and c,
        timeout=30,
        what=f"{CONDITION}=False",
    )
    assert waiting["reason"] == "Unschedulable", waiting

    # Room for two children: two bind whole, in one decision; the third not at all.
    cluster.add_nodes(["cpg-2"], {"cpu": "3", "memory": "32Gi"})
    wait_until(
        lambda: sorted(bound_counts(cluster, namespace).values()) == [0, 4, 4],
        timeout=60,
        what="two children bound whole",
        last=lambda: bound_counts(cluster, namespace),
    )
    holds(
        lambda: sorted(bound_counts(cluster, namespace).values()) == [0, 4, 4],
        2,
        what="the third child bound not at all",
    )
    scheduled = wait_until(
        lambda: (c := composite_condition(cluster, namespace)) and c.get("status") == "True" and c,
        timeout=30,
        what=f"{CONDITION}=True",
    )
    assert scheduled["reason"] == "Scheduled"

    # The third, alone now, whole once there is room.
    cluster.add_nodes(["cpg-3"], {"cpu": "4", "memory": "32Gi"})
    wait_until(
        lambda: sorted(bound_counts(cluster, namespace).values()) == [4, 4, 4],
        timeout=60,
        what="the third child bound whole",
        last=lambda: bound_counts(cluster, namespace),
    )

    def initially_scheduled(child: str) -> bool:
        podgroup = json_object(
            cluster.custom.get_namespaced_custom_object(
                GROUP, UPSTREAM[1], namespace, "podgroups", child
            )
        )
        conditions = (podgroup.get("status") or {}).get("conditions") or []
        return any(
            c["type"] == "PodGroupInitiallyScheduled" and c["status"] == "True" for c in conditions
        )

    wait_until(
        lambda: all(initially_scheduled(child) for child in CHILDREN),
        timeout=30,
        what="PodGroupInitiallyScheduled=True on every child",
    )


def test_a_composite_whose_parent_is_missing_places_nothing_and_says_so(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, composites: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["cpg-4"], {"cpu": "8", "memory": "32Gi"})
    create(
        cluster,
        namespace,
        "podgroups",
        UPSTREAM[1],
        {
            "apiVersion": f"{GROUP}/{UPSTREAM[1]}",
            "kind": "PodGroup",
            "metadata": {"name": "orphan"},
            "spec": {
                "parentCompositePodGroupName": "nowhere",
                "workloadRef": {"workloadName": "w", "templateName": "worker"},
                "schedulingPolicy": {"gang": {"minCount": 2}},
            },
        },
    )
    body = job_body("orphan", 2, pod_body("worker", requests={"cpu": "1", "memory": "1Gi"}))
    body["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "orphan"}
    client.BatchV1Api(cluster.api_client).create_namespaced_job(
        namespace, client.V1Job.model_validate(body)
    )
    pods = wait_until(
        lambda: (p := cluster.pods(namespace, "job-name=orphan")) and len(p) == 2 and p,
        timeout=60,
        what="the Job's pods",
    )
    wait_explained(
        cluster,
        namespace,
        [p.metadata.name for p in pods],
        f"CompositePodGroup {namespace}/nowhere does not exist",
    )
    holds(lambda: not bound(cluster.pods(namespace, "job-name=orphan")), 2, what="nothing bound")
