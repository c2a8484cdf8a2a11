"""kwok's configuration: what the fake kubelets write, and how often.

Every write kwok makes lands on the same 2 cores as the API server and the scheduler under
test, so the node heartbeat is part of every measurement's background. kwok v0.7.0's own node
stages rewrite each node's status every 20-45 s whenever node Leases are on; these tests keep
the quiet configuration from slipping back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from controlplane.cluster import KWOK_STAGES, Endpoints, LocalControlPlane


def stages() -> dict[str, dict[str, Any]]:
    documents = list(yaml.safe_load_all(KWOK_STAGES.read_text()))
    assert all(d["kind"] == "Stage" for d in documents)
    return {d["metadata"]["name"]: d["spec"] for d in documents}


def node_stages() -> dict[str, dict[str, Any]]:
    return {name: spec for name, spec in stages().items() if spec["resourceRef"]["kind"] == "Node"}


def test_node_stages_are_given_so_that_kwok_does_not_fall_back_to_its_own() -> None:
    # With no node stage in its configuration kwok uses its defaults, and picks them wrongly.
    assert set(node_stages()) == {"node-initialize", "node-heartbeat"}


def test_a_node_that_is_not_ready_is_made_ready_at_once() -> None:
    spec = node_stages()["node-initialize"]
    assert "delay" not in spec
    template = spec["next"]["statusTemplate"]
    assert "phase: Running" in template
    assert "range NodeConditions" in template


def test_a_ready_node_rewrites_its_status_every_five_to_ten_minutes() -> None:
    delay = node_stages()["node-heartbeat"]["delay"]
    assert delay["durationMilliseconds"] == 5 * 60_000
    assert delay["jitterDurationMilliseconds"] == 10 * 60_000


def test_kwok_renews_no_node_leases(tmp_path: Path) -> None:
    plane = LocalControlPlane(tmp_path)
    endpoints = Endpoints(
        etcd_client_port=1,
        etcd_peer_port=2,
        apiserver_port=3,
        kwok_port=4,
        token="t",
        ca_bundle=None,
    )
    args = plane._kwok_args(endpoints)
    assert "--node-lease-duration-seconds=0" in args
    assert f"--config={KWOK_STAGES}" in args
