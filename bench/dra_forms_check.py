"""The verdict of ``dra-forms``, from the API server's objects alone, by the rules of the API
(the objects read with the official ``kubernetes`` client, as ``bench.dra_check`` reads them;
nothing of koordgang's). A run passes when:

- every pod of the scenario is bound, and so every gang is whole;
- every claim a pod names is allocated, each request given as many devices as it asks for, of
  its class (a partition, a channel of the fabric), each device published: node-local devices
  in the pool of the pod's node, channels in the fabric pool; the allocation's node selector
  selects the pod's node;
- a pod asking for the extended resource has its claim in ``status.extendedResourceClaimStatus``:
  made for it (the ``resource.kubernetes.io/extended-resource-claim`` annotation, owned by the
  pod), with a request for its container's resource, allocated whole GPUs of its node;
- a claim is reserved for exactly its pod, or, shared by a gang: for the gang's upstream
  PodGroup (one entry, ``scheduling.k8s.io`` ``podgroups``, its name and uid) when the PodGroup
  names it, for exactly the gang's pods otherwise; each allocated claim carries the
  delete-protection finalizer;
- no device is allocated to two claims, and no GPU's counter set gives more memory than it has
  (a whole GPU and a partition of it, or more partitions than fit).
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.dra_check import (
    Objects,
    _allocated,
    _list,
    _meta,
    _Problems,
    _results,
    _selected_nodes,
    bound_nodes,
)
from bench.dra_check import read as read_objects
from bench.dra_forms import (
    DRIVER,
    EXTENDED_RESOURCE,
    FABRIC_DRIVER,
)
from bench.gang_api import UPSTREAM_API_VERSION, UPSTREAM_POD_FIELD
from bench.workload import Workload
from controlplane.kubeconfig import api_client_from

EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
#: The profile attribute of the devices each class of the scenario selects.
PROFILE_OF_ENTRY = {"part": "part"}


@dataclass(frozen=True)
class FormsObjects:
    base: Objects
    #: Upstream PodGroups of the namespace (none when the API is not served).
    podgroups: Sequence[Mapping[str, Any]]


def read(kubeconfig: Path, namespace: str) -> FormsObjects:
    base = read_objects(kubeconfig, namespace)
    path = f"/apis/{UPSTREAM_API_VERSION}/namespaces/{namespace}/podgroups"
    try:
        with api_client_from(kubeconfig) as api:
            groups = _list(api, path)
    except RuntimeError:  # not served on this plane
        groups = []
    return FormsObjects(base, groups)


async def read_and_check(kubeconfig: Path, namespace: str, workload: Workload) -> list[str]:
    objects = await asyncio.to_thread(read, kubeconfig, namespace)
    expected = {p.name for p in workload.pods}
    return check(objects, namespace, expected, workload.members)


# -- quantities and devices ------------------------------------------------------------------

_SUFFIX = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6}


def quantity(text: str) -> int:
    """A resource quantity in bytes (or units): the binary and decimal suffixes the scenario's
    counters are written with."""
    match = re.fullmatch(r"(\d+)([A-Za-z]*)", str(text).strip())
    if match is None or match.group(2) not in _SUFFIX:
        raise ValueError(f"unreadable quantity {text!r}")
    return int(match.group(1)) * _SUFFIX[match.group(2)]


@dataclass(frozen=True)
class Device:
    node: str  # "" for the network-attached pool
    profile: str
    #: Counter set -> memory it draws.
    draws: Mapping[str, int]


@dataclass(frozen=True)
class Published:
    #: (driver, pool, device) -> the device.
    devices: Mapping[tuple[str, str, str], Device]
    #: (driver, pool, counter set) -> memory it has.
    counters: Mapping[tuple[str, str, str], int]


def published(slices: Iterable[Mapping[str, Any]]) -> Published:
    devices: dict[tuple[str, str, str], Device] = {}
    counters: dict[tuple[str, str, str], int] = {}
    for piece in slices:
        spec = piece.get("spec") or {}
        driver = spec.get("driver", "")
        pool = (spec.get("pool") or {}).get("name", "")
        node = spec.get("nodeName") or ""
        for counter_set in spec.get("sharedCounters") or []:
            memory = ((counter_set.get("counters") or {}).get("memory") or {}).get("value")
            counters[(driver, pool, counter_set.get("name", ""))] = quantity(memory or "0")
        for device in spec.get("devices") or []:
            attributes = device.get("attributes") or {}
            profile = (attributes.get("profile") or {}).get("string", "")
            draws: dict[str, int] = {}
            for use in device.get("consumesCounters") or []:
                memory = ((use.get("counters") or {}).get("memory") or {}).get("value")
                draws[use.get("counterSet", "")] = quantity(memory or "0")
            devices[(driver, pool, device.get("name", ""))] = Device(node, profile, draws)
    return Published(devices, counters)


# -- judging ---------------------------------------------------------------------------------


def check(
    objects: FormsObjects,
    namespace: str,
    expected: Iterable[str],
    members: Mapping[str, Sequence[str]],
) -> list[str]:
    problems = _Problems()
    base = objects.base
    pods = {_meta(p).get("name", ""): p for p in base.pods}
    node_of = bound_nodes(problems, pods, expected, members)
    nodes = {_meta(n).get("name", ""): n for n in base.nodes}
    devices = published(base.slices)
    claims = {(_meta(c).get("namespace", ""), _meta(c).get("name", "")): c for c in base.claims}
    groups = {_meta(g).get("name", ""): g for g in objects.podgroups}
    users: dict[str, list[str]] = defaultdict(list)  # claim -> the pods naming it
    for name, pod in pods.items():
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            if entry.get("resourceClaimName"):
                users[entry["resourceClaimName"]].append(name)

    context = _Context(namespace, nodes, devices, claims, groups, pods, users)
    for name in sorted(expected):
        if node_of.get(name):
            _check_pod(problems, pods[name], node_of[name], context)

    _check_devices(problems, claims.values(), devices)
    return problems.lines()


@dataclass(frozen=True)
class _Context:
    namespace: str
    nodes: Mapping[str, Mapping[str, Any]]
    devices: Published
    claims: Mapping[tuple[str, str], Mapping[str, Any]]
    groups: Mapping[str, Mapping[str, Any]]
    pods: Mapping[str, Mapping[str, Any]]
    #: Claim name -> the pods naming it.
    users: Mapping[str, Sequence[str]]


def _check_pod(problems: _Problems, pod: Mapping[str, Any], node: str, ctx: _Context) -> None:
    name = _meta(pod).get("name", "")
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        claim_name = entry.get("resourceClaimName") or ""
        claim = ctx.claims.get((ctx.namespace, claim_name))
        if claim is None:
            problems.add("claims missing", f"{name}: {claim_name or entry}")
            continue
        profile = PROFILE_OF_ENTRY.get(entry.get("name", ""), "")
        _check_allocation(problems, claim, node, 1, profile, ctx.devices, ctx.nodes)
        wanted = _wanted_reservation(
            pod, entry.get("name", ""), claim_name, ctx.groups, ctx.pods, ctx.users
        )
        _check_reservation(problems, claim, wanted)
    _check_extended(problems, pod, node, ctx.claims, ctx.namespace, ctx.devices, ctx.nodes)


def _check_allocation(
    problems: _Problems,
    claim: Mapping[str, Any],
    node: str,
    count: int,
    profile: str,
    devices: Published,
    nodes: Mapping[str, Mapping[str, Any]],
) -> None:
    """``profile``: the GPU profile each device must have ("" for a fabric channel)."""
    name = _meta(claim).get("name", "")
    found = _allocated(problems, claim, count)
    if found is None:
        return
    allocation, results = found
    for result in results:
        key = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
        where = f"{name}: {'/'.join(key)} for node {node}"
        device = devices.devices.get(key)
        if device is None:
            problems.add("devices not published", where)
            continue
        wanted_driver = DRIVER if profile else FABRIC_DRIVER
        if key[0] != wanted_driver or device.profile != profile:
            problems.add("devices of another class", f"{where} ({device.profile or key[0]})")
        if device.node and device.node != node:
            problems.add("devices not on their pod's node", f"{where} (on {device.node!r})")
    if node not in _selected_nodes(allocation.get("nodeSelector"), nodes, node):
        problems.add("allocations not selecting their pod's node", f"{name} -> {node}")


Reservation = tuple[str, str, str, str]


def _wanted_reservation(
    pod: Mapping[str, Any],
    entry: str,
    claim_name: str,
    groups: Mapping[str, Mapping[str, Any]],
    pods: Mapping[str, Mapping[str, Any]],
    users: Mapping[str, Sequence[str]],
) -> set[Reservation]:
    """The ``reservedFor`` entries the claim must have: its upstream PodGroup when that names
    the claim under the same entry, else every pod naming it."""
    group_name = ((pod.get("spec") or {}).get(UPSTREAM_POD_FIELD) or {}).get("podGroupName")
    group = groups.get(group_name or "")
    if group is not None:
        for named in (group.get("spec") or {}).get("resourceClaims") or []:
            if named.get("name") == entry and named.get("resourceClaimName") == claim_name:
                meta = _meta(group)
                return {
                    ("scheduling.k8s.io", "podgroups", meta.get("name", ""), meta.get("uid", ""))
                }
    return {("", "pods", n, _meta(pods[n]).get("uid", "")) for n in users.get(claim_name, ()) if n}


def _check_reservation(
    problems: _Problems, claim: Mapping[str, Any], wanted: set[Reservation]
) -> None:
    reserved = [
        (r.get("apiGroup") or "", r.get("resource"), r.get("name"), r.get("uid"))
        for r in (claim.get("status") or {}).get("reservedFor") or []
    ]
    if len(reserved) != len(set(reserved)) or set(reserved) != wanted:
        name = _meta(claim).get("name", "")
        shown = sorted(wanted)[:2]
        problems.add("claims not reserved as they must be", f"{name} {reserved[:2]} != {shown}")


def _check_extended(
    problems: _Problems,
    pod: Mapping[str, Any],
    node: str,
    claims: Mapping[tuple[str, str], Mapping[str, Any]],
    namespace: str,
    devices: Published,
    nodes: Mapping[str, Mapping[str, Any]],
) -> None:
    meta = _meta(pod)
    name = meta.get("name", "")
    asked = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        asked += int(requests.get(EXTENDED_RESOURCE, 0))
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    if not asked:
        if status:
            problems.add("extended-resource claims for pods not asking", name)
        return
    claim_name = status.get("resourceClaimName") or ""
    claim = claims.get((namespace, claim_name))
    if claim is None:
        problems.add("pods without their extended-resource claim", f"{name} ({claim_name!r})")
        return
    claim_meta = _meta(claim)
    if (claim_meta.get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) != "true":
        problems.add(f"extended-resource claims without {EXTENDED_CLAIM_ANNOTATION}", claim_name)
    owners = [o.get("uid") for o in claim_meta.get("ownerReferences") or []]
    if owners != [meta.get("uid")]:
        problems.add("extended-resource claims not owned by their pod", claim_name)
    requests = {
        r.get("name") for r in (claim.get("spec") or {}).get("devices", {}).get("requests") or []
    }
    mapped = [
        m
        for m in status.get("requestMappings") or []
        if m.get("resourceName") == EXTENDED_RESOURCE and m.get("requestName") in requests
    ]
    if not mapped:
        problems.add("extended resources not mapped to a request of their claim", name)
    _check_allocation(problems, claim, node, asked, "whole", devices, nodes)
    _check_reservation(problems, claim, {("", "pods", name, meta.get("uid", ""))})


def _check_devices(
    problems: _Problems, claims: Iterable[Mapping[str, Any]], devices: Published
) -> None:
    holders: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for claim in claims:
        for result in _results(claim):
            key = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
            holders[key].append(_meta(claim).get("name", ""))
    drawn: dict[tuple[str, str, str], int] = defaultdict(int)
    for key, owners in sorted(holders.items()):
        if len(owners) > 1:
            problems.add("devices allocated to more than one claim", f"{'/'.join(key)} {owners}")
        device = devices.devices.get(key)
        for counter_set, memory in (device.draws if device else {}).items():
            drawn[(key[0], key[1], counter_set)] += memory * len(owners)
    for key, memory in sorted(drawn.items()):
        has = devices.counters.get(key)
        if has is None:
            problems.add("devices drawing on unpublished counters", "/".join(key))
        elif memory > has:
            problems.add(
                "counter sets overdrawn", f"{'/'.join(key)} {memory >> 30}Gi of {has >> 30}Gi"
            )
