"""Backfill into held room on the real API server: a Job whose time limit the real Job
controller enforces runs on a node; a gang that needs the whole node waits past reserveAfter
and holds it. A short Job (its time limit ends before the gang starts by the first Job's) then
runs on the held node, and the reservation says it let it in; a long Job does not, and hears
that the node is held."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from kubernetes import client

from harness.daemon import DaemonFactory, LocalDaemon
from harness.kube import (
    KEEP_RUNNING,
    Cluster,
    bound,
    job_body,
    pod_body,
    scheduled_condition,
    wait_until,
)

GANG = "gang.scheduling.koordinator.sh/name"
MIN = "gang.scheduling.koordinator.sh/min-available"
#: The first Job's time limit (seconds): the gang starts by its end (plus the 10 s the
#: scheduler allows for the Job controller; the pods' grace period is 0, pod_body).
LIMIT = 120
#: The short Job ends well before that, the long one well after.
SHORT = 15
LONG = 3600
RESERVE_AFTER = 3


def run_job(batch: client.BatchV1Api, namespace: str, name: str, cpu: str, limit: int) -> None:
    """A Job of one pod that runs until the Job controller ends it at ``limit``."""
    body = job_body(name, 1, pod_body("x", requests={"cpu": cpu}, annotations=KEEP_RUNNING))
    body["spec"]["activeDeadlineSeconds"] = limit
    batch.create_namespaced_job(namespace, client.V1Job.model_validate(body))


def job_pods(cluster: Cluster, namespace: str, job: str) -> list[Any]:
    return [p for p in cluster.pods(namespace) if p.metadata.labels.get("job-name") == job]


def test_a_short_job_runs_on_held_room_and_a_long_one_does_not(
    clean_nodes: Cluster,
    namespace: str,
    daemon_factory: DaemonFactory,
    batch: client.BatchV1Api,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["bf-1"], {"cpu": "4", "memory": "8Gi"})
    daemon = daemon_factory("--reserve-after", str(RESERVE_AFTER))
    daemon.start()

    run_job(batch, namespace, "first", "1", LIMIT)
    wait_until(lambda: bound(job_pods(cluster, namespace, "first")), what="the first Job bound")

    member = pod_body("y", requests={"cpu": "2"}, annotations={GANG: "big", MIN: "2"})
    batch.create_namespaced_job(namespace, client.V1Job.model_validate(job_body("big", 2, member)))

    def holding() -> list[Any]:
        pods = job_pods(cluster, namespace, "big")
        nominated = [p for p in pods if p.status.nominated_node_name == "bf-1"]
        return pods if len(pods) == 2 and len(nominated) == 2 else []

    wait_until(holding, timeout=60, what="the gang holding bf-1")

    # Both fit beside the first Job's pod, on the room held for the gang: the short one ends
    # before the gang starts, the long one would not.
    run_job(batch, namespace, "short", "1", SHORT)
    run_job(batch, namespace, "long", "1", LONG)
    [short] = wait_until(
        lambda: bound(job_pods(cluster, namespace, "short")), timeout=30, what="the short Job bound"
    )
    assert short.spec.node_name == "bf-1"

    def long_told() -> str:
        pods = job_pods(cluster, namespace, "long")
        condition = scheduled_condition(pods[0]) if pods else None
        return condition.message or "" if condition is not None else ""

    told = wait_until(long_told, timeout=30, what="the long Job's pod told why it waits")
    assert "1 node(s) held for" in told and "/big" in told, told
    assert not bound(job_pods(cluster, namespace, "long"))
    assert all(p.status.nominated_node_name == "bf-1" for p in job_pods(cluster, namespace, "big"))

    if isinstance(daemon, LocalDaemon):  # the in-cluster Deployment's port is not ours
        with urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/gangs", timeout=5) as reply:
            rows: dict[str, Any] = {g["gang"]: g for g in json.loads(reply.read())["gangs"]}
        row = rows[f"{namespace}/big"]
        waiting = row["waitingFor"]
        assert "let in 1 pod that ends before it starts; promised to start by " in waiting, waiting
        # The promise, made as it began to hold the node, is in the view too.
        assert row["promised"] is True and row["expectedStart"], row

    # The Job controller ends the short Job at its time limit; the long one still waits.
    wait_until(
        lambda: not bound(job_pods(cluster, namespace, "short")),
        timeout=SHORT + 30,
        what="the short Job ended by its time limit",
    )
    assert not bound(job_pods(cluster, namespace, "long"))


def test_room_lent_is_taken_back_when_the_job_it_was_held_for_could_start(
    clean_nodes: Cluster,
    namespace: str,
    daemon_factory: DaemonFactory,
    batch: client.BatchV1Api,
    check_invariants: None,
) -> None:
    """The gang holds bf-1 for the first Job's pod (its limit 120 s); a Job of 60 s is let in
    beside it. The first Job then ends early (deleted, as a Job done before its limit): only
    what the gang let in stands between it and its room, so that pod is evicted (its Event
    says for whom) and the gang binds, not a minute later."""
    cluster = clean_nodes
    cluster.add_nodes(["bf-1"], {"cpu": "4", "memory": "8Gi"})
    daemon_factory("--reserve-after", str(RESERVE_AFTER)).start()

    run_job(batch, namespace, "first", "1", LIMIT)
    wait_until(lambda: bound(job_pods(cluster, namespace, "first")), what="the first Job bound")
    member = pod_body("y", requests={"cpu": "2"}, annotations={GANG: "big", MIN: "2"})
    batch.create_namespaced_job(namespace, client.V1Job.model_validate(job_body("big", 2, member)))

    def holding() -> bool:
        pods = job_pods(cluster, namespace, "big")
        return len([p for p in pods if p.status.nominated_node_name == "bf-1"]) == 2

    wait_until(holding, timeout=60, what="the gang holding bf-1")
    run_job(batch, namespace, "lent", "1", 60)
    [lent] = wait_until(
        lambda: bound(job_pods(cluster, namespace, "lent")), timeout=30, what="the 60 s Job let in"
    )
    assert not bound(job_pods(cluster, namespace, "big"))

    batch.delete_namespaced_job("first", namespace, propagation_policy="Background")

    def preempted() -> list[Any]:
        events = cluster.events_for(namespace, lent.metadata.name)
        return [e for e in events if e.reason == "Preempted"]

    [event] = wait_until(preempted, timeout=60, what="the pod let in evicted")
    assert f"Preempted by {namespace}/big " in (event.message or ""), event.message

    def gang_bound() -> list[Any]:
        members = bound(job_pods(cluster, namespace, "big"))
        return members if len(members) == 2 else []

    members = wait_until(gang_bound, timeout=60, what="the gang bound once the pod let in is gone")
    assert {p.spec.node_name for p in members} == {"bf-1"}
    assert all(
        p.metadata.uid != lent.metadata.uid for p in bound(job_pods(cluster, namespace, "lent"))
    )
