"""What must hold after every scenario, checked from the API server's point of view."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from e2e.kube import SCHEDULER, Cluster
from koordgang.model.node import parse_node
from koordgang.model.pod import parse_pod
from koordgang.model.resources import PODS, Resources


def overcommitted(
    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
) -> dict[str, list[str]]:
    """Nodes whose bound, non-terminal pods request more than the node's allocatable:
    ``node -> [resources short]``. Takes the API server's JSON objects."""
    parsed = {n["metadata"]["name"]: parse_node(n) for n in nodes}
    used: dict[str, Resources] = defaultdict(lambda: Resources.EMPTY)
    counts: dict[str, int] = defaultdict(int)
    for raw in pods:
        pod = parse_pod(raw)
        if pod.node_name and not pod.is_terminal:
            used[pod.node_name] = used[pod.node_name] + pod.requests
            counts[pod.node_name] += 1
    over: dict[str, list[str]] = {}
    for name, requested in used.items():
        node = parsed.get(name)
        if node is None:
            continue
        short = list(requested.exceeds(node.allocatable))
        if counts[name] > node.allocatable.get(PODS):
            short.append(PODS)
        if short:
            over[name] = short
    return over


def overcommitted_nodes(cluster: Cluster) -> dict[str, list[str]]:
    client = cluster.api_client
    return overcommitted(
        client.sanitize_for_serialization(cluster.core.list_node().items),
        client.sanitize_for_serialization(cluster.core.list_pod_for_all_namespaces().items),
    )


#: Seconds a pending pod may go unexplained: the daemon's explainAfter and then some.
EXPLAINED_WITHIN = 10.0


def unexplained_pending(cluster: Cluster, namespace: str) -> list[str]:
    """Our pods that are not bound and carry no PodScheduled=False explanation."""
    missing = []
    for pod in cluster.pods(namespace):
        if pod.spec.scheduler_name != SCHEDULER or pod.spec.node_name:
            continue
        condition = next(
            (c for c in (pod.status.conditions or []) if c.type == "PodScheduled"), None
        )
        if condition is None or condition.status != "False" or not condition.message:
            missing.append(pod.metadata.name)
    return missing


def kopf_marks_on_pods(cluster: Cluster) -> list[str]:
    """Pods carrying any kopf annotation or finalizer (kopf must never touch pods)."""
    marked = []
    for pod in cluster.core.list_pod_for_all_namespaces().items:
        annotations = pod.metadata.annotations or {}
        finalizers = pod.metadata.finalizers or []
        if any("kopf" in key for key in annotations) or any("kopf" in f for f in finalizers):
            marked.append(f"{pod.metadata.namespace}/{pod.metadata.name}")
    return marked


def assert_invariants(cluster: Cluster, namespace: str) -> None:
    over = overcommitted_nodes(cluster)
    assert not over, f"nodes over-committed: {over}"
    marked = kopf_marks_on_pods(cluster)
    assert not marked, f"kopf wrote to pods: {marked}"
    # A pod is told why it waits once it has waited explainAfter (1 s by default): allow that,
    # and the write, before calling a pending pod unexplained.
    deadline = time.monotonic() + EXPLAINED_WITHIN
    unexplained: list[Any] = unexplained_pending(cluster, namespace)
    while unexplained and time.monotonic() < deadline:
        time.sleep(0.25)
        unexplained = unexplained_pending(cluster, namespace)
    assert not unexplained, f"pending pods without an explanation: {unexplained}"
