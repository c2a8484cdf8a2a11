"""`koordgang whatif --from-cluster` against what the daemon then does, for each answer it gives:
the same cluster, the question asked from the API server (as `kubectl koordgang whatif` asks
it), then the job submitted and the daemon watched.

- bind: the members bind, as many per node as it said (which of two equal nodes takes which
  member is a tie: compared as counts per node), and the answer names that tie;
- pending: nothing binds, and each member is told what the answer said it would be;
- preempt: the victims are the pods it named (as counts per Deployment and node: which of
  alike replicas goes is a tie), and the members bind where it said; the answer names a tie
  among victims only where one was evicted beside an alike replica that stays, which this
  layout has not;
- pending with a reservation (the starvation guard): after ``reserveAfter`` the members are
  nominated to the nodes it named;
- gated: the pod waits on its gates, and nothing else is tried;
- hold: the members of a NonStrict gang that fit are held, unbound, and bind where it said
  once room for the rest comes; meanwhile an answer from the API server says that it cannot
  know the room the daemon holds for them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from harness.daemon import Daemon
from harness.disruptions import DisruptionWatch
from harness.gangs import holds
from harness.kube import Cluster, bound, deployment_body, pod_body, scheduled_condition, wait_until

pytestmark = pytest.mark.skipif(
    os.environ.get("KOORDGANG_E2E_DAEMON") == "deployment",
    reason="compares with a daemon process of its own settings",
)

RESERVE_AFTER = 4
SLOT = "e2e.koordgang/slot"


def gang(name: str, count: int, cpu: str, **pod_args: Any) -> list[dict[str, Any]]:
    annotations = {
        "gang.scheduling.koordinator.sh/name": name,
        "gang.scheduling.koordinator.sh/min-available": str(count),
    }
    return [
        pod_body(f"{name}-{i}", requests={"cpu": cpu}, annotations=annotations, **pod_args)
        for i in range(count)
    ]


def ask(
    kubeconfig: str,
    namespace: str,
    pods: list[dict[str, Any]],
    path: Path,
    settings: dict[str, Any] | None = None,
) -> Any:
    """The answer of ``koordgang whatif --from-cluster -o json`` for ``pods`` (with the guard's
    ``reserveAfter`` and ``settings``)."""
    docs = []
    for body in pods:
        doc = json.loads(json.dumps(body))
        doc["metadata"]["namespace"] = namespace
        docs.append(doc)
    path.write_text(yaml.safe_dump_all(docs))
    config = path.with_suffix(".config.yaml")
    config.write_text(yaml.safe_dump({"reserveAfter": RESERVE_AFTER, **(settings or {})}))
    reply = subprocess.run(
        [
            sys.executable,
            "-m",
            "koordgang",
            "whatif",
            "-f",
            str(path),
            "--from-cluster",
            "--kubeconfig",
            kubeconfig,
            "--config",
            str(config),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert reply.returncode == 0, reply.stderr
    try:
        return json.loads(reply.stdout)
    except ValueError as error:
        raise AssertionError(f"not JSON ({error}): {reply.stdout[:2000]}") from error


def submit(cluster: Cluster, namespace: str, pods: list[dict[str, Any]]) -> None:
    for body in pods:
        cluster.create_pod(namespace, body)


def names(namespace: str, pods: list[dict[str, Any]]) -> list[str]:
    return [f"{namespace}/{p['metadata']['name']}" for p in pods]


@pytest.fixture
def daemon_with_guard(daemon_factory: Any) -> Daemon:
    daemon: Daemon = daemon_factory("--reserve-after", str(RESERVE_AFTER))
    daemon.start()
    return daemon


def test_bind_the_members_land_as_many_per_node_as_it_said(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    daemon_with_guard: Daemon,
    tmp_path: Path,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["wd-1", "wd-2"], {"cpu": "4", "memory": "8Gi"})
    cluster.add_nodes(["wd-3"], {"cpu": "2", "memory": "8Gi"})
    pods = gang("fits", 5, "1")
    answer = ask(kubeconfig, namespace, pods, tmp_path / "fits.yaml")
    [group] = answer["groups"]
    assert group["outcome"] == "bind", group
    said: dict[str, str] = group["placements"]
    assert sorted(said) == names(namespace, pods)
    # The answer says which nodes are a tie: the two equal ones, not the smaller one.
    [tie] = group["ties"]
    assert tie.startswith("nodes wd-1, wd-2 are alike") and "wd-3" not in tie, group["ties"]

    submit(cluster, namespace, pods)
    landed = wait_until(
        lambda: len(b := bound(cluster.pods(namespace))) == 5 and b, what="the gang bound"
    )
    # Equal nodes are a tie: counts per node, not which node.
    got = Counter(p.spec.node_name for p in landed)
    expected = Counter(said.values())
    assert sorted(got.values()) == sorted(expected.values()), (got, expected)
    # The smaller node is no tie: it takes what the answer said.
    assert got["wd-3"] == expected["wd-3"], (got, expected)


#: Long enough that neither the what-if nor the daemon stops counting the other scheduler's
#: untried pod while the test asks and submits.
IN_FLIGHT_FOR = 300


@pytest.fixture
def daemon_counting_theirs(daemon_factory: Any) -> Daemon:
    daemon: Daemon = daemon_factory(
        "--reserve-after", str(RESERVE_AFTER), "--others-in-flight-for", str(IN_FLIGHT_FOR)
    )
    daemon.start()
    return daemon


def test_bind_beside_another_schedulers_untried_pod_the_answer_leaves_its_room(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    daemon_counting_theirs: Daemon,
    tmp_path: Path,
    check_invariants: None,
) -> None:
    """A pod of another scheduler (7 cpu, not tried: nobody runs that scheduler) holds only on
    the 8-cpu node: the answer puts both members on the 3-cpu node, as the daemon then does."""
    cluster = clean_nodes
    cluster.add_nodes(["wo-1"], {"cpu": "8", "memory": "8Gi"})
    cluster.add_nodes(["wo-2"], {"cpu": "3", "memory": "8Gi"})
    cluster.create_pod(
        namespace, pod_body("theirs", requests={"cpu": "7"}, scheduler="other-scheduler")
    )
    pods = gang("beside", 2, "1")
    answer = ask(
        kubeconfig,
        namespace,
        pods,
        tmp_path / "beside.yaml",
        {"othersInFlightFor": IN_FLIGHT_FOR},
    )
    [group] = answer["groups"]
    assert group["outcome"] == "bind", group
    assert set(group["placements"].values()) == {"wo-2"}, group["placements"]

    submit(cluster, namespace, pods)
    landed = wait_until(
        lambda: len(b := bound(cluster.pods(namespace))) == 2 and b, what="the gang bound"
    )
    assert {p.spec.node_name for p in landed} == {"wo-2"}


def test_pending_each_member_is_told_what_the_answer_said(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    daemon_with_guard: Daemon,
    tmp_path: Path,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["wp-1", "wp-2"], {"cpu": "4", "memory": "8Gi"})
    pods = gang("big", 3, "3")
    answer = ask(kubeconfig, namespace, pods, tmp_path / "big.yaml")
    [group] = answer["groups"]
    assert group["outcome"] == "pending", group
    assert group["short"] == {"cpu": "3"}, group["short"]
    said: dict[str, str] = group["unplaced"]
    assert sorted(said) == names(namespace, pods)

    submit(cluster, namespace, pods)

    def told() -> dict[str, str] | None:
        messages = {}
        for pod in cluster.pods(namespace):
            condition = scheduled_condition(pod)
            if pod.spec.node_name or condition is None or not condition.message:
                return None
            messages[f"{namespace}/{pod.metadata.name}"] = condition.message
        return messages if len(messages) == 3 else None

    messages = wait_until(told, what="every member told why it waits")
    assert messages == said
    holds(lambda: not bound(cluster.pods(namespace)), 2, what="nothing bound")


def test_preempt_the_victims_are_exactly_those_it_named(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    daemon_with_guard: Daemon,
    apps: client.AppsV1Api,
    priority_classes: None,
    disruptions: DisruptionWatch,
    tmp_path: Path,
) -> None:
    cluster = clean_nodes
    for node in ("wv-1", "wv-2", "wv-3"):
        cluster.add_nodes([node], {"cpu": "4", "memory": "8Gi"}, labels={SLOT: node})
    # Deployments fill the nodes, each on its own node. The small pods have a higher priority
    # (still below the job's): the cheapest room for three 2-cpu members is the big pod on
    # wv-3 and the mid one on wv-2.
    for name, node, replicas, cpu, priority in (
        ("small-1", "wv-1", 4, "1", "e2e-medium"),
        ("small-2", "wv-2", 2, "1", "e2e-medium"),
        ("mid-2", "wv-2", 1, "2", "e2e-low"),
        ("big-3", "wv-3", 1, "4", "e2e-low"),
    ):
        low = pod_body(
            name, requests={"cpu": cpu}, priority_class=priority, node_selector={SLOT: node}
        )
        apps.create_namespaced_deployment(
            namespace, client.V1Deployment.model_validate(deployment_body(name, replicas, low))
        )
    wait_until(lambda: len(bound(cluster.pods(namespace))) == 8, what="the low pods bound")

    pods = gang("high", 3, "2", priority_class="e2e-high")
    answer = ask(kubeconfig, namespace, pods, tmp_path / "high.yaml")
    [group] = answer["groups"]
    assert group["outcome"] == "preempt", group
    # Replicas of one Deployment on one node are alike: which of them goes is a tie, so the
    # victims are compared as (Deployment, node) counts.
    named = Counter((v["pod"].rsplit("-", 2)[0], v["node"]) for v in group["evict"])
    assert named == Counter({(f"{namespace}/big-3", "wv-3"): 1, (f"{namespace}/mid-2", "wv-2"): 1})
    # Each victim is its Deployment's only replica, and the nodes differ (their slot labels):
    # nothing here is a tie, and the answer says none.
    assert group["ties"] == [], group["ties"]

    submit(cluster, namespace, pods)

    def high_bound() -> list[Any] | None:
        pods = [p for p in bound(cluster.pods(namespace)) if p.metadata.name.startswith("high-")]
        return pods if len(pods) == 3 else None

    landed = wait_until(high_bound, timeout=60, what="the high gang bound")
    evicted = Counter(
        (f"{namespace}/{name.rsplit('-', 2)[0]}", disruptions.bound[name][0])
        for name in disruptions.seen
    )
    assert evicted == named, (evicted, named)
    nominated = Counter(group["nominated"].values())
    assert Counter(p.spec.node_name for p in landed) == nominated


def test_preempt_among_replicas_the_answer_names_the_victim_or_the_tie(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    daemon_with_guard: Daemon,
    apps: client.AppsV1Api,
    priority_classes: None,
    disruptions: DisruptionWatch,
    tmp_path: Path,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["wt-1"], {"cpu": "4", "memory": "8Gi"}, labels={SLOT: "wt-1"})
    low = pod_body(
        "low", requests={"cpu": "2"}, priority_class="e2e-low", node_selector={SLOT: "wt-1"}
    )
    apps.create_namespaced_deployment(
        namespace, client.V1Deployment.model_validate(deployment_body("low", 2, low))
    )
    wait_until(lambda: len(bound(cluster.pods(namespace))) == 2, what="the low pods bound")

    pods = gang("high", 1, "2", priority_class="e2e-high")
    answer = ask(kubeconfig, namespace, pods, tmp_path / "high.yaml")
    [group] = answer["groups"]
    assert group["outcome"] == "preempt", group
    [victim] = group["evict"]
    # Either replica makes the room. Started in the same second, preemption cannot tell them
    # apart, and the answer says the choice is a tie; started apart, the later goes, and the
    # answer names it.
    started = {p.metadata.name: p.status.start_time for p in bound(cluster.pods(namespace))}
    tied = len(set(started.values())) == 1
    if tied:
        [tie] = group["ties"]
        assert tie.startswith(
            f"victims: which of the alike pods of {namespace}/low"
        ) and tie.endswith("on wt-1 (priority 10) goes is a tie: 1 of 2"), tie
    else:
        assert group["ties"] == [], (group["ties"], started)

    submit(cluster, namespace, pods)
    wait_until(
        lambda: any(p.metadata.name == "high-0" for p in bound(cluster.pods(namespace))),
        timeout=60,
        what="the high pod bound",
    )
    # What holds whichever way a tie is broken: one replica of low, on wt-1; without a tie,
    # the very pod the answer named.
    evicted = [(name.rsplit("-", 2)[0], disruptions.bound[name][0]) for name in disruptions.seen]
    assert evicted == [("low", victim["node"])], (evicted, victim)
    if not tied:
        assert [f"{namespace}/{name}" for name in disruptions.seen] == [victim["pod"]]


def test_reserve_the_members_are_nominated_to_the_nodes_it_named(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    daemon_with_guard: Daemon,
    tmp_path: Path,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["wr-1", "wr-2", "wr-3"], {"cpu": "4", "memory": "8Gi"})
    # Pods of the job's priority on every node: one on each of wr-1 and wr-2, two on wr-3.
    for node, count in (("wr-1", 1), ("wr-2", 1), ("wr-3", 2)):
        for i in range(count):
            cpu = "3" if count == 1 else "1"
            cluster.create_pod(
                namespace, pod_body(f"busy-{node}-{i}", requests={"cpu": cpu}, node_name=node)
            )
    pods = gang("job", 2, "4")
    answer = ask(kubeconfig, namespace, pods, tmp_path / "job.yaml")
    [group] = answer["groups"]
    assert group["outcome"] == "pending", group
    reservation = group["reservation"]
    assert reservation is not None and reservation["afterSeconds"] == RESERVE_AFTER
    said = Counter(reservation["nominated"].values())

    submit(cluster, namespace, pods)
    started = time.monotonic()

    def nominated() -> Counter[str] | None:
        found = Counter(
            p.status.nominated_node_name
            for p in cluster.pods(namespace)
            if p.metadata.name.startswith("job-") and p.status.nominated_node_name
        )
        return found if sum(found.values()) == 2 else None

    # Nothing happens in the cluster meanwhile: the job is tried again when reserveAfter has
    # passed (the periodic retry of parked pods would be a minute).
    got = wait_until(nominated, timeout=RESERVE_AFTER + 10, what="the job holding nodes")
    assert time.monotonic() - started >= RESERVE_AFTER - 1
    assert got == said, (got, said)


def test_gated_the_pod_waits_on_its_gates(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    daemon_with_guard: Daemon,
    tmp_path: Path,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["wg-1"], {"cpu": "4", "memory": "8Gi"})
    body = pod_body("gated", requests={"cpu": "1"})
    body["spec"]["schedulingGates"] = [{"name": "example.com/later"}]
    answer = ask(kubeconfig, namespace, [body], tmp_path / "gated.yaml")
    [group] = answer["groups"]
    assert group["outcome"] == "gated", group
    said = group["unplaced"][f"{namespace}/gated"]
    assert "example.com/later" in said

    submit(cluster, namespace, [body])

    def gated() -> Any:
        condition = scheduled_condition(cluster.pod(namespace, "gated"))
        return condition if condition is not None and condition.reason else None

    condition = wait_until(gated, what="the pod's condition")
    assert condition.reason == "SchedulingGated"
    holds(lambda: not bound(cluster.pods(namespace)), 2, what="nothing bound")


def test_hold_members_that_fit_are_held_then_bind_where_it_said(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    daemon_with_guard: Daemon,
    tmp_path: Path,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["wh-1"], {"cpu": "3", "memory": "8Gi"})
    cluster.add_nodes(["wh-2"], {"cpu": "2", "memory": "8Gi"})
    # A NonStrict gang of three 2-cpu members: room for two (one per node).
    pods = gang("part", 3, "2")
    for body in pods:
        body["metadata"]["annotations"]["gang.scheduling.koordinator.sh/mode"] = "NonStrict"
        body["metadata"]["annotations"]["gang.scheduling.koordinator.sh/waiting-time"] = "5m"
    answer = ask(kubeconfig, namespace, pods, tmp_path / "part.yaml")
    [group] = answer["groups"]
    assert group["outcome"] == "hold", group
    said: dict[str, str] = group["placements"]
    assert Counter(said.values()) == Counter({"wh-1": 1, "wh-2": 1}) and group["holdSeconds"] > 0

    submit(cluster, namespace, pods)
    holds(lambda: not bound(cluster.pods(namespace)), 3, what="the members held, unbound")
    # What it cannot know from the API server, it says: the daemon holds room for them now.
    other = ask(
        kubeconfig, namespace, [pod_body("other", requests={"cpu": "1"})], tmp_path / "o.yaml"
    )
    assert any(
        w.startswith("not known from the API server") and f"{namespace}/part" in w
        for w in other["warnings"]
    ), other["warnings"]

    cluster.add_nodes(["wh-3"], {"cpu": "2", "memory": "8Gi"})
    landed = wait_until(
        lambda: len(b := bound(cluster.pods(namespace))) == 3 and b, what="the gang bound whole"
    )
    held = {f"{namespace}/{p.metadata.name}": p.spec.node_name for p in landed}
    assert {pod: held[pod] for pod in said} == said, (held, said)
