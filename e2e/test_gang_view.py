"""`koordgang gangs` and /gangs show what a person needs to know about each gang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from typing import Any

import pytest

from harness.daemon import DaemonFactory, LocalDaemon
from harness.kube import Cluster, bound, pod_body, wait_until

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


def cluster_kubeconfig(cluster: Cluster) -> str:
    """The kubeconfig the suite runs with (the local control plane's, or the given one)."""
    given = os.environ.get("KOORDGANG_E2E_KUBECONFIG")
    if given:
        return given
    from controlplane import LocalControlPlane

    return str(LocalControlPlane().kubeconfig)
