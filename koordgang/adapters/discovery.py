"""Which version of each watched kind the API server serves, asked once at start.

A kind can be read in more than one version (upstream's PodGroup: ``v1beta1`` on Kubernetes
1.37, ``v1alpha2`` on 1.36, which 1.37 no longer serves). The daemon, the gang view and the
what-if all watch or list each kind at the best version served; a kind whose group is not
served at all keeps its preferred version (kopf watches it once its CRD appears)."""

from __future__ import annotations

from collections.abc import Sequence

from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.framework.report import WatchedResource


async def served_versions(api: KubeApi, group: str) -> set[str] | None:
    """The versions the API server serves for ``group`` (empty when it serves none); None when
    it could not be asked (the caller keeps its preference)."""
    path = f"/apis/{group}" if group else "/api"
    try:
        reply = await api.request("GET", path)
    except ApiError as error:
        return set() if error.not_found else None
    except ApiUnavailable:
        return None
    if not group:
        return {v for v in reply.get("versions") or [] if isinstance(v, str)}
    versions = reply.get("versions") or []
    return {v["version"] for v in versions if isinstance(v, dict) and "version" in v}


async def resolve_versions(
    api: KubeApi,
    resources: Sequence[WatchedResource],
    keep: Sequence[WatchedResource] | None = None,
) -> list[WatchedResource]:
    """``resources`` at the version each is served in; kinds read in one version only are
    returned as they are (kopf and the listings find out themselves whether they are served).
    Where the API server cannot be asked, a kind keeps its version in ``keep`` (the answer of
    an earlier call, in the same order), else its preferred one."""
    asked: dict[str, set[str] | None] = {}
    resolved = []
    for index, resource in enumerate(resources):
        if not resource.older_versions:
            resolved.append(resource)
            continue
        if resource.group not in asked:
            asked[resource.group] = await served_versions(api, resource.group)
        served = asked[resource.group]
        chosen = resource.served_as(served) if served is not None else None
        if chosen is None and served is None and keep is not None:
            chosen = keep[index]
        if chosen is None:
            chosen = resource.served_as({resource.version})
            assert chosen is not None
        resolved.append(chosen)
    return resolved
