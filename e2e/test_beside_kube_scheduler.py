"""koordgang beside kube-scheduler of the pinned release, on the real API server and the same
kwok nodes, as on every real cluster.

A flood of both schedulers' pods: koordgang re-checks a gang's nodes just before binding it, which
narrows the race between the two but cannot close it (each decides from its own cache; a pod of
the other may land in the moment after the check). So what is asserted is what koordgang
guarantees: no gang of its bound below its minimum, and every node the API server's final state
shows over-committed explained by the race (it holds pods of both schedulers, and the pods of
either alone fit); the number of such nodes is recorded. On a real node the kubelet would refuse
the pod that does not fit (see docs/scheduling.md, "Beside kube-scheduler").

kube-scheduler preempting for its own pod: it nominates the node it empties for its preemptor
(``status.nominatedNodeName``); the victims stay terminating a few seconds (kwok's delete delay,
as a grace period keeps them). koordgang's waiting pods of lower priority that fit the room must
leave it alone, or kube-scheduler finds the node full again and preempts a second time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from harness.clients.kube_scheduler import DEFAULT_SCHEDULER, KubeScheduler
from harness.daemon import Daemon
from harness.disruptions import DisruptionWatch
from harness.gangs import Gang, assert_no_partial_gangs, holds
from harness.invariants import overcommitted
from harness.kube import SCHEDULER, Cluster, plain, pod_body, scheduled_condition, wait_until

DELETE_DELAY = "pod-delete.stage.kwok.x-k8s.io/delay"
#: koordgang's waiting pods in the preemption scenario: below kube-scheduler's preemptor, and
#: unable to preempt themselves (they would take the victims' place by their own right).
MEDIUM_NEVER = "e2e-medium-never"


def _create_all(cluster: Cluster, namespace: str, bodies: Iterable[dict[str, Any]]) -> None:
    """Creates the pods from a few threads at once, in the order given: both schedulers see
    them arrive interleaved, as fast as the API server takes them."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda body: cluster.create_pod(namespace, body), bodies))


def _settled(cluster: Cluster, namespace: str) -> frozenset[str] | None:
    """The names of the bound pods once every pod is bound or told it is unschedulable (by
    either scheduler); None before."""
    pods = cluster.pods(namespace)
    for pod in pods:
        condition = scheduled_condition(pod)
        if not pod.spec.node_name and (condition is None or condition.status != "False"):
            return None
    return frozenset(p.metadata.name for p in pods if p.spec.node_name)


def _wait_quiet(cluster: Cluster, namespace: str, quiet: float = 4.0) -> None:
    """Until every pod is settled and no binding was added for ``quiet`` seconds."""
    last: frozenset[str] | None = None
    since = time.monotonic()

    def quiet_now() -> bool:
        nonlocal last, since
        now = _settled(cluster, namespace)
        if now is None or now != last:
            last, since = now, time.monotonic()
            return False
        return time.monotonic() - since >= quiet

    wait_until(quiet_now, timeout=120, interval=0.5, what="both schedulers done binding")


def _explain_overcommit(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], over: Iterable[str]
) -> dict[str, str]:
    """Each over-committed node that is not explained by the race of the two schedulers, and
    why not (empty when all are)."""
    unexplained: dict[str, str] = {}
    for name in over:
        on_node = [p for p in pods if (p.get("spec") or {}).get("nodeName") == name]
        by: dict[str, list[dict[str, Any]]] = {}
        for pod in on_node:
            by.setdefault(pod["spec"].get("schedulerName", ""), []).append(pod)
        if set(by) != {SCHEDULER, DEFAULT_SCHEDULER}:
            unexplained[name] = f"holds pods of {sorted(by)} only"
            continue
        for scheduler, theirs in by.items():
            alone = overcommitted([n for n in nodes if n["metadata"]["name"] == name], theirs)
            if alone:
                unexplained[name] = f"{scheduler}'s pods alone over-commit it: {alone[name]}"
    return unexplained


FLOOD_NODES = 10
FLOOD_CPU = 8
GANG_SIZE = 8
#: Of each scheduler: 96 pods of 1 cpu for 80 cpu, so that both fill the last room at once.
FLOOD_PODS = 48


def test_a_flood_of_both_schedulers_pods_leaves_every_gang_whole(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    kube_scheduler: KubeScheduler,
    record_property: Callable[[str, object], None],
) -> None:
    """48 plain pods of kube-scheduler and 6 gangs of 8 of koordgang, 1 cpu each, created
    interleaved onto 10 nodes of 8 cpu (demand 1.2x the room)."""
    cluster = clean_nodes
    cluster.add_nodes(
        [f"flood-{i:02d}" for i in range(FLOOD_NODES)],
        {"cpu": str(FLOOD_CPU), "memory": "64Gi"},
    )
    gangs = [Gang(namespace, f"gang-{g}", GANG_SIZE) for g in range(FLOOD_PODS // GANG_SIZE)]
    bodies: list[dict[str, Any]] = []
    for i in range(FLOOD_PODS):
        bodies.append(pod_body(f"plain-{i}", requests={"cpu": "1"}, scheduler=DEFAULT_SCHEDULER))
        bodies.append(gangs[i // GANG_SIZE].pod(i % GANG_SIZE))
    _create_all(cluster, namespace, bodies)
    _wait_quiet(cluster, namespace)

    assert_no_partial_gangs(cluster, [namespace], gangs)
    nodes = plain(cluster.api_client, cluster.core.list_node(label_selector="type=kwok").items)
    pods = plain(cluster.api_client, cluster.core.list_namespaced_pod(namespace).items)
    over = overcommitted(nodes, pods)
    bound = {s: 0 for s in (SCHEDULER, DEFAULT_SCHEDULER)}
    for pod in pods:
        if pod["spec"].get("nodeName"):
            bound[pod["spec"]["schedulerName"]] += 1
    record_property("overcommitted_nodes", len(over))
    record_property("bound", bound)
    print(f"over-committed nodes: {len(over)} of {FLOOD_NODES} {sorted(over)}; bound: {bound}")
    # Both schedulers bound pods (the race was run), and the room went to someone.
    assert bound[SCHEDULER] >= GANG_SIZE and bound[DEFAULT_SCHEDULER] > 0, bound
    assert sum(bound.values()) >= FLOOD_NODES * FLOOD_CPU, bound
    assert not _explain_overcommit(nodes, pods, over)


# -- kube-scheduler preempting for its own pod ----------------------------------------------------


@pytest.fixture
def medium_never(cluster: Cluster, priority_classes: None) -> str:
    api = client.SchedulingV1Api(cluster.api_client)
    body = client.V1PriorityClass(
        metadata=client.V1ObjectMeta(name=MEDIUM_NEVER), value=50, preemption_policy="Never"
    )
    try:
        api.create_priority_class(body)
    except ApiException as error:
        if error.status != 409:
            raise
    return MEDIUM_NEVER


def _victim(name: str, node: str, terminating: int) -> dict[str, Any]:
    """A low-priority pod of kube-scheduler's, already running on ``node``, that stays
    terminating ``terminating`` seconds once deleted (its grace period, played by kwok)."""
    body = pod_body(
        name,
        requests={"cpu": "1"},
        scheduler=DEFAULT_SCHEDULER,
        priority_class="e2e-low",
        node_name=node,
        annotations={DELETE_DELAY: f"{terminating}s"},
    )
    body["spec"]["terminationGracePeriodSeconds"] = 30
    return body


def test_room_kube_scheduler_preempts_for_its_pod_is_left_to_it(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    kube_scheduler: KubeScheduler,
    medium_never: str,
    disruptions: DisruptionWatch,
    check_invariants: None,
) -> None:
    """4 nodes of 4 cpu full of kube-scheduler's low-priority pods of 1 cpu; 4 pods of
    koordgang's of 1 cpu (mid priority, preemptionPolicy Never) wait; kube-scheduler's pod of 4
    cpu (high) preempts one node's worth, whose victims go one by one over 3-6 s. koordgang does
    not take the room as it frees, and kube-scheduler preempts once."""
    cluster = clean_nodes
    nodes = cluster.add_nodes([f"pre-{i}" for i in range(4)], {"cpu": "4", "memory": "16Gi"})
    victims = [f"low-{n}-{i}" for n in range(4) for i in range(4)]
    _create_all(
        cluster,
        namespace,
        [_victim(f"low-{n}-{i}", node, 3 + i) for n, node in enumerate(nodes) for i in range(4)],
    )
    wait_until(
        lambda: all(p.status.phase == "Running" for p in cluster.pods(namespace)),
        what="the low-priority pods running",
    )
    ours = [f"mid-{i}" for i in range(4)]
    for name in ours:
        cluster.create_pod(
            namespace, pod_body(name, requests={"cpu": "1"}, priority_class=medium_never)
        )

    def ours_told_they_wait() -> bool:
        conditions = [scheduled_condition(cluster.pod(namespace, n)) for n in ours]
        return all(c is not None and c.status == "False" for c in conditions)

    wait_until(ours_told_they_wait, timeout=30, what="koordgang's pods told they wait")

    preemptor = pod_body(
        "preemptor", requests={"cpu": "4"}, scheduler=DEFAULT_SCHEDULER, priority_class="e2e-high"
    )
    cluster.create_pod(namespace, preemptor)
    node = wait_until(
        lambda: cluster.pod(namespace, "preemptor").spec.node_name,
        timeout=90,
        what="kube-scheduler's preemptor bound",
    )
    # A second preemption would have come by now (the DisruptionTarget conditions say who).
    time.sleep(2)
    preempted = sorted(disruptions.seen)
    assert len(preempted) == 4, f"kube-scheduler preempted {preempted}"
    assert all(v.startswith(f"low-{node.split('-')[1]}-") for v in preempted), (node, preempted)
    remaining = {p.metadata.name for p in cluster.pods(namespace) if p.metadata.name in victims}
    assert remaining == set(victims) - set(preempted)
    # What the test relies on: kube-scheduler published where its preemptor goes.
    assert disruptions.nominated.get("preemptor") == [node], disruptions.nominated
    holds(
        lambda: not any(cluster.pod(namespace, n).spec.node_name for n in ours),
        3,
        what="koordgang's pods stay pending",
    )
