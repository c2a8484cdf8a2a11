"""Writes to pods: bindings, conditions, annotations, deletions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.clients.api import MERGE_PATCH, STRATEGIC_MERGE_PATCH, KubeApi


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


async def bind(api: KubeApi, namespace: str, name: str, uid: str, node: str) -> None:
    """POSTs a Binding. The uid makes the API server refuse a different pod of the same name."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    await api.request("POST", _pod_path(namespace, name) + "/binding", body=body)


async def patch_condition(
    api: KubeApi,
    namespace: str,
    name: str,
    condition: dict[str, Any],
    *,
    nominated_node: str | None = None,
) -> None:
    """Sets one status condition (merged by its type), optionally with nominatedNodeName."""
    status: dict[str, Any] = {"conditions": [condition]}
    if nominated_node is not None:
        status["nominatedNodeName"] = nominated_node or None
    await api.request(
        "PATCH",
        _pod_path(namespace, name) + "/status",
        body={"status": status},
        content_type=STRATEGIC_MERGE_PATCH,
    )


async def patch_annotations(
    api: KubeApi, namespace: str, name: str, annotations: Mapping[str, str | None]
) -> None:
    await api.request(
        "PATCH",
        _pod_path(namespace, name),
        body={"metadata": {"annotations": annotations}},
        content_type=MERGE_PATCH,
    )


async def delete(
    api: KubeApi, namespace: str, name: str, uid: str, grace_seconds: int | None = None
) -> None:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": uid},
    }
    if grace_seconds is not None:
        body["gracePeriodSeconds"] = grace_seconds
    await api.request("DELETE", _pod_path(namespace, name), body=body)


async def get(api: KubeApi, namespace: str, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = await api.request("GET", _pod_path(namespace, name))
    return pod
