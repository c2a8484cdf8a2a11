"""What the gangs view says of groups that are not gangs (upstream's ``basic`` PodGroups, one per
Job from Kubernetes 1.37) and of gangs whose pods all finished: from the registry's rows
(``/gangs``) to the table and the ``--all`` flag of ``koordgang gangs``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.gangapis.kubernetes import KubernetesApi
from koordgang.gangs_view import fetch, render_table
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.state.cache import SchedulerCache
from koordgang.state.dra import DraManager
from koordgang.state.gang_rows import gang_rows
from koordgang.state.gangs import GangRegistry
from koordgang.testing.builders.dra import resource_claim

NAME = "gang.scheduling.koordinator.sh/name"
MIN_AVAILABLE = "gang.scheduling.koordinator.sh/min-available"


def job_pod(
    name: str, *, gang: str | None = "train", podgroup: str | None = None, phase: str = "Pending"
) -> PodInfo:
    """A pod of a Job: in a Koordinator gang of 2 (``gang``), pointed by the Job controller at
    an upstream PodGroup (``podgroup``), or both."""
    annotations = {NAME: gang, MIN_AVAILABLE: "2"} if gang else {}
    spec: dict[str, Any] = {
        "schedulerName": "koord-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
    }
    if podgroup:
        spec["schedulingGroup"] = {"podGroupName": podgroup}
    if phase != "Pending":
        spec["nodeName"] = "node-1"
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name, "annotations": annotations},
            "spec": spec,
            "status": {"phase": phase},
        }
    )


def upstream_podgroup(name: str, policy: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns", "uid": f"pg-{name}"},
        "spec": {"schedulingPolicy": policy},
    }


def rows_of(pods: list[PodInfo], podgroups: list[dict[str, Any]], **options: Any) -> list[Any]:
    registry = GangRegistry(600.0, resolve=Resolve(GANG_APIS))
    dra = DraManager()
    cache = SchedulerCache(extensions=(dra,))
    for obj in podgroups:
        registry.on_podgroup(KubernetesApi().parse(obj))
    for pod in pods:
        cache.upsert_pod(pod)
        registry.on_pod(pod)
    return gang_rows(registry, cache, dra, **options)


# -- basic upstream PodGroups ---------------------------------------------------------------


def test_a_jobs_basic_podgroup_beside_its_gang_is_left_out() -> None:
    # Kubernetes 1.37: the Job controller points the pods at a basic PodGroup of their own;
    # they declare a Koordinator gang too, which is the one meant.
    pods = [job_pod(f"train-{i}", podgroup="train-basic") for i in range(2)]
    rows = rows_of(pods, [upstream_podgroup("train-basic", {"basic": {}})])

    assert [(r["gang"], r["api"], r["created"]) for r in rows] == [("ns/train", "koordinator", 2)]


def test_a_basic_podgroup_of_plain_pods_is_left_out() -> None:
    pods = [job_pod(f"web-{i}", gang=None, podgroup="web-basic") for i in range(2)]
    assert rows_of(pods, [upstream_podgroup("web-basic", {"basic": {}})]) == []


def test_all_shows_basic_podgroups_as_basic_with_no_minimum_and_nothing_awaited() -> None:
    pods = [job_pod(f"train-{i}", podgroup="train-basic") for i in range(2)]
    pods += [job_pod(f"web-{i}", gang=None, podgroup="web-basic") for i in range(3)]
    podgroups = [
        upstream_podgroup("train-basic", {"basic": {}}),
        upstream_podgroup("web-basic", {"basic": {}}),
    ]

    rows = {r["gang"]: r for r in rows_of(pods, podgroups, with_basic=True)}

    assert sorted(rows) == ["ns/train", "ns/train-basic", "ns/web-basic"]
    assert rows["ns/train"]["mode"] == "Strict"
    for key, created in (("ns/train-basic", 0), ("ns/web-basic", 3)):
        row = rows[key]
        assert (row["api"], row["mode"], row["minAvailable"]) == ("kubernetes", "basic", None)
        assert (row["created"], row["waitingFor"]) == (created, "")
    table = render_table(list(rows.values())).splitlines()
    line = next(line for line in table if line.startswith("ns/web-basic"))
    # GANG, API, GROUP, MODE, MIN, CREATED, PLACED, BOUND: no minimum, the mode says basic.
    assert line.split()[:8] == ["ns/web-basic", "kubernetes", "-", "basic", "-", "3", "0", "0"]


def test_an_upstream_podgroup_with_a_gang_policy_is_a_gang() -> None:
    pods = [job_pod(f"w-{i}", gang=None, podgroup="w") for i in range(3)]
    rows = rows_of(pods, [upstream_podgroup("w", {"gang": {"minCount": 3}})])
    assert [(r["gang"], r["mode"], r["minAvailable"]) for r in rows] == [("ns/w", "Strict", 3)]


# -- finished gangs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "phases", [("Succeeded", "Succeeded"), ("Succeeded", "Failed"), ("Failed", "Failed")]
)
def test_a_gang_whose_pods_all_finished_reads_finished(phases: tuple[str, str]) -> None:
    pods = [job_pod(f"train-{i}", phase=phase) for i, phase in enumerate(phases)]
    [row] = rows_of(pods, [])
    assert (row["state"], row["created"], row["waitingFor"]) == ("Finished", 0, "")


def test_a_gang_with_a_member_still_running_reads_satisfied() -> None:
    pods = [job_pod("train-0", phase="Succeeded"), job_pod("train-1", phase="Running")]
    [row] = rows_of(pods, [])
    assert (row["state"], row["created"], row["bound"]) == ("Satisfied", 1, 1)


def test_a_gang_without_members_is_not_finished() -> None:
    rows = rows_of([], [upstream_podgroup("w", {"gang": {"minCount": 3}})])
    assert [r["state"] for r in rows] == ["Pending"]


def test_the_table_shows_finished() -> None:
    pods = [job_pod(f"train-{i}", phase="Succeeded") for i in range(2)]
    line = render_table(rows_of(pods, [])).splitlines()[1]
    assert line.split()[:9] == [
        "ns/train",
        "koordinator",
        "-",
        "Strict",
        "2",
        "0",
        "0",
        "0",
        "Finished",
    ]


# -- devices ------------------------------------------------------------------------------------


def test_a_network_attached_device_counts_on_its_members_node() -> None:
    """A device a pool offers on several nodes has no node in its allocation: the row names the
    node its member runs on, so the table counts nodes, not question marks."""
    dra = DraManager()
    selector = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a"]}]}
        ]
    }
    for i in (0, 1):
        dra.claim_store.upsert(
            resource_claim(
                f"c{i}",
                namespace="ns",
                status={
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": "gpus",
                                    "driver": "gpu.example.com",
                                    "pool": "fabric",
                                    "device": f"nic-{i}",
                                }
                            ]
                        },
                        "nodeSelector": selector,
                    }
                },
            )
        )
    registry = GangRegistry(600.0, resolve=Resolve(GANG_APIS))
    cache = SchedulerCache(extensions=(dra,))
    for i in (0, 1):
        pod = parse_pod(
            {
                "metadata": {
                    "name": f"m{i}",
                    "namespace": "ns",
                    "uid": f"m{i}",
                    "annotations": {NAME: "train", MIN_AVAILABLE: "2"},
                },
                "spec": {
                    "schedulerName": "koord-scheduler",
                    "nodeName": f"node-{i}",
                    "containers": [{"name": "c"}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": f"c{i}"}],
                },
                "status": {"phase": "Running"},
            }
        )
        cache.upsert_pod(pod)
        registry.on_pod(pod)
    [row] = gang_rows(registry, cache, dra)
    assert row["devices"] == {
        "ns/m0": ["node-0: gpu.example.com/fabric/nic-0"],
        "ns/m1": ["node-1: gpu.example.com/fabric/nic-1"],
    }
    assert "2 on 2 nodes" in render_table([row]).splitlines()[1]


# -- `koordgang gangs --all` asks the daemon for them -------------------------------------------

BASIC_ROW = {
    "gang": "ns/web-basic",
    "api": "kubernetes",
    "group": ["ns/web-basic"],
    "mode": "basic",
    "minAvailable": None,
    "created": 3,
    "placed": 3,
    "bound": 3,
    "state": "Satisfied",
    "waitingFor": "",
}
GANG_ROW = {**BASIC_ROW, "gang": "ns/train", "api": "koordinator", "mode": "Strict"}


@pytest.fixture
def daemon_url() -> Iterator[str]:
    """A daemon's /gangs: basic PodGroups only with ``?all=true``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            rows = [GANG_ROW, BASIC_ROW] if self.path == "/gangs?all=true" else [GANG_ROW]
            body = json.dumps({"gangs": rows}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_fetch_asks_for_basic_podgroups_only_when_told(daemon_url: str) -> None:
    assert [g["gang"] for g in fetch(daemon_url)] == ["ns/train"]
    assert [g["gang"] for g in fetch(daemon_url, with_basic=True)] == ["ns/train", "ns/web-basic"]


def test_the_command_lists_basic_podgroups_with_all(daemon_url: str) -> None:
    def gangs(*flags: str) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-m", "koordgang", "gangs", "--url", daemon_url, *flags],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return [line.split()[0] for line in out.splitlines()[1:]]

    assert gangs() == ["ns/train"]
    assert gangs("--all") == ["ns/train", "ns/web-basic"]
