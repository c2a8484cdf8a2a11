"""Nodes as the API server returns them (``node_json``) and as the node informer parses them
(``node``); a row of alike nodes (``cluster``) and a cache holding some (``cache_of``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache

GPU = "nvidia.com/gpu"


def node_json(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    gpus: int = 0,
    allocatable: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
    resource_version: str = "1",
) -> dict[str, Any]:
    """``gpus`` adds ``nvidia.com/gpu`` to what the node offers, ``allocatable`` any other
    resource."""
    offered = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpus:
        offered[GPU] = str(gpus)
    offered.update(allocatable or {})
    spec: dict[str, Any] = {"unschedulable": unschedulable}
    if taints is not None:
        spec["taints"] = [dict(taint) for taint in taints]
    return {
        "metadata": {
            "name": name,
            "labels": dict(labels or {}),
            "resourceVersion": resource_version,
        },
        "spec": spec,
        "status": {
            "allocatable": offered,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def node(name: str, **kwargs: Any) -> NodeInfo:
    """``node_json``'s node, parsed; takes its keywords."""
    return parse_node(node_json(name, **kwargs))


def cluster(count: int, *, prefix: str = "n", first: int = 1, **kwargs: Any) -> list[NodeInfo]:
    """``count`` alike nodes ``<prefix><first>``, ``<prefix><first + 1>``...; takes ``node``'s
    keywords."""
    return [node(f"{prefix}{i}", **kwargs) for i in range(first, first + count)]


def cache_of(*infos: NodeInfo, pods: Iterable[PodInfo] = ()) -> SchedulerCache:
    """A scheduler's cache holding these nodes and pods."""
    cache = SchedulerCache()
    for info in infos:
        cache.upsert_node(info)
    for pod in pods:
        cache.upsert_pod(pod)
    return cache
