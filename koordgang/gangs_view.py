"""`koordgang gangs`: the gangs a running daemon knows, as a table for people. Upstream
PodGroups of the ``basic`` policy (not gangs) are listed only when asked for (``--all``), and
read ``basic`` in the MODE column."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Collection, Sequence
from typing import Any

COLUMNS = (
    "GANG",
    "API",
    "GROUP",
    "MODE",
    "MIN",
    "CREATED",
    "PLACED",
    "BOUND",
    "STATE",
    "DOMAIN",
    "DEVICES",
    "EXPECTED START",
    "WAITING FOR",
)


class ViewError(Exception):
    pass


def fetch(url: str, timeout: float = 10.0, *, with_basic: bool = False) -> list[dict[str, Any]]:
    path = "/gangs?all=true" if with_basic else "/gangs"
    try:
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=timeout) as reply:
            body = json.loads(reply.read())
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise ViewError(
            f"cannot read {url}/gangs: {error} (is the daemon running? In a cluster: "
            "kubectl -n koordgang-system port-forward deploy/koordgang 10251)"
        ) from error
    gangs = body.get("gangs") if isinstance(body, dict) else None
    if not isinstance(gangs, list):
        raise ViewError(f"{url}/gangs did not answer with a list of gangs")
    return gangs


def from_cluster(
    kubeconfig: str | None = None,
    scheduler_names: Collection[str] = ("koord-scheduler",),
    *,
    with_basic: bool = False,
) -> list[dict[str, Any]]:
    """The same rows, built from the API server instead of a daemon: PodGroups and pods are
    listed and their gangs worked out as the daemon does after a restart; a gang that waits
    shows the explanation its pending members carry (their PodScheduled message). Works
    wherever kubectl works (the kubeconfig's rights to list pods and PodGroups suffice)."""
    from koordgang.adapters.discovery import resolve_versions
    from koordgang.clients import custom
    from koordgang.clients.api import KubeApi
    from koordgang.clients.config import ConfigError, load_connection
    from koordgang.clients.errors import ApiError, ApiUnavailable
    from koordgang.gangapis import GANG_APIS, Resolve
    from koordgang.model.dra import API_VERSION as DRA_API_VERSION
    from koordgang.model.dra import parse_resource_claim
    from koordgang.model.errors import ModelError
    from koordgang.model.pod import parse_pod
    from koordgang.state.cache import SchedulerCache
    from koordgang.state.dra import DraManager
    from koordgang.state.gang_rows import BASIC, FINISHED, gang_rows
    from koordgang.state.gangs import GangRegistry

    try:
        connection = load_connection(kubeconfig or "")
    except ConfigError as error:
        raise ViewError(str(error)) from None

    async def read() -> tuple[
        list[dict[str, Any]], list[tuple[Any, list[dict[str, Any]]]], list[dict[str, Any]]
    ]:
        api = KubeApi(connection, pool_size=2, user_agent="koordgang-gangs")
        try:
            pods = await custom.list_all(api, "/api/v1/pods")
            try:
                # The devices members got (a cluster without DRA, or a kubeconfig that may not
                # read claims, shows none).
                claims = await custom.list_all(api, f"/apis/{DRA_API_VERSION}/resourceclaims")
            except ApiError:
                claims = []
            groups = []
            for gang_api in GANG_APIS:
                if gang_api.resource is None:
                    continue
                (resource,) = await resolve_versions(api, [gang_api.resource])
                try:
                    items = await custom.list_all(api, resource.path)
                except ApiError as error:
                    if not error.not_found:  # each API's group objects are optional
                        raise
                    items = []
                groups.append((gang_api, items))
            return pods, groups, claims
        finally:
            await api.close()

    try:
        pods, groups, claims = asyncio.run(read())
    except (ApiError, ApiUnavailable) as error:
        raise ViewError(f"cannot list pods and PodGroups: {error}") from None
    registry = GangRegistry(600.0, resolve=Resolve(GANG_APIS))
    dra = DraManager()
    cache = SchedulerCache(extensions=(dra,))
    for obj in claims:
        try:
            dra.upsert_claim(parse_resource_claim(obj))
        except ModelError:
            continue
    for gang_api, items in groups:
        for obj in items:
            registry.on_podgroup(gang_api.parse(obj))
    pending_says: dict[str, str] = {}
    for obj in pods:
        try:
            pod = parse_pod(obj)
        except ModelError:
            continue
        if pod.scheduler_name not in scheduler_names:
            continue
        cache.upsert_pod(pod)
        gang = registry.on_pod(pod)
        condition = pod.conditions_pod_scheduled
        if gang is not None and not pod.node_name and condition and condition[2]:
            pending_says.setdefault(gang.key, condition[2])
    rows = gang_rows(registry, cache, dra, with_basic=with_basic)
    for row in rows:
        waits = row["state"] not in ("Satisfied", FINISHED) and row["mode"] != BASIC
        if waits and not row["waitingFor"]:
            row["waitingFor"] = pending_says.get(row["gang"], "")
    return rows


def _row(gang: dict[str, Any]) -> tuple[str, ...]:
    own = gang.get("gang", "")
    partners = [g for g in gang.get("group") or () if g != own]
    return (
        str(own),
        str(gang.get("api") or "-"),
        ",".join(partners) or "-",
        str(gang.get("mode", "")),
        _minimum(gang),
        str(gang.get("created", 0)),
        str(gang.get("placed", 0)),
        str(gang.get("bound", 0)),
        str(gang.get("state", "")),
        str(gang.get("domain") or "-"),
        _device_count(gang.get("devices")),
        _expected_start(gang),
        str(gang.get("waitingFor") or "-"),
    )


def _minimum(gang: dict[str, Any]) -> str:
    """The gang's minimum; "?" when its declaration is unusable, "-" for a group that is not a
    gang (it has none)."""
    if gang.get("mode") == "basic":
        return "-"
    minimum = gang.get("minAvailable")
    return "?" if minimum is None else str(minimum)


def _device_count(devices: Any) -> str:
    """How many devices the members got, on how many nodes (``8 on 4 nodes``); the JSON
    (``--output json``) lists them. A device that members share (their PodGroup's claim, a
    claim they all name) counts once."""
    if not isinstance(devices, dict) or not devices:
        return "-"
    entries = [entry for found in devices.values() if isinstance(found, list) for entry in found]
    nodes = {str(entry).split(":", 1)[0] for entry in entries}
    where = "1 node" if len(nodes) == 1 else f"{len(nodes)} nodes"
    given = {str(entry).split(": ", 1)[-1] for entry in entries}
    return f"{len(given)} on {where}"


def _expected_start(gang: dict[str, Any]) -> str:
    """When a gang waiting for room starts if time limits hold (``14:20 UTC``, with the day
    when not today); ``none`` when room it needs is held without a limit; ``-`` when no
    estimate is made (it does not wait for room)."""
    from koordgang.model.errors import ModelError
    from koordgang.model.time import parse_rfc3339
    from koordgang.plugins.starttimes.messages import clock

    if "expectedStart" not in gang:
        return "-"
    start = gang["expectedStart"]
    if not isinstance(start, str):
        return "none"
    try:
        return clock(parse_rfc3339(start), time.time())
    except ModelError:
        return "?"


def render_table(gangs: Sequence[dict[str, Any]]) -> str:
    rows = [COLUMNS, *(_row(g) for g in gangs)]
    # The last column (the explanation) is not padded: it may be long.
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    if not gangs:
        lines.append("(no gangs)")
    return "\n".join(lines)
