"""`koordgang whatif` against a real API server: the answer, then the same pods submitted land
as it said; and a what-if writes nothing."""

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

from harness.daemon import DaemonFactory, LocalDaemon
from harness.kube import Cluster, bound, json_object, pod_body, wait_until

pytestmark = pytest.mark.skipif(
    os.environ.get("KOORDGANG_E2E_DAEMON") == "deployment",
    reason="asks the HTTP endpoint of a daemon process of its own",
)


def _gang_pods(gang: str, count: int, cpu: str, **kwargs: Any) -> list[dict[str, Any]]:
    annotations = {
        "gang.scheduling.koordinator.sh/name": gang,
        "gang.scheduling.koordinator.sh/min-available": str(count),
    }
    return [
        pod_body(f"{gang}-{i}", requests={"cpu": cpu}, annotations=annotations, **kwargs)
        for i in range(count)
    ]


def _file(namespace: str, pods: list[dict[str, Any]]) -> str:
    docs = []
    for body in pods:
        doc = json.loads(json.dumps(body))
        doc["metadata"]["namespace"] = namespace
        docs.append(doc)
    return yaml.safe_dump_all(docs)


def _whatif_command(path: Path) -> list[str]:
    return [sys.executable, "-m", "koordgang", "whatif", "-f", str(path)]


def _daemon(daemon_factory: DaemonFactory) -> LocalDaemon:
    daemon = daemon_factory()
    assert isinstance(daemon, LocalDaemon)
    daemon.start()
    return daemon


def test_the_answer_is_what_happens_when_the_job_is_submitted(
    clean_nodes: Cluster,
    namespace: str,
    daemon_factory: DaemonFactory,
    tmp_path: Path,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["wi-1", "wi-2"], {"cpu": "4", "memory": "8Gi"})
    daemon = _daemon(daemon_factory)

    # Fits: four members over two nodes.
    fits = _gang_pods("fits", 4, "1")
    status, answer = daemon.what_if(_file(namespace, fits))
    assert status == 200, answer
    assert answer["fits"] is True
    [group] = answer["groups"]
    assert group["outcome"] == "bind"
    said = group["placements"]
    assert sorted(said) == [f"{namespace}/fits-{i}" for i in range(4)]
    for body in fits:
        cluster.create_pod(namespace, body)
    landed = wait_until(
        lambda: (b := bound(cluster.pods(namespace))) and len(b) == 4 and b, what="fits bound"
    )
    assert Counter(p.spec.node_name for p in landed) == Counter(said.values())

    # Does not fit: the rest of the room is 2 cpu per node; each member wants 3.
    big = _gang_pods("big", 3, "3")
    path = tmp_path / "big.yaml"
    path.write_text(_file(namespace, big))
    status, answer = daemon.what_if(path.read_text())
    assert status == 200, answer
    assert answer["fits"] is False
    [group] = answer["groups"]
    assert group["outcome"] == "pending"
    assert "cpu" in group["short"]
    assert any("Insufficient cpu" in note for note in group["notes"])
    text = subprocess.run(
        [*_whatif_command(path), "--server", f"http://127.0.0.1:{daemon.port}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert text.returncode == 0, text.stderr
    assert "fits now: no" in text.stdout
    assert "short: the members that found no node ask for" in text.stdout
    for body in big:
        cluster.create_pod(namespace, body)

    def explained() -> bool:
        pods = [p for p in cluster.pods(namespace) if p.metadata.name.startswith("big-")]
        return len(pods) == 3 and all(
            not p.spec.node_name
            and any(
                c.type == "PodScheduled" and "Insufficient cpu" in (c.message or "")
                for c in p.status.conditions or ()
            )
            for p in pods
        )

    wait_until(explained, what="big pending, told of cpu")
    time.sleep(2)
    assert len(bound(cluster.pods(namespace))) == 4  # still only the first gang


def test_a_what_if_writes_nothing(
    clean_nodes: Cluster, namespace: str, daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["wn-1"], {"cpu": "4", "memory": "8Gi"})
    daemon = _daemon(daemon_factory)
    # Something to preempt: a running pod of lower priority, and a pending one of ours.
    cluster.create_pod(namespace, pod_body("low", requests={"cpu": "3"}))
    wait_until(lambda: bound(cluster.pods(namespace)), what="low bound")
    cluster.create_pod(namespace, pod_body("waiting", requests={"cpu": "64"}))
    time.sleep(2)  # the daemon has explained "waiting" once: its Events are written

    def world() -> tuple[Any, ...]:
        pods = sorted(
            (p.metadata.name, p.metadata.resource_version) for p in cluster.pods(namespace)
        )
        events = len(cluster.core.list_namespaced_event(namespace).items)
        groups = json_object(
            cluster.custom.list_namespaced_custom_object(
                "scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups"
            )
        )["items"]
        return pods, events, len(groups)

    before = world()
    podgroup = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": namespace},
        "spec": {"minMember": 2},
    }
    members = [
        pod_body(
            f"hi-{i}",
            requests={"cpu": "2"},
            labels={"scheduling.x-k8s.io/pod-group": "pg"},
            priority=1000,
        )
        for i in range(2)
    ]
    text = yaml.safe_dump(podgroup) + "---\n" + _file(namespace, members)
    status, answer = daemon.what_if(text)
    assert status == 200, answer
    [group] = answer["groups"]
    assert group["outcome"] == "preempt"
    assert [v["pod"] for v in group["evict"]] == [f"{namespace}/low"]

    # Bad input: 400 with the field named, and the CLI exits 2 with the same message.
    bad = text.replace("minMember: 2", "minMember: two")
    status, error = daemon.what_if(bad)
    assert status == 400
    assert "minMember" in error["error"]
    path = tmp_path / "bad.yaml"
    path.write_text(bad)
    run = subprocess.run(
        [*_whatif_command(path), "--server", f"http://127.0.0.1:{daemon.port}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert error["error"] in run.stderr
    time.sleep(2)
    assert world() == before
