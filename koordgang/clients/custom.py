"""Writes to custom resources (PodGroups, ClusterNetworkTopologies)."""

from __future__ import annotations

from typing import Any

from koordgang.clients.api import MERGE_PATCH, KubeApi


def object_path(api_version: str, plural: str, namespace: str, name: str) -> str:
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"/apis/{api_version}{scope}/{plural}/{name}"


async def patch_status(
    api: KubeApi, api_version: str, plural: str, namespace: str, name: str, status: dict[str, Any]
) -> None:
    """Merges ``status`` into the object's status subresource."""
    await api.request(
        "PATCH",
        object_path(api_version, plural, namespace, name) + "/status",
        body={"status": status},
        content_type=MERGE_PATCH,
    )
