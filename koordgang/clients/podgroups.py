"""PodGroup status writes (``scheduling.sigs.k8s.io/v1alpha1``, through the status subresource)."""

from __future__ import annotations

from typing import Any

from koordgang.clients.api import MERGE_PATCH, KubeApi

GROUP_VERSION = "scheduling.sigs.k8s.io/v1alpha1"


async def patch_status(api: KubeApi, namespace: str, name: str, status: dict[str, Any]) -> None:
    await api.request(
        "PATCH",
        f"/apis/{GROUP_VERSION}/namespaces/{namespace}/podgroups/{name}/status",
        body={"status": status},
        content_type=MERGE_PATCH,
    )
