"""Job-level preemption on a real API server with kube-controller-manager: low-priority pods
of a Deployment fill the nodes; a high-priority PodGroup job arrives and makes room for all of
its members at once, with the fewest victims, and binds where it was nominated."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from harness.daemon import Daemon
from harness.disruptions import DisruptionWatch
from harness.gangs import (
    GangBook,
    wait_bound,
)
from harness.kube import Cluster, deployment_body, pod_body, wait_until

CONDITION_MESSAGE = (
    "koord-scheduler: preempting to accommodate higher priority pods, "
    "preemptor: {namespace}/hello-job, triggerpod: {namespace}/{trigger}"
)


def test_a_high_priority_job_evicts_the_fewest_low_priority_pods_and_binds_whole(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    priority_classes: None,
    disruptions: DisruptionWatch,
    apps: client.AppsV1Api,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    nodes = cluster.add_nodes([f"pre-{i}" for i in range(8)], {"cpu": "4", "memory": "32Gi"})
    filler = pod_body("filler", requests={"cpu": "1"}, priority_class="e2e-low")
    apps.create_namespaced_deployment(
        namespace, client.V1Deployment.model_validate(deployment_body("filler", 32, filler))
    )

    def filler_bound() -> bool:
        pods = cluster.pods(namespace, "app=filler")
        return len([p for p in pods if p.spec.node_name]) == 32

    wait_until(filler_bound, timeout=120, what="32 filler pods bound on 8 nodes")

    # 4 members of 2 cpu each: 8 cpu, so at least 8 victims of 1 cpu.
    gang = gang_book.gang("hello-job", 4, way="podgroup", requests={"cpu": "2"})
    gang_book.create_podgroup(gang)
    gang_book.create_pods(gang, priority_class="e2e-high")

    bound = wait_bound(cluster, gang, timeout=120)
    assert len(bound) == 4
    for member in bound:
        # Nominated first, then bound where it was nominated.
        assert disruptions.nominated.get(member.metadata.name) == [member.spec.node_name]
    assert {m.spec.node_name for m in bound} <= set(nodes)

    victims = dict(disruptions.seen)
    assert len(victims) == 8, sorted(victims)
    triggers = {c.message.rsplit("/", 1)[1] for c in victims.values()}
    assert len(triggers) == 1
    for condition in victims.values():
        assert (condition.status, condition.reason) == ("True", "PreemptionByScheduler")
        assert condition.message == CONDITION_MESSAGE.format(
            namespace=namespace, trigger=next(iter(triggers))
        )

    # The Deployment replaces its 8 pods: they stay pending (no room left), each told why.
    def replacements_explained() -> list[Any]:
        pods = cluster.pods(namespace, "app=filler")
        waiting = [
            p for p in pods if not p.spec.node_name and p.metadata.deletion_timestamp is None
        ]
        told = [
            p
            for p in waiting
            if any(c.type == "PodScheduled" and c.message for c in p.status.conditions or [])
        ]
        return told if len(told) == 8 else []

    told = wait_until(replacements_explained, timeout=60, what="8 replacements explained")
    for pod in told:
        message = next(c.message for c in pod.status.conditions if c.type == "PodScheduled")
        assert "Insufficient cpu" in message, message


def test_policy_never_and_equal_priority_evict_nothing_and_say_why(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    priority_classes: None,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["never-1"], {"cpu": "2", "memory": "8Gi"})
    api = client.SchedulingV1Api(cluster.api_client)
    try:
        api.create_priority_class(
            client.V1PriorityClass(
                metadata=client.V1ObjectMeta(name="e2e-high-never"),
                value=100,
                preemption_policy="Never",
            )
        )
    except ApiException as error:
        if error.status != 409:
            raise
    for i in range(2):
        cluster.create_pod(
            namespace, pod_body(f"low-{i}", requests={"cpu": "1"}, priority_class="e2e-low")
        )
    wait_until(
        lambda: all(p.spec.node_name for p in cluster.pods(namespace)),
        what="the low-priority pods bound",
    )
    cluster.create_pod(
        namespace, pod_body("never", requests={"cpu": "1"}, priority_class="e2e-high-never")
    )
    cluster.create_pod(
        namespace, pod_body("equal", requests={"cpu": "1"}, priority_class="e2e-low")
    )

    def told(name: str, text: str) -> bool:
        pod = cluster.pod(namespace, name)
        return any(
            c.type == "PodScheduled" and c.message and c.message.endswith(text)
            for c in pod.status.conditions or []
        )

    wait_until(lambda: told("never", "preemptionPolicy is Never"), what="never explained")
    wait_until(
        lambda: told("equal", "preemption is not helpful: no pod of lower priority to evict"),
        what="equal explained",
    )
    assert all(p.metadata.deletion_timestamp is None for p in cluster.pods(namespace))
    assert len([p for p in cluster.pods(namespace) if p.spec.node_name]) == 2
