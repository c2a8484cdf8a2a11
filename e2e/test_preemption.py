"""Job-level preemption on a real API server with kube-controller-manager: low-priority pods
of a Deployment fill the nodes; a high-priority PodGroup job arrives and makes room for all of
its members at once, with the fewest victims, and binds where it was nominated."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from e2e.daemon import Daemon
from e2e.gangs import (
    GangBook,
    gang_book_fixture,  # noqa: F401 (the gang_book fixture)
    wait_bound,
)
from e2e.kube import Cluster, deployment_body, pod_body, wait_until

PRIORITIES = {"e2e-low": 10, "e2e-medium": 50, "e2e-high": 100}
CONDITION_MESSAGE = (
    "koord-scheduler: preempting to accommodate higher priority pods, "
    "preemptor: {namespace}/hello-job, triggerpod: {namespace}/{trigger}"
)


@pytest.fixture(scope="module")
def priority_classes(cluster: Cluster) -> None:
    api = client.SchedulingV1Api(cluster.api_client)
    for name, value in PRIORITIES.items():
        body = client.V1PriorityClass(metadata=client.V1ObjectMeta(name=name), value=value)
        try:
            api.create_priority_class(body)
        except ApiException as error:
            if error.status != 409:
                raise


class DisruptionWatch:
    """Records every DisruptionTarget condition a pod of the namespace carried (victims are
    deleted right after, so only a watch sees them)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.seen: dict[str, Any] = {}
        #: pod name -> every nominatedNodeName it showed, in order.
        self.nominated: dict[str, list[str]] = {}
        self._watch = watch.Watch()
        self._thread = threading.Thread(
            target=self._run, args=(cluster, namespace), daemon=True, name="disruption-watch"
        )
        self._thread.start()

    def _run(self, cluster: Cluster, namespace: str) -> None:
        try:
            for event in self._watch.stream(
                cluster.core.list_namespaced_pod, namespace, timeout_seconds=300
            ):
                self._record(event["object"])
        except Exception:
            return

    def _record(self, pod: Any) -> None:
        for condition in pod.status.conditions or []:
            if condition.type == "DisruptionTarget":
                self.seen[pod.metadata.name] = condition
        node = pod.status.nominated_node_name
        if node:
            history = self.nominated.setdefault(pod.metadata.name, [])
            if not history or history[-1] != node:
                history.append(node)

    def stop(self) -> None:
        self._watch.stop()


@pytest.fixture
def disruptions(cluster: Cluster, namespace: str) -> Iterator[DisruptionWatch]:
    recorder = DisruptionWatch(cluster, namespace)
    yield recorder
    recorder.stop()


@pytest.fixture
def apps(cluster: Cluster, namespace: str) -> Iterator[client.AppsV1Api]:
    """Deployments of the test; deleted first at the end, so that no controller makes pods
    for later tests."""
    api = client.AppsV1Api(cluster.api_client)
    yield api
    for deployment in api.list_namespaced_deployment(namespace).items:
        api.delete_namespaced_deployment(
            deployment.metadata.name, namespace, propagation_policy="Orphan"
        )
    wait_until(
        lambda: (
            not client.AppsV1Api(cluster.api_client).list_namespaced_replica_set(namespace).items
            or all(
                api.delete_namespaced_replica_set(rs.metadata.name, namespace) is not None
                for rs in api.list_namespaced_replica_set(namespace).items
            )
        ),
        what="replica sets gone",
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
    apps.create_namespaced_deployment(namespace, deployment_body("filler", 32, filler))

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
