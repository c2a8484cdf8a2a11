"""Events, as ``kubectl describe`` shows them."""

from __future__ import annotations

import datetime as dt
import secrets

from koordgang.clients.api import KubeApi
from koordgang.model.objects import ObjectRef


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def create_event(
    api: KubeApi,
    obj: ObjectRef,
    *,
    type_: str,
    reason: str,
    message: str,
    component: str,
    action: str = "Scheduling",
) -> None:
    namespace = obj.namespace or "default"
    now = _now()
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{obj.name}.{secrets.token_hex(8)}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": obj.api_version,
            "kind": obj.kind,
            "namespace": obj.namespace,
            "name": obj.name,
            "uid": obj.uid,
        },
        "reason": reason,
        "message": message[:1024],
        "type": type_,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": component,
        "action": action,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    await api.request("POST", f"/api/v1/namespaces/{namespace}/events", body=body)
