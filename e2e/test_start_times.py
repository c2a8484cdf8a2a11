"""Start times on the real API server: a Job whose time limit the real Job controller enforces
holds a node; a gang waiting behind it is told when it starts, in its pods' condition and in
the gangs view, and starts by then."""

from __future__ import annotations

import json
import math
import time
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
#: The first Job's time limit (seconds); its pods' grace period is 0 (pod_body), and the
#: scheduler allows 10 s for the Job controller and the watch.
LIMIT = 40


def rfc3339(moment: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def test_a_gang_behind_a_job_with_a_time_limit_hears_when_it_starts_and_starts_by_then(
    clean_nodes: Cluster,
    namespace: str,
    daemon_factory: DaemonFactory,
    batch: client.BatchV1Api,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["st-1"], {"cpu": "4", "memory": "8Gi"})
    daemon = daemon_factory()
    daemon.start()

    first = job_body("first", 1, pod_body("x", requests={"cpu": "4"}, annotations=KEEP_RUNNING))
    first["spec"]["activeDeadlineSeconds"] = LIMIT
    batch.create_namespaced_job(namespace, client.V1Job.model_validate(first))
    pods = wait_until(lambda: bound(cluster.pods(namespace)), what="the first Job's pod bound")
    assert len(pods) == 1

    def job_started() -> float | None:
        status = batch.read_namespaced_job("first", namespace).status
        return status.start_time.timestamp() if status and status.start_time else None

    started = wait_until(job_started, what="the first Job's startTime")
    expected = started + LIMIT + 10

    member = pod_body("y", requests={"cpu": "2"}, annotations={GANG: "second", MIN: "2"})
    batch.create_namespaced_job(
        namespace, client.V1Job.model_validate(job_body("second", 2, member))
    )

    def told() -> list[str]:
        messages = []
        for pod in cluster.pods(namespace):
            condition = scheduled_condition(pod)
            if pod.metadata.labels.get("job-name") == "second" and condition is not None:
                messages.append(condition.message or "")
        return messages if len(messages) == 2 and all("expected to" in m for m in messages) else []

    messages = wait_until(told, timeout=60, what="the second Job's pods told their start")
    # To the minute, rounded up: never earlier than planned.
    clock = time.strftime("%H:%M UTC", time.gmtime(math.ceil(expected / 60) * 60))
    for message in messages:
        assert (
            f"expected to start by {clock} (an estimate): 1 pod on st-1 reaches its time limit"
            in message
        ), message

    if isinstance(daemon, LocalDaemon):  # the in-cluster Deployment's port is not ours
        with urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/gangs", timeout=5) as reply:
            rows: dict[str, Any] = {g["gang"]: g for g in json.loads(reply.read())["gangs"]}
        row = rows[f"{namespace}/second"]
        assert row["expectedStart"] == rfc3339(expected)
        [holder] = row["startWaitsFor"]
        assert holder.startswith(f"{namespace}/first-")

    # The Job controller ends the first Job at its deadline; the gang binds by the time told.
    def second_bound() -> list[Any]:
        members = [
            p
            for p in bound(cluster.pods(namespace))
            if p.metadata.labels.get("job-name") == "second"
        ]
        return members if len(members) == 2 else []

    members = wait_until(second_bound, timeout=LIMIT + 60, what="the second Job's gang bound")
    for pod in members:
        condition = scheduled_condition(pod)
        assert condition is not None and condition.status == "True"
        assert condition.last_transition_time.timestamp() <= expected, (
            f"bound at {condition.last_transition_time}, told {rfc3339(expected)}"
        )
