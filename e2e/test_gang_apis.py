"""Every gang API on a real API server, with pods made the way users make them (Jobs): the
upstream Job controller's Workload and PodGroup, scheduler-plugins' and Volcano's PodGroups, and
Kueue's plain pod groups. Each gang binds whole or not at all, its pods say why they wait, and
its group object's status says what happened in that API's own terms."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from harness.daemon import Daemon
from harness.gangs import (
    KUEUE_LABEL,
    KUEUE_TOTAL,
    UPSTREAM,
    UPSTREAM_CONDITION,
    VOLCANO,
    VOLCANO_ANNOTATION,
    X_K8S,
    X_K8S_LABEL,
    assert_no_partial_gangs,
    explanation,
    group_object,
    holds,
    wait_explained,
)
from harness.invariants import assert_invariants
from harness.kube import Cluster, bound, job_body, json_object, pod_body, wait_until

KUEUE_GATE = "kueue.x-k8s.io/admission"


@pytest.fixture
def upstream_api(cluster: Cluster) -> None:
    """The upstream gang API is served (the local control plane always serves it; a kind
    cluster of Kubernetes 1.34 cannot)."""
    try:
        cluster.custom.list_cluster_custom_object(UPSTREAM[0], UPSTREAM[1], "podgroups", limit=1)
    except client.exceptions.ApiException as error:
        if error.status == 404 and os.environ.get("KOORDGANG_E2E_KUBECONFIG"):
            pytest.skip(f"{UPSTREAM[0]}/{UPSTREAM[1]} is not served by this cluster")
        raise


@pytest.fixture
def api_check(cluster: Cluster, namespace: str) -> Iterator[None]:
    """After the scenario: the common invariants, and no gang of any API bound below its
    minimum."""
    yield
    try:
        assert_invariants(cluster, namespace)
        assert_no_partial_gangs(cluster, [namespace])
    finally:
        # The Jobs go first: a Job would replace the pods the namespace fixture deletes.
        client.BatchV1Api(cluster.api_client).delete_collection_namespaced_job(
            namespace, propagation_policy="Background"
        )
        # Left behind, an enqueued Volcano PodGroup would hold room promised to it.
        for group, version in (X_K8S, VOLCANO):
            cluster.custom.delete_collection_namespaced_custom_object(
                group, version, namespace, "podgroups"
            )


def create_job(cluster: Cluster, namespace: str, body: Mapping[str, Any]) -> None:
    client.BatchV1Api(cluster.api_client).create_namespaced_job(
        namespace, client.V1Job.model_validate(dict(body))
    )


def job_pods(cluster: Cluster, namespace: str, job: str) -> list[Any]:
    return cluster.pods(namespace, f"job-name={job}")


def create_group(
    cluster: Cluster, api: tuple[str, str], namespace: str, body: dict[str, Any]
) -> None:
    body = {"apiVersion": f"{api[0]}/{api[1]}", "kind": "PodGroup", **body}
    cluster.custom.create_namespaced_custom_object(api[0], api[1], namespace, "podgroups", body)


def group_status(
    cluster: Cluster, api: tuple[str, str], namespace: str, name: str
) -> dict[str, Any]:
    obj = group_object(cluster, api, namespace, name) or {}
    status: dict[str, Any] = obj.get("status") or {}
    return status


def wait_all_pending_explained(
    cluster: Cluster, namespace: str, job: str, count: int, contains: str
) -> dict[str, str]:
    pods = wait_until(
        lambda: (p := job_pods(cluster, namespace, job)) and len(p) == count and p,
        timeout=60,
        what=f"{count} pods of Job {job}",
    )
    return wait_explained(cluster, namespace, [p.metadata.name for p in pods], contains)


def wait_all_bound(cluster: Cluster, namespace: str, job: str, count: int) -> list[Any]:
    pods: list[Any] = wait_until(
        lambda: len(bound(p := job_pods(cluster, namespace, job))) == count and p,
        timeout=60,
        what=f"{count} pods of Job {job} bound",
    )
    return pods


def worker(cpu: str = "2", **pod_args: Any) -> dict[str, Any]:
    return pod_body("worker", requests={"cpu": cpu, "memory": "1Gi"}, **pod_args)


# -- upstream Kubernetes: the Job controller writes the gang ----------------------------------


def indexed_job(name: str, pods: int, pod: Mapping[str, Any]) -> dict[str, Any]:
    """An Indexed Job the Job controller makes a gang of: on 1.36 any with parallelism ==
    completions > 1; from 1.37 one that asks for it (``spec.scheduling``, alpha)."""
    body = job_body(name, pods, pod)
    body["spec"]["completionMode"] = "Indexed"
    if UPSTREAM[1] != "v1alpha2":
        body["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}}}
    return body


def upstream_podgroup_of(cluster: Cluster, namespace: str, job: str) -> dict[str, Any]:
    """The PodGroup the Job controller made for ``job`` (it names it after a hash)."""

    def find() -> dict[str, Any] | None:
        listed = json_object(
            cluster.custom.list_namespaced_custom_object(
                UPSTREAM[0], UPSTREAM[1], namespace, "podgroups"
            )
        )
        for item in listed["items"]:
            owners = item["metadata"].get("ownerReferences") or []
            if any(o["kind"] == "Job" and o["name"] == job for o in owners):
                found: dict[str, Any] = item
                return found
        return None

    podgroup: dict[str, Any] = wait_until(find, timeout=30, what=f"the PodGroup of Job {job}")
    return podgroup


def scheduled_condition_of(podgroup: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (podgroup.get("status") or {}).get("conditions") or []:
        if condition.get("type") == UPSTREAM_CONDITION:
            found: Mapping[str, Any] = condition
            return found
    return None


@pytest.mark.upstream
def test_an_indexed_job_from_the_upstream_job_controller_binds_whole_or_not_at_all(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, upstream_api: None, api_check: None
) -> None:
    cluster = clean_nodes
    # Room for three workers of 2 cpu; the Job runs four at once.
    cluster.add_nodes(["up-1"], {"cpu": "6", "memory": "32Gi"})
    create_job(cluster, namespace, indexed_job("train", 4, worker()))
    podgroup = upstream_podgroup_of(cluster, namespace, "train")
    assert podgroup["spec"]["schedulingPolicy"]["gang"]["minCount"] == 4
    name = podgroup["metadata"]["name"]

    messages = wait_all_pending_explained(
        cluster, namespace, "train", 4, f"gang {namespace}/{name}"
    )
    assert all("3/4 members placed" in m or "min 4" in m for m in messages.values()), messages
    holds(lambda: not bound(job_pods(cluster, namespace, "train")), 2, what="nothing bound")
    waiting = wait_until(
        lambda: (
            (c := scheduled_condition_of(group_object(cluster, UPSTREAM, namespace, name) or {}))
            and c.get("status") == "False"
            and c
        ),
        timeout=30,
        what=f"{UPSTREAM_CONDITION}=False on the PodGroup",
    )
    assert waiting["reason"] == "Unschedulable" and "min 4" in waiting["message"]

    cluster.add_nodes(["up-2"], {"cpu": "6", "memory": "32Gi"})
    wait_all_bound(cluster, namespace, "train", 4)
    scheduled = wait_until(
        lambda: (
            (c := scheduled_condition_of(group_object(cluster, UPSTREAM, namespace, name) or {}))
            and c.get("status") == "True"
            and c
        ),
        timeout=30,
        what=f"{UPSTREAM_CONDITION}=True on the PodGroup",
    )
    assert scheduled["reason"] == "Scheduled"


@pytest.mark.upstream
def test_upstream_pods_whose_podgroup_never_appears_wait_and_say_so(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, upstream_api: None, api_check: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["up-3"], {"cpu": "8", "memory": "32Gi"})
    body = worker("1")
    body["metadata"]["name"] = "lonely"
    body["spec"]["schedulingGroup"] = {"podGroupName": "nowhere"}
    cluster.create_pod(namespace, body)
    wait_explained(
        cluster,
        namespace,
        ["lonely"],
        ["waiting for PodGroup", "nowhere", "spec.schedulingGroup.podGroupName"],
    )


@pytest.mark.upstream
def test_a_hand_written_upstream_podgroup_and_its_job_bind_whole_and_its_condition_follows(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, upstream_api: None, api_check: None
) -> None:
    """A PodGroup written by hand in the version the server serves (v1beta1 on 1.37), named by
    the pods of a Job of the user's own (the Job controller then makes none)."""
    cluster = clean_nodes
    cluster.add_nodes(["hw-1"], {"cpu": "4", "memory": "32Gi"})
    create_group(
        cluster,
        UPSTREAM,
        namespace,
        {"metadata": {"name": "mine"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}},
    )
    body = job_body("mine", 3, worker())
    body["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    create_job(cluster, namespace, body)
    wait_all_pending_explained(cluster, namespace, "mine", 3, f"gang {namespace}/mine")
    holds(lambda: not bound(job_pods(cluster, namespace, "mine")), 2, what="nothing bound")
    wait_until(
        lambda: (
            (c := scheduled_condition_of(group_object(cluster, UPSTREAM, namespace, "mine") or {}))
            and c.get("status") == "False"
        ),
        timeout=30,
        what=f"{UPSTREAM_CONDITION}=False on the PodGroup",
    )
    cluster.add_nodes(["hw-2"], {"cpu": "4", "memory": "32Gi"})
    wait_all_bound(cluster, namespace, "mine", 3)
    wait_until(
        lambda: (
            (c := scheduled_condition_of(group_object(cluster, UPSTREAM, namespace, "mine") or {}))
            and c.get("status") == "True"
        ),
        timeout=30,
        what=f"{UPSTREAM_CONDITION}=True on the PodGroup",
    )


# -- scheduler-plugins ------------------------------------------------------------------------


def test_a_scheduler_plugins_podgroup_and_its_job_bind_whole_and_its_status_follows(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, api_check: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["sp-1"], {"cpu": "6", "memory": "32Gi"})
    create_group(cluster, X_K8S, namespace, {"metadata": {"name": "mpi"}, "spec": {"minMember": 4}})
    create_job(cluster, namespace, job_body("mpi", 4, worker(labels={X_K8S_LABEL: "mpi"})))

    wait_all_pending_explained(cluster, namespace, "mpi", 4, f"gang {namespace}/mpi")
    holds(lambda: not bound(job_pods(cluster, namespace, "mpi")), 2, what="nothing bound")
    wait_until(
        lambda: group_status(cluster, X_K8S, namespace, "mpi").get("phase") == "Scheduling",
        timeout=30,
        what="phase Scheduling",
    )

    cluster.add_nodes(["sp-2"], {"cpu": "6", "memory": "32Gi"})
    wait_all_bound(cluster, namespace, "mpi", 4)
    status = wait_until(
        lambda: (
            (s := group_status(cluster, X_K8S, namespace, "mpi")).get("phase")
            in ("Scheduled", "Running", "Finished")  # kwok may finish a Job's pods at once
            and s.get("scheduled") == 4
            and s
        ),
        timeout=30,
        what="phase Scheduled, Running or Finished with 4 scheduled",
        last=lambda: group_status(cluster, X_K8S, namespace, "mpi"),
    )
    assert status["occupiedBy"] == f"{namespace}/mpi" and status.get("scheduleStartTime")


def test_a_group_object_with_a_bad_minimum_or_deleted_midway_is_explained_on_the_pods(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, api_check: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["bad-1"], {"cpu": "2", "memory": "32Gi"})
    # Volcano's CRD does not validate minMember: the scheduler must.
    create_group(
        cluster, VOLCANO, namespace, {"metadata": {"name": "bad"}, "spec": {"minMember": -1}}
    )
    annotations = {VOLCANO_ANNOTATION: "bad"}
    create_job(cluster, namespace, job_body("bad", 2, worker("1", annotations=annotations)))
    wait_all_pending_explained(cluster, namespace, "bad", 2, 'spec.minMember="-1" is less than 1')
    events = cluster.events_for(namespace, "bad")
    assert any(e.reason == "InvalidGangConfig" for e in events), [e.reason for e in events]

    # A scheduler-plugins gang too big for the room; its PodGroup is deleted while it waits.
    create_group(
        cluster, X_K8S, namespace, {"metadata": {"name": "gone"}, "spec": {"minMember": 3}}
    )
    labels = {X_K8S_LABEL: "gone"}
    create_job(cluster, namespace, job_body("gone", 3, worker("1", labels=labels)))
    wait_all_pending_explained(cluster, namespace, "gone", 3, "min 3")
    cluster.custom.delete_namespaced_custom_object(
        X_K8S[0], X_K8S[1], namespace, "podgroups", "gone"
    )
    cluster.add_nodes(["bad-2"], {"cpu": "8", "memory": "32Gi"})
    wait_all_pending_explained(
        cluster, namespace, "gone", 3, f"waiting for PodGroup {namespace}/gone (scheduler-plugins"
    )
    holds(lambda: not bound(job_pods(cluster, namespace, "gone")), 2, what="nothing bound")


# -- Volcano ----------------------------------------------------------------------------------


def test_a_volcano_podgroup_is_enqueued_when_it_could_fit_then_runs_whole(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, api_check: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["vc-1"], {"cpu": "6", "memory": "32Gi"})
    create_group(
        cluster,
        VOLCANO,
        namespace,
        {
            "metadata": {"name": "ps-job"},
            "spec": {
                "minMember": 3,
                "minTaskMember": {"ps": 1, "worker": 2},
                "minResources": {"cpu": "8"},
                "queue": "default",
            },
        },
    )
    # A client in Volcano mode makes no pod while the PodGroup is Pending.
    pending = wait_until(
        lambda: (
            (s := group_status(cluster, VOLCANO, namespace, "ps-job")).get("phase") == "Pending"
            and s.get("conditions")
            and s
        ),
        timeout=30,
        what="phase Pending with a reason",
    )
    assert "needs 8 cpu, more than is free" in pending["conditions"][0]["message"]
    holds(
        lambda: group_status(cluster, VOLCANO, namespace, "ps-job").get("phase") == "Pending",
        2,
        what="still Pending",
    )

    cluster.add_nodes(["vc-2"], {"cpu": "6", "memory": "32Gi"})
    wait_until(
        lambda: group_status(cluster, VOLCANO, namespace, "ps-job").get("phase") == "Inqueue",
        timeout=30,
        what="phase Inqueue",
    )
    for task, count in (("ps", 1), ("worker", 2)):
        annotations = {VOLCANO_ANNOTATION: "ps-job", "volcano.sh/task-spec": task}
        create_job(
            cluster,
            namespace,
            job_body(f"ps-job-{task}", count, worker(annotations=annotations)),
        )
    for task, count in (("ps", 1), ("worker", 2)):
        wait_all_bound(cluster, namespace, f"ps-job-{task}", count)
    wait_until(
        lambda: (
            group_status(cluster, VOLCANO, namespace, "ps-job").get("phase")
            in ("Running", "Completed")
        ),
        timeout=30,
        what="phase Running (or Completed: kwok runs a Job's pods to completion at once)",
    )
    ignored = [e for e in cluster.events_for(namespace, "ps-job") if e.reason == "FieldIgnored"]
    assert len(ignored) == 1 and 'spec.queue="default"' in ignored[0].message


def test_a_volcano_task_minimum_larger_than_its_task_is_explained(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, api_check: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["vc-3"], {"cpu": "8", "memory": "32Gi"})
    create_group(
        cluster,
        VOLCANO,
        namespace,
        {"metadata": {"name": "short"}, "spec": {"minMember": 2, "minTaskMember": {"worker": 3}}},
    )
    annotations = {VOLCANO_ANNOTATION: "short", "volcano.sh/task-spec": "worker"}
    create_job(cluster, namespace, job_body("short", 2, worker("1", annotations=annotations)))
    wait_all_pending_explained(
        cluster, namespace, "short", 2, "task worker has 2/3 members created"
    )


# -- Kueue ------------------------------------------------------------------------------------


def test_a_kueue_pod_group_binds_whole_once_its_gates_are_removed(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, api_check: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["kq-1"], {"cpu": "8", "memory": "32Gi"})
    pod = worker(labels={KUEUE_LABEL: "grp"}, annotations={KUEUE_TOTAL: "3"})
    pod["spec"]["schedulingGates"] = [{"name": KUEUE_GATE}]
    create_job(cluster, namespace, job_body("grp", 3, pod))
    pods = wait_until(
        lambda: (p := job_pods(cluster, namespace, "grp")) and len(p) == 3 and p,
        timeout=60,
        what="3 pods",
    )
    # Kueue admits the group by removing the gate from each pod, one at a time.
    for index, member in enumerate(pods):
        # A JSON patch (a list body is sent as one): it removes the gates.
        cluster.core.patch_namespaced_pod(
            member.metadata.name,
            namespace,
            [{"op": "remove", "path": "/spec/schedulingGates"}],
        )
        if index < 2:
            holds(lambda: not bound(job_pods(cluster, namespace, "grp")), 1, what="none bound")
    wait_all_bound(cluster, namespace, "grp", 3)
    assert all(explanation(p) is None for p in job_pods(cluster, namespace, "grp"))


# -- the examples users copy ------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parent.parent / "manifests" / "examples"


def apply_example(cluster: Cluster, namespace: str, file: str) -> list[str]:
    """Creates every object of an example file in ``namespace``, as `kubectl apply -f` would;
    returns the names of its Jobs."""
    jobs = []
    for body in yaml.safe_load_all((EXAMPLES / file).read_text()):
        if body["kind"] == "Job":
            create_job(cluster, namespace, body)
            jobs.append(body["metadata"]["name"])
        else:
            group, version = body["apiVersion"].split("/")
            plural = body["kind"].lower() + "s"
            cluster.custom.create_namespaced_custom_object(group, version, namespace, plural, body)
    return jobs


@pytest.mark.parametrize(
    "example",
    [
        "scheduler-plugins-gang.yaml",
        "volcano-gang.yaml",
        pytest.param("upstream-indexed-job.yaml", marks=pytest.mark.upstream),
        "upstream-composite.yaml",
    ],
)
def test_each_gang_api_example_binds_whole(
    example: str,
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    upstream_api: None,
    api_check: None,
) -> None:
    cluster = clean_nodes
    if "composite" in example and UPSTREAM[1] == "v1alpha2":
        pytest.skip("Kubernetes 1.36 has no CompositePodGroup")
    cluster.add_nodes(["ex-1"], {"cpu": "4", "memory": "16Gi"})
    for job in apply_example(cluster, namespace, example):
        spec = client.BatchV1Api(cluster.api_client).read_namespaced_job(job, namespace).spec
        assert spec is not None and spec.parallelism is not None, f"Job {job} without parallelism"
        wait_all_bound(cluster, namespace, job, spec.parallelism)
