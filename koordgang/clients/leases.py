"""The leader-election Lease (coordination.k8s.io/v1): read, create, replace."""

from __future__ import annotations

from typing import Any

from koordgang.clients.api import KubeApi


def _leases_path(namespace: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


async def get_lease(api: KubeApi, namespace: str, name: str, timeout: float) -> Any:
    return await api.request("GET", f"{_leases_path(namespace)}/{name}", timeout=timeout)


async def create_lease(
    api: KubeApi, namespace: str, name: str, spec: dict[str, Any], timeout: float
) -> None:
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    await api.request("POST", _leases_path(namespace), body=body, timeout=timeout)


async def replace_lease(
    api: KubeApi, namespace: str, name: str, lease: dict[str, Any], timeout: float
) -> None:
    """PUT of a Lease read before: its resourceVersion makes a concurrent update fail."""
    await api.request("PUT", f"{_leases_path(namespace)}/{name}", body=lease, timeout=timeout)
