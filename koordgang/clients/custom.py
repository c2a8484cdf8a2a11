"""Reads and writes of custom resources (PodGroups, ClusterNetworkTopologies), patches of any
object guarded by its resourceVersion (what PreBind writes), and one-shot listings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordgang.clients.api import MERGE_PATCH, KubeApi


def object_path(api_version: str, plural: str, namespace: str, name: str) -> str:
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"/apis/{api_version}{scope}/{plural}/{name}"


async def patch_status(
    api: KubeApi,
    api_version: str,
    plural: str,
    namespace: str,
    name: str,
    status: dict[str, Any],
    *,
    subresource: bool = True,
) -> None:
    """Merges ``status`` into the object's status subresource (or, for a kind without one,
    into the object itself)."""
    path = object_path(api_version, plural, namespace, name)
    await api.request(
        "PATCH",
        path + "/status" if subresource else path,
        body={"status": status},
        content_type=MERGE_PATCH,
    )


async def list_all(api: KubeApi, path: str, page: int = 500) -> list[dict[str, Any]]:
    """Every item of a collection, page by page (a plain GET, not a watch). Each item carries
    the ``apiVersion`` it was read in: the API server leaves it out of the items of built-in
    kinds, and a reader of several versions of one kind needs it."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        params = {"limit": str(page)}
        if token:
            params["continue"] = token
        reply = await api.request("GET", path, params=params)
        version = reply.get("apiVersion")
        for item in reply.get("items") or []:
            if isinstance(version, str) and isinstance(item, dict):
                item.setdefault("apiVersion", version)
            items.append(item)
        token = (reply.get("metadata") or {}).get("continue") or ""
        if not token:
            return items


async def patch_guarded(
    api: KubeApi,
    path: str,
    patch: Mapping[str, Any],
    resource_version: str,
    *,
    subresource: str = "",
) -> str:
    """Merges ``patch`` into the object at ``path`` (or its ``subresource``) only if the object
    is still at ``resource_version`` (the API server answers 409 otherwise); returns the
    object's new ``resourceVersion``."""
    body = dict(patch)
    metadata = dict(body.get("metadata") or {})
    if resource_version:
        metadata["resourceVersion"] = resource_version
    body["metadata"] = metadata
    reply = await api.request(
        "PATCH",
        f"{path}/{subresource}" if subresource else path,
        body=body,
        content_type=MERGE_PATCH,
    )
    meta = reply.get("metadata") if isinstance(reply, dict) else None
    return str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
