"""Reads for a what-if, all of them GET requests: the PriorityClasses the file's pods name, and
(for ``--from-cluster``) the state a daemon would hold, listed from the API server.

A cluster read this way knows what the API server knows: no placement the daemon holds for a
gang still short (those are in the daemon's memory only) and no nomination beyond the pods'
``status.nominatedNodeName``.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from koordgang.clients import custom
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.engine.kinds import KINDS
from koordgang.framework.report import WatchedResource
from koordgang.model.errors import ModelError
from koordgang.model.group_key import ALONE
from koordgang.model.node import parse_node
from koordgang.model.pod import parse_pod
from koordgang.state.in_flight import InFlight
from koordgang.state.nominations import Nominations
from koordgang.state.stores import Stores
from koordgang.whatif.fork import DaemonState
from koordgang.whatif.inputs import WhatIfError, priorities_of

PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


async def read_priorities(api: KubeApi, needed: set[str]) -> tuple[dict[str, int], str]:
    """PriorityClass name -> value ("" -> the global default's), and a warning when they could
    not be read. Raises :class:`WhatIfError` when a class the pods name cannot be looked up."""
    try:
        classes = await custom.list_all(api, PRIORITY_CLASSES)
    except (ApiError, ApiUnavailable) as error:
        if needed:
            names = ", ".join(sorted(needed))
            raise WhatIfError(
                f"spec.priorityClassName: cannot read PriorityClass {names}: {error}"
            ) from None
        return {}, f"PriorityClasses not read ({error}): pods without a priority count as 0"
    return priorities_of(classes), ""


@dataclass(slots=True)
class ClusterState:
    state: DaemonState
    #: What was not read (a kind the API server does not serve, or the reader may not list).
    skipped: list[str] = field(default_factory=list)


async def read_cluster(
    api: KubeApi,
    watched: Sequence[WatchedResource],
    scheduler_names: Collection[str],
    others_in_flight_for: float = 0.0,
) -> ClusterState:
    """Nodes, pods, and every watched kind, listed as the daemon's informers list them at
    start; namespaces, claims and disruption budgets too when the reader may list them. Pods
    of other schedulers not tried yet count where they are likely to go, as in the daemon,
    for ``others_in_flight_for`` seconds after their creation (0: nowhere)."""
    skipped: list[str] = []
    stores = Stores()
    in_flight = InFlight(others_in_flight_for, time.time) if others_in_flight_for > 0 else None
    cache = stores.new_cache(scheduler_names, in_flight)
    nominations = Nominations()
    for obj in await custom.list_all(api, "/api/v1/nodes"):
        try:
            cache.upsert_node(parse_node(obj))
        except ModelError:
            continue
    for obj in await custom.list_all(api, "/api/v1/pods"):
        try:
            pod = parse_pod(obj)
        except ModelError:
            continue
        cache.upsert_pod(pod)
        nominated = pod.nominated_node_name
        if (
            nominated
            and pod.scheduler_name in scheduler_names
            and not pod.node_name
            and cache.node(nominated) is not None
        ):
            # As the daemon does after a restart: the room preemption made stays held.
            cache.assume(pod, nominated)
            nominations.add(pod, nominated, ALONE)
    # The other kinds the daemon watches (namespaces, volume claims, disruption budgets,
    # devices), into their stores as its intake keeps them.
    for kind in KINDS:
        if kind.store is None:
            continue  # nodes and pods: above
        store = kind.store(stores)
        for obj in await _optional(api, kind.path, skipped):
            try:
                parsed = kind.parse(obj)
            except ModelError:
                continue
            cache.touch_nodes(store.upsert(parsed))
    objects: list[tuple[str, Mapping[str, Any]]] = []
    for resource in watched:
        for obj in await _optional(api, resource.path, skipped):
            objects.append((resource.id, obj))
    return ClusterState(DaemonState(cache, stores, objects, nominations=nominations), skipped)


async def _optional(api: KubeApi, path: str, skipped: list[str]) -> list[dict[str, Any]]:
    """A listing the what-if can do without: a kind not served (404) or not allowed (403) is
    noted and skipped."""
    try:
        return await custom.list_all(api, path)
    except ApiError as error:
        if error.not_found or error.status == 403:
            skipped.append(f"{path} ({error.status})")
            return []
        raise
