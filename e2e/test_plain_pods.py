"""Plain pods (no gang) on a real API server: binding, capacity, explanations."""

from __future__ import annotations

from collections import Counter

from harness.daemon import Daemon
from harness.invariants import overcommitted_nodes
from harness.kube import Cluster, bound, pending, plain, pod_body, scheduled_condition, wait_until
from koordgang.model.pod import parse_pod
from koordgang.model.quantity import to_int, to_milli

NODE_CPU, NODE_MEMORY_GI = 8, 32
SHAPES = [("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("250m", "8Gi")]


def _free(cluster: Cluster, node_names: list[str]) -> dict[str, tuple[int, int]]:
    """Free (millicpu, bytes) per node, from the API server's view of bound pods."""
    free = {n: (NODE_CPU * 1000, NODE_MEMORY_GI * 2**30) for n in node_names}
    raw = plain(cluster.api_client, cluster.core.list_pod_for_all_namespaces().items)
    for obj in raw:
        pod = parse_pod(obj)
        if pod.node_name in free and not pod.is_terminal:
            cpu, mem = free[pod.node_name]
            free[pod.node_name] = (cpu - pod.requests.get("cpu"), mem - pod.requests.get("memory"))
    return free


def test_200_mixed_pods_on_20_nodes_fill_them_without_overcommitting(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    cluster = clean_nodes
    nodes = cluster.add_nodes(
        [f"plain-{i:02d}" for i in range(20)],
        {"cpu": str(NODE_CPU), "memory": f"{NODE_MEMORY_GI}Gi"},
    )
    for i in range(200):
        shape_cpu, shape_memory = SHAPES[i % len(SHAPES)]
        cluster.create_pod(
            namespace,
            pod_body(f"p-{i:03d}", requests={"cpu": shape_cpu, "memory": shape_memory}),
        )

    def settled() -> bool:
        pods = cluster.pods(namespace)
        waiting = pending(pods)
        # Settled: everything is either bound or carries an explanation.
        return len(pods) == 200 and all(
            (c := scheduled_condition(p)) is not None
            and c.status == "False"
            and "nodes are available" in (c.message or "")
            for p in waiting
        )

    wait_until(settled, timeout=120, what="all 200 pods bound or explained")
    pods = cluster.pods(namespace)
    placed = bound(pods)
    # Demand (187.5 cpu) exceeds supply (160 cpu): some must wait, most must run.
    assert 120 <= len(placed) < 200
    assert set(p.spec.node_name for p in placed) <= set(nodes)
    assert overcommitted_nodes(cluster) == {}

    # Every pod that fits somewhere is bound: no pending pod fits on any node's free room.
    free = _free(cluster, nodes)
    for pod in pending(pods):
        requests = pod.spec.containers[0].resources.requests
        cpu, memory = to_milli(requests["cpu"]), to_int(requests["memory"])
        fitting = [n for n, (c, m) in free.items() if c >= cpu and m >= memory]
        assert not fitting, (
            f"{pod.metadata.name} ({cpu}m, {memory}) fits on {fitting} but is pending"
        )
        condition = scheduled_condition(pod)
        assert condition is not None, f"{pod.metadata.name} is pending unexplained"
        message = condition.message
        assert message.startswith("0/20 nodes are available: ")
        assert "Insufficient" in message

    # Events: each bound pod got one Scheduled event naming its node.
    sample = placed[0]
    events = cluster.events_for(namespace, sample.metadata.name)
    wait_until(
        lambda: any(
            e.reason == "Scheduled" for e in cluster.events_for(namespace, sample.metadata.name)
        ),
        timeout=30,
        what="a Scheduled event",
    )
    events = [
        e for e in cluster.events_for(namespace, sample.metadata.name) if e.reason == "Scheduled"
    ]
    assert sample.spec.node_name in events[0].message

    # LeastAllocated spreads: no node is left empty while others are full.
    per_node = Counter(p.spec.node_name for p in placed)
    assert len(per_node) == 20


def test_pending_pod_is_bound_when_room_appears(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.create_pod(namespace, pod_body("waits", requests={"cpu": "4"}))
    condition = wait_until(
        lambda: scheduled_condition(cluster.pod(namespace, "waits")),
        timeout=30,
        what="an explanation",
    )
    assert condition.status == "False" and condition.reason == "Unschedulable"
    assert condition.message == "no nodes available to schedule pods."
    failed = wait_until(
        lambda: [
            e for e in cluster.events_for(namespace, "waits") if e.reason == "FailedScheduling"
        ],
        timeout=30,
        what="a FailedScheduling event",
    )
    assert failed[0].type == "Warning"

    cluster.add_nodes(["late-node"], {"cpu": "8", "memory": "8Gi"})
    pod = wait_until(
        lambda: (p := cluster.pod(namespace, "waits")).spec.node_name and p,
        timeout=30,
        what="binding",
    )
    assert pod.spec.node_name == "late-node"


def test_init_containers_and_pod_count_limit_are_respected(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["small-a"], {"cpu": "4", "memory": "8Gi", "pods": "3"})
    # The init container needs 3 cpu: with 2 on the node already, it does not fit.
    cluster.create_pod(namespace, pod_body("first", requests={"cpu": "2"}))
    wait_until(lambda: cluster.pod(namespace, "first").spec.node_name, what="first bound")
    cluster.create_pod(
        namespace, pod_body("big-init", requests={"cpu": "100m"}, init_requests={"cpu": "3"})
    )
    condition = wait_until(
        lambda: scheduled_condition(cluster.pod(namespace, "big-init")),
        timeout=30,
        what="explanation",
    )
    assert condition.message == (
        "0/1 nodes are available: 1 Insufficient cpu.; "
        "preemption is not helpful: no pod of lower priority to evict"
    )

    for name in ("tiny-1", "tiny-2", "tiny-3"):
        cluster.create_pod(namespace, pod_body(name, requests={"cpu": "10m"}))
    wait_until(
        lambda: len(bound(cluster.pods(namespace))) == 3,
        timeout=30,
        what="three pods on a 3-pod node",
    )
    stuck = wait_until(
        lambda: [
            p
            for p in pending(cluster.pods(namespace))
            if p.metadata.name.startswith("tiny") and scheduled_condition(p)
        ],
        timeout=30,
        what="the fourth pod explained",
    )
    condition = scheduled_condition(stuck[0])
    assert condition is not None and "Too many pods" in condition.message


def test_a_pod_with_a_very_large_annotation_is_scheduled_and_nothing_breaks(
    clean_nodes: Cluster, namespace: str, daemon: Daemon, check_invariants: None
) -> None:
    # A watch event is one line holding the whole pod; 250 kB (annotations may hold 256 kB)
    # is far beyond the default
    # line buffer of HTTP clients.
    cluster = clean_nodes
    cluster.add_nodes(["big-annotation"], {"cpu": "4", "memory": "8Gi"})
    huge = pod_body("huge-annotation", requests={"cpu": "1"}, annotations={"note": "x" * 250_000})
    cluster.create_pod(namespace, huge)
    cluster.create_pod(namespace, pod_body("after-it", requests={"cpu": "1"}))
    wait_until(
        lambda: (
            all(p.spec.node_name for p in cluster.pods(namespace))
            and len(cluster.pods(namespace)) == 2
        ),
        timeout=30,
        what="both pods bound",
    )
