"""Which victims preemption picks, and when it does not preempt: a running gang and a pod under
an exhausted disruption budget are spared for a lone pod; a failure no eviction can fix evicts
nothing; victims still terminating are waited for, not added to, and the room stays held."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from harness.daemon import Daemon, wait_for_metric
from harness.gangs import (
    GangBook,
)
from harness.kube import Cluster, name_of, pod_body, scheduled_condition, wait_until

DELETE_DELAY = "pod-delete.stage.kwok.x-k8s.io/delay"


def low(name: str, node: str, **kwargs: Any) -> dict[str, Any]:
    return pod_body(name, requests={"cpu": "1"}, priority_class="e2e-low", node_name=node, **kwargs)


def high(name: str, cpu: str = "1", **kwargs: Any) -> dict[str, Any]:
    return pod_body(name, requests={"cpu": cpu}, priority_class="e2e-high", **kwargs)


def disrupted(cluster: Cluster, namespace: str) -> list[str]:
    """Pods that were told they are preempted (the Events outlive the pods)."""
    events = cluster.core.list_namespaced_event(namespace).items
    return sorted({e.involved_object.name or "" for e in events if e.reason == "Preempted"})


def message_of(cluster: Cluster, namespace: str, name: str) -> str:
    condition = scheduled_condition(cluster.pod(namespace, name))
    return condition.message if condition is not None and condition.message else ""


@pytest.fixture
def budgets(cluster: Cluster, namespace: str) -> Iterator[client.PolicyV1Api]:
    api = client.PolicyV1Api(cluster.api_client)
    yield api
    for budget in api.list_namespaced_pod_disruption_budget(namespace).items:
        api.delete_namespaced_pod_disruption_budget(name_of(budget), namespace)


def test_a_running_gang_is_spared_and_the_lone_pod_goes(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    priority_classes: None,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["g-1", "g-2", "g-3"], {"cpu": "1", "memory": "8Gi"})
    running = gang_book.gang("run", 2, way="annotations")
    gang_book.create_pods(running, [0], priority_class="e2e-low", node_name="g-1")
    gang_book.create_pods(running, [1], priority_class="e2e-low", node_name="g-3")
    cluster.create_pod(namespace, low("lone", "g-2"))
    cluster.create_pod(namespace, high("hi"))

    wait_until(lambda: cluster.pod(namespace, "hi").spec.node_name, what="hi bound")
    assert cluster.pod(namespace, "hi").spec.node_name == "g-2"
    assert disrupted(cluster, namespace) == ["lone"]
    assert all(cluster.pod(namespace, n).metadata.deletion_timestamp is None for n in ("run-0",))


def test_a_pod_under_an_exhausted_disruption_budget_is_spared(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    budgets: client.PolicyV1Api,
    priority_classes: None,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["b-1", "b-2"], {"cpu": "1", "memory": "8Gi"})
    cluster.create_pod(namespace, low("guarded", "b-1", labels={"app": "guarded"}))
    cluster.create_pod(namespace, low("free", "b-2"))
    budgets.create_namespaced_pod_disruption_budget(
        namespace,
        client.V1PodDisruptionBudget.model_validate(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "guard"},
                "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}},
            }
        ),
    )

    def budget_observed() -> bool:
        budget = budgets.read_namespaced_pod_disruption_budget("guard", namespace)
        return budget.status is not None and budget.status.observed_generation is not None

    wait_until(budget_observed, what="the disruption controller to fill in the budget")
    # The budget and the preemptor come on different watches: a budget the daemon has not
    # seen yet protects nothing, as with any scheduler.
    wait_for_metric(daemon, 'koordgang_cache_objects{kind="budgets"}', 1.0)
    cluster.create_pod(namespace, high("hi"))
    wait_until(lambda: cluster.pod(namespace, "hi").spec.node_name, what="hi bound")
    assert cluster.pod(namespace, "hi").spec.node_name == "b-2"
    assert disrupted(cluster, namespace) == ["free"]


def test_a_failure_no_eviction_can_fix_evicts_nothing(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    priority_classes: None,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["u-1"], {"cpu": "1", "memory": "8Gi"}, labels={"zone": "a"})
    cluster.create_pod(namespace, low("low", "u-1"))
    cluster.create_pod(namespace, high("hi", node_selector={"zone": "b"}))
    expected = (
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.; "
        "preemption is not helpful: 1 node(s) didn't match Pod's node affinity/selector"
    )
    wait_until(lambda: message_of(cluster, namespace, "hi") == expected, what="explanation")
    assert disrupted(cluster, namespace) == []
    assert cluster.pod(namespace, "low").metadata.deletion_timestamp is None


def test_victims_still_terminating_are_waited_for_and_the_room_stays_held(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    priority_classes: None,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["t-1"], {"cpu": "2", "memory": "8Gi"})
    slow = {DELETE_DELAY: "12s"}
    for i in range(2):
        body = low(f"low-{i}", "t-1", annotations=slow)
        # A grace period of 0 would have the API server remove the pod at once.
        body["spec"]["terminationGracePeriodSeconds"] = 30
        cluster.create_pod(namespace, body)
    cluster.create_pod(namespace, high("hi", cpu="2"))

    def nominated() -> bool:
        node: str | None = cluster.pod(namespace, "hi").status.nominated_node_name
        return node == "t-1"

    wait_until(nominated, what="hi nominated to t-1")
    # The nomination and the evictions are separate writes: either may land first.
    wait_until(
        lambda: all(
            cluster.pod(namespace, f"low-{i}").metadata.deletion_timestamp is not None
            for i in range(2)
        ),
        what="both victims terminating",
    )

    # Meanwhile a medium-priority pod arrives: the held room is not for it, and it evicts
    # nothing either (the victims are already going).
    cluster.create_pod(
        namespace, pod_body("medium", requests={"cpu": "1"}, priority_class="e2e-medium")
    )
    wait_until(lambda: message_of(cluster, namespace, "medium"), what="medium explained")
    told = message_of(cluster, namespace, "hi")
    assert told in (
        f"preempting 2 pods on 1 node for {namespace}/hi",
        "waiting for 2 victims to terminate on t-1",
    ), told
    assert disrupted(cluster, namespace) == ["low-0", "low-1"]

    wait_until(lambda: cluster.pod(namespace, "hi").spec.node_name, timeout=60, what="hi bound")
    assert cluster.pod(namespace, "hi").spec.node_name == "t-1"
    assert not cluster.pod(namespace, "medium").spec.node_name
    assert disrupted(cluster, namespace) == ["low-0", "low-1"]


def test_pods_labelled_disable_preemptible_are_never_evicted(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    priority_classes: None,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["l-1"], {"cpu": "1", "memory": "8Gi"})
    label = {"scheduling.koordinator.sh/disable-preemptible": "true"}
    cluster.create_pod(namespace, low("kept", "l-1", labels=label))
    cluster.create_pod(namespace, high("hi"))
    expected = (
        "preemption is not helpful: the lower-priority pods there may not be evicted (label "
        "scheduling.koordinator.sh/disable-preemptible=true, DaemonSet or static pods)"
    )
    wait_until(lambda: message_of(cluster, namespace, "hi").endswith(expected), what="explanation")
    assert disrupted(cluster, namespace) == []
    assert cluster.pod(namespace, "kept").metadata.deletion_timestamp is None
