"""Each peer's KubeSchedulerConfiguration: the profile its release ships, pointed at the bench's
API server, with leader election off and, when asked, the client's QPS and burst raised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bench.workload import SCHEDULER

API_VERSION = "kubescheduler.config.k8s.io/v1"
#: Where each release keeps the configuration it ships, under its module's source.
SHIPPED = {
    "coscheduling": "manifests/coscheduling/scheduler-config.yaml",
    "koord-scheduler": "config/manager/scheduler-config.yaml",
}
#: The key of the ConfigMap holding koord-scheduler's configuration.
KOORD_CONFIG_KEY = "koord-scheduler-config"


def shipped_config(peer: str, source: Path | None) -> dict[str, Any]:
    """The release's own configuration (kube-scheduler: the defaults, one profile)."""
    if peer == "kube-scheduler" or source is None:
        return {"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration", "profiles": [{}]}
    document = yaml.safe_load((source / SHIPPED[peer]).read_text())
    if document.get("kind") == "ConfigMap":
        document = yaml.safe_load(document["data"][KOORD_CONFIG_KEY])
    if not isinstance(document, dict):
        raise ValueError(f"{peer}: no configuration in {source / SHIPPED[peer]}")
    return document


def bench_config(
    peer: str, source: Path | None, kubeconfig: Path, qps: int | None
) -> dict[str, Any]:
    """``shipped_config`` for the bench: every profile picks up the pods the bench creates
    (``schedulerName: koord-scheduler``, as koordgang's do), so all schedulers see the same pods."""
    config = shipped_config(peer, source)
    config["leaderElection"] = {"leaderElect": False}
    connection: dict[str, Any] = {"kubeconfig": str(kubeconfig)}
    if qps is not None:
        connection.update(qps=qps, burst=qps)
    config["clientConnection"] = connection
    profiles = config.get("profiles") or [{}]
    if len(profiles) != 1:
        raise ValueError(f"{peer}: expected one scheduler profile, found {len(profiles)}")
    profiles[0]["schedulerName"] = SCHEDULER
    config["profiles"] = profiles
    return config
