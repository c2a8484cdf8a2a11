"""`koordgang gangs` and /gangs show what a person needs to know about each gang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
from kubernetes import client

from harness.daemon import DaemonFactory, LocalDaemon
from harness.gangs import UPSTREAM
from harness.kube import KEEP_RUNNING, Cluster, bound, job_body, json_object, pod_body, wait_until

pytestmark = pytest.mark.skipif(
    os.environ.get("KOORDGANG_E2E_DAEMON") == "deployment",
    reason="reads the HTTP endpoint of a daemon process of its own",
)


def _gang_pod(name: str, gang: str, minimum: int) -> dict[str, object]:
    return pod_body(
        name,
        requests={"cpu": "1"},
        annotations={
            "gang.scheduling.koordinator.sh/name": gang,
            "gang.scheduling.koordinator.sh/min-available": str(minimum),
        },
    )


def test_the_gang_view_lists_bound_and_waiting_gangs(
    clean_nodes: Cluster, namespace: str, daemon_factory: DaemonFactory, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["view-1"], {"cpu": "4", "memory": "8Gi"})
    daemon = daemon_factory()
    assert isinstance(daemon, LocalDaemon)
    daemon.start()
    for i in range(2):
        cluster.create_pod(namespace, _gang_pod(f"small-{i}", "small", 2))
    for i in range(3):
        cluster.create_pod(namespace, _gang_pod(f"big-{i}", "big", 4))
    # A gang of another API: a Volcano PodGroup, its pods named by annotation.
    cluster.custom.create_namespaced_custom_object(
        "scheduling.volcano.sh",
        "v1beta1",
        namespace,
        "podgroups",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "vc"},
            "spec": {"minMember": 2},
        },
    )
    for i in range(2):
        body = pod_body(
            f"vc-{i}",
            requests={"cpu": "1"},
            annotations={"scheduling.k8s.io/group-name": "vc"},
        )
        cluster.create_pod(namespace, body)
    wait_until(lambda: len(bound(cluster.pods(namespace))) == 4, what="gangs small and vc bound")

    url = f"http://127.0.0.1:{daemon.port}"

    def view() -> dict[str, dict[str, Any]]:
        with urllib.request.urlopen(url + "/gangs", timeout=5) as reply:
            return {g["gang"]: g for g in json.loads(reply.read())["gangs"]}

    gangs = wait_until(
        lambda: (v := view()) and v.get(f"{namespace}/big", {}).get("waitingFor") and v,
        what="the big gang explained",
    )
    small, big = gangs[f"{namespace}/small"], gangs[f"{namespace}/big"]
    assert (small["state"], small["created"], small["bound"], small["minAvailable"]) == (
        "Satisfied",
        2,
        2,
        2,
    )
    assert (big["state"], big["created"], big["bound"]) == ("Pending", 3, 0)
    assert big["waitingFor"] == f"gang {namespace}/big: 3/4 members created, min 4"

    table = subprocess.run(
        [sys.executable, "-m", "koordgang", "gangs", "--url", url],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    line = next(row for row in table.splitlines() if row.startswith(f"{namespace}/big"))
    assert line.split()[:9] == [
        f"{namespace}/big",
        "koordinator",
        "-",
        "Strict",
        "4",
        "3",
        "0",
        "0",
        "Pending",
    ]
    assert line.endswith("3/4 members created, min 4")

    # The same view from the API server, as `kubectl koordgang gangs` shows it: no daemon port.
    # The waiting members' explanation reaches their PodScheduled condition once they have
    # waited explainAfter (1 s).
    env = {**os.environ, "KUBECONFIG": cluster_kubeconfig(cluster)}
    plugin = os.path.join(os.path.dirname(sys.executable), "kubectl-koordgang")

    def view_from_api() -> dict[str, Any]:
        from_api = subprocess.run(
            [plugin, "gangs", "-o", "json"], capture_output=True, text=True, timeout=60, env=env
        )
        assert from_api.returncode == 0, from_api.stderr
        view = {g["gang"]: g for g in json.loads(from_api.stdout)}
        return view if view.get(f"{namespace}/big", {}).get("waitingFor") else {}

    rows = wait_until(view_from_api, timeout=30, what="the gang view from the API server")
    assert (rows[f"{namespace}/small"]["state"], rows[f"{namespace}/small"]["bound"]) == (
        "Satisfied",
        2,
    )
    assert rows[f"{namespace}/big"]["state"] == "Pending"
    assert (rows[f"{namespace}/vc"]["api"], rows[f"{namespace}/vc"]["state"]) == (
        "volcano",
        "Satisfied",
    )
    assert rows[f"{namespace}/big"]["api"] == "koordinator"
    assert rows[f"{namespace}/big"]["waitingFor"] == (
        f"gang {namespace}/big: 3/4 members created, min 4"
    )


def test_the_gang_view_says_finished_and_lists_basic_podgroups_only_when_asked(
    clean_nodes: Cluster, namespace: str, daemon_factory: DaemonFactory, check_invariants: None
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["view-2"], {"cpu": "4", "memory": "8Gi"})
    daemon = daemon_factory()
    assert isinstance(daemon, LocalDaemon)
    daemon.start()
    # Two Jobs whose pods form Koordinator gangs of 2: "done" finishes at once, "runs" keeps
    # running. From Kubernetes 1.37 the Job controller also points each Job's pods at a basic
    # upstream PodGroup of its own: no gang, and not listed beside the gangs unless asked for.
    jobs = client.BatchV1Api(cluster.api_client)
    running = pod_body(
        "worker",
        requests={"cpu": "1"},
        annotations={
            "gang.scheduling.koordinator.sh/name": "runs",
            "gang.scheduling.koordinator.sh/min-available": "2",
            **KEEP_RUNNING,
        },
    )
    for body in (job_body("runs", 2, running), job_body("done", 2, _gang_pod("worker", "done", 2))):
        jobs.create_namespaced_job(namespace, client.V1Job.model_validate(body))
    try:
        wait_until(
            lambda: (
                len(pods := cluster.pods(namespace, "job-name=done")) == 2
                and all(p.status.phase == "Succeeded" for p in pods)
                and len(bound(cluster.pods(namespace, "job-name=runs"))) == 2
            ),
            timeout=60,
            what="Job done's two pods succeeded and Job runs' two bound",
        )
        basic = basic_podgroup_of(cluster, namespace, "runs")
        url = f"http://127.0.0.1:{daemon.port}"
        done, runs = f"{namespace}/done", f"{namespace}/runs"

        def view(query: str = "") -> dict[str, dict[str, Any]]:
            with urllib.request.urlopen(url + "/gangs" + query, timeout=5) as reply:
                rows = json.loads(reply.read())["gangs"]
            return {g["gang"]: g for g in rows if g["gang"].startswith(f"{namespace}/")}

        def settled() -> dict[str, dict[str, Any]]:
            rows = view()
            states = (rows.get(done, {}).get("state"), rows.get(runs, {}).get("state"))
            return rows if states == ("Finished", "Satisfied") else {}

        rows = wait_until(settled, what="gang done Finished and gang runs Satisfied")
        assert sorted(rows) == [done, runs]  # no basic PodGroup
        assert (rows[done]["created"], rows[done]["bound"], rows[done]["waitingFor"]) == (0, 0, "")

        def table(*args: str) -> dict[str, list[str]]:
            out = subprocess.run(
                [sys.executable, "-m", "koordgang", "gangs", *args],
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            ).stdout
            rows = [row.split() for row in out.splitlines()]
            return {row[0]: row for row in rows if row[0].startswith(f"{namespace}/")}

        # From the daemon, and from the API server (`kubectl koordgang gangs`).
        kubeconfig = cluster_kubeconfig(cluster)
        for where in (("--url", url), ("--kubeconfig", kubeconfig)):
            lines = table(*where)
            assert sorted(lines) == [done, runs]
            # GANG API GROUP MODE MIN CREATED PLACED BOUND STATE
            assert lines[done][1:9] == [
                "koordinator",
                "-",
                "Strict",
                "2",
                "0",
                "0",
                "0",
                "Finished",
            ]
            assert lines[runs][8] == "Satisfied"
        if basic is None:
            return  # Kubernetes 1.36 makes no PodGroup for these Jobs
        key = f"{namespace}/{basic}"

        def with_basic() -> dict[str, dict[str, Any]]:
            rows = view("?all=true")
            return rows if key in rows else {}

        everything = wait_until(with_basic, what="the basic PodGroup's row")
        assert (everything[key]["api"], everything[key]["mode"]) == ("kubernetes", "basic")
        assert (everything[key]["minAvailable"], everything[key]["created"]) == (None, 0)
        assert (everything[done]["state"], everything[runs]["state"]) == ("Finished", "Satisfied")
        for where in (("--url", url), ("--kubeconfig", kubeconfig)):
            lines = table(*where, "--all")
            assert {done, runs, key} <= set(lines)
            assert lines[key][1:5] == ["kubernetes", "-", "basic", "-"]
    finally:
        for job in ("runs", "done"):
            jobs.delete_namespaced_job(job, namespace, propagation_policy="Background")


def basic_podgroup_of(cluster: Cluster, namespace: str, job: str) -> str | None:
    """The name of the basic upstream PodGroup the Job controller made for ``job`` (Kubernetes
    1.37); None where it makes none (1.36, or a cluster that does not serve PodGroups)."""
    if UPSTREAM[1] == "v1alpha2":
        return None
    try:
        cluster.custom.list_namespaced_custom_object(
            UPSTREAM[0], UPSTREAM[1], namespace, "podgroups"
        )
    except client.exceptions.ApiException as error:
        if error.status == 404:
            return None
        raise

    def find() -> str | None:
        listed = json_object(
            cluster.custom.list_namespaced_custom_object(
                UPSTREAM[0], UPSTREAM[1], namespace, "podgroups"
            )
        )
        for item in listed["items"]:
            owners = item["metadata"].get("ownerReferences") or []
            if any(o["kind"] == "Job" and o["name"] == job for o in owners):
                assert "basic" in item["spec"]["schedulingPolicy"], item["spec"]
                name: str = item["metadata"]["name"]
                return name
        return None

    return wait_until(find, timeout=30, what=f"the basic PodGroup of Job {job}")


def cluster_kubeconfig(cluster: Cluster) -> str:
    """The kubeconfig the suite runs with (the local control plane's, or the given one)."""
    given = os.environ.get("KOORDGANG_E2E_KUBECONFIG")
    if given:
        return given
    from controlplane import LocalControlPlane

    return str(LocalControlPlane().kubeconfig)
