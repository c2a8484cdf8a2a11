"""Pods and nodes made up in process for the algorithm timings (``dry_run``, ``gather_time``):
no API server, parsed as the informers would parse them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod


def one_core_pod(name: str, node: str = "", priority: int | None = None) -> PodInfo:
    """A pod asking for one core and 1 GiB; bound to ``node`` when one is given."""
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]
    }
    if priority is not None:
        spec["priority"] = priority
    if node:
        spec["nodeName"] = node
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "bench", "uid": name},
            "spec": spec,
            "status": {"phase": "Running" if node else "Pending"},
        }
    )


def ready_node(name: str, cpu: str, labels: Mapping[str, str] | None = None) -> NodeInfo:
    return parse_node(
        {
            "metadata": {"name": name, "labels": dict(labels or {})},
            "status": {
                "allocatable": {"cpu": cpu, "memory": f"{int(cpu) * 8}Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )
