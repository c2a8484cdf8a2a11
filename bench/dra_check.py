"""The DRA scenario's verdict, from the API server's objects alone.

It shares no code with koordgang: the objects are read back with the official ``kubernetes``
client (not koordgang's), and judged here on their JSON, by the rules of the API (not by
koordgang's parsers, ledger or allocator). A run passes when:

- every pod of the scenario is bound, and so every gang is whole;
- every pod's claim is allocated: as many devices as it asks for, each a device of the
  bench's driver published in the ResourceSlice of the pod's node (the pool named after it),
  with an allocation node selector that selects the pod's node and no other;
- every such claim is reserved for its pod and no one else (``status.reservedFor``: the pod's
  name and uid), and carries the delete-protection finalizer a scheduler writes with the
  allocation;
- no device is allocated to two claims, among every claim of the cluster.

A run that fails this check is reported as failed, and its rates are withheld (``withhold``).
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.dra import CLAIM_FINALIZER, DRIVER, REQUEST, expected_claims
from bench.results import ScenarioResult
from bench.workload import Workload
from controlplane.kubeconfig import api_client_from

API = "/apis/resource.k8s.io/v1"
#: Examples quoted per kind of problem.
SAMPLES = 5
PAGE = 500


@dataclass(frozen=True)
class Objects:
    """What the check reads: the scenario's pods, and the cluster's claims, slices and nodes."""

    pods: Sequence[Mapping[str, Any]]
    claims: Sequence[Mapping[str, Any]]
    slices: Sequence[Mapping[str, Any]]
    nodes: Sequence[Mapping[str, Any]]


# -- reading ---------------------------------------------------------------------------------


def read(kubeconfig: Path, namespace: str) -> Objects:
    """Lists, paginated, with the ``kubernetes`` client (blocking: run it in a thread)."""
    with api_client_from(kubeconfig) as api:
        return Objects(
            pods=_list(api, f"/api/v1/namespaces/{namespace}/pods"),
            claims=_list(api, f"{API}/resourceclaims"),
            slices=_list(api, f"{API}/resourceslices"),
            nodes=_list(api, "/api/v1/nodes"),
        )


def _list(api: Any, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cont = ""
    while True:
        query: list[tuple[str, str]] = [("limit", str(PAGE))]
        if cont:
            query.append(("continue", cont))
        method, url, headers, _, _ = api.param_serialize(
            "GET",
            path,
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = api.call_api(method, url, headers, _request_timeout=60)
        data = response.read()
        if response.status >= 400:
            raise RuntimeError(f"GET {path}: {response.status} {data[:200]!r}")
        page = json.loads(data)
        items += page.get("items") or []
        cont = (page.get("metadata") or {}).get("continue") or ""
        if not cont:
            return items


async def read_and_check(kubeconfig: Path, namespace: str, workload: Workload) -> list[str]:
    """The problems of the run in ``namespace`` (empty: it passed)."""
    if workload.dra is None:
        return []
    objects = await asyncio.to_thread(read, kubeconfig, namespace)
    return check(objects, namespace, expected_claims(workload.pods, workload.dra), workload.members)


# -- judging ---------------------------------------------------------------------------------


class _Problems:
    """Problems by kind, each counted and quoted a few times."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[str]] = defaultdict(list)

    def add(self, kind: str, example: str) -> None:
        self.by_kind[kind].append(example)

    def lines(self) -> list[str]:
        return [
            f"DRA: {len(examples)} {kind}: {', '.join(examples[:SAMPLES])}"
            + (" ..." if len(examples) > SAMPLES else "")
            for kind, examples in self.by_kind.items()
        ]


def check(
    objects: Objects,
    namespace: str,
    expected: Mapping[str, tuple[str, int]],
    members: Mapping[str, Sequence[str]],
) -> list[str]:
    """``expected``: pod name -> (its claim's name, devices asked); ``members``: gang name ->
    its pods' names."""
    problems = _Problems()
    pods = {_meta(p).get("name", ""): p for p in objects.pods}
    node_of = bound_nodes(problems, pods, expected, members)
    nodes = {_meta(n).get("name", ""): n for n in objects.nodes}
    published = _published(objects.slices)
    claims = {(_meta(c).get("namespace", ""), _meta(c).get("name", "")): c for c in objects.claims}
    for pod_name, (claim_name, wanted) in sorted(expected.items()):
        node = node_of.get(pod_name, "")
        if not node:
            continue  # counted above
        claim = claims.get((namespace, claim_name))
        if claim is None:
            problems.add("claims missing", claim_name)
            continue
        _check_claim(problems, claim, pods[pod_name], node, wanted, published, nodes)

    holders: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for (ns, name), claim in claims.items():
        for result in _results(claim):
            device = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
            holders[device].append(f"{ns}/{name}")
    for device, owners in sorted(holders.items()):
        if len(owners) > 1:
            problems.add(
                "devices allocated to more than one claim", f"{'/'.join(device)} ({owners})"
            )
    return problems.lines()


def bound_nodes(
    problems: _Problems,
    pods: Mapping[str, Mapping[str, Any]],
    expected: Iterable[str],
    members: Mapping[str, Sequence[str]],
) -> dict[str, str]:
    """Each pod's node ("" when unbound); the ``expected`` pods missing or unbound, and the
    gangs not whole, added to ``problems``."""
    node_of = {name: (p.get("spec") or {}).get("nodeName") or "" for name, p in pods.items()}
    for name in sorted(expected):
        if name not in pods:
            problems.add("pods missing", name)
        elif not node_of[name]:
            problems.add("pods not bound", name)
    for gang, names in sorted(members.items()):
        bound = sum(1 for n in names if node_of.get(n))
        if bound != len(names):
            problems.add("gangs not whole (bound/size)", f"{gang} {bound}/{len(names)}")
    return node_of


def _check_claim(
    problems: _Problems,
    claim: Mapping[str, Any],
    pod: Mapping[str, Any],
    node: str,
    wanted: int,
    published: Mapping[tuple[str, str], tuple[str, frozenset[str]]],
    nodes: Mapping[str, Mapping[str, Any]],
) -> None:
    name = _meta(claim).get("name", "")
    status = claim.get("status") or {}
    found = _allocated(problems, claim, wanted)
    if found is None:
        return
    allocation, results = found
    for result in results:
        driver, pool, device = (result.get(k, "") for k in ("driver", "pool", "device"))
        where = f"{name}: {driver}/{pool}/{device} for node {node}"
        if result.get("request") != REQUEST:
            problems.add("devices for an unknown request", f"{where} ({result.get('request')})")
        if driver != DRIVER:
            problems.add("devices of another driver", where)
            continue
        slice_node, devices = published.get((driver, pool), ("", frozenset()))
        if slice_node != node:
            problems.add("devices not on their pod's node", f"{where} (pool on {slice_node!r})")
        elif device not in devices:
            problems.add("devices not published", where)
    selected = _selected_nodes(allocation.get("nodeSelector"), nodes, node)
    if selected != [node]:
        shown = selected[:3] + (["..."] if len(selected) > 3 else [])
        problems.add("allocations not selecting exactly their pod's node", f"{name} -> {shown}")
    meta = _meta(pod)
    reserved = [
        (r.get("apiGroup") or "", r.get("resource"), r.get("name"), r.get("uid"))
        for r in status.get("reservedFor") or []
    ]
    if reserved != [("", "pods", meta.get("name"), meta.get("uid"))]:
        problems.add("claims not reserved for exactly their pod", f"{name} {reserved}")


def _allocated(
    problems: _Problems, claim: Mapping[str, Any], count: int
) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]] | None:
    """What every claim of a bound pod must show: an allocation (None, said, when it has
    none) of ``count`` devices, and the API server's delete-protection finalizer. Its
    allocation and the results, for the checks of each kind."""
    name = _meta(claim).get("name", "")
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        problems.add("claims of bound pods not allocated", name)
        return None
    results = _results(claim)
    if len(results) != count:
        problems.add("claims with the wrong number of devices", f"{name} {len(results)}/{count}")
    if CLAIM_FINALIZER not in (_meta(claim).get("finalizers") or []):
        problems.add(f"allocated claims without {CLAIM_FINALIZER}", name)
    return allocation, results


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _results(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or [])


def _published(
    slices: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, str], tuple[str, frozenset[str]]]:
    """(driver, pool) -> (the node of its slices, its devices' names), for node-local pools
    of the current generation."""
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (spec.get("driver", ""), pool.get("name", ""))
        newest[key] = max(newest.get(key, 0), int(pool.get("generation") or 0))
    out: dict[tuple[str, str], tuple[str, set[str]]] = {}
    for s in slices:
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (spec.get("driver", ""), pool.get("name", ""))
        if int(pool.get("generation") or 0) != newest[key] or not spec.get("nodeName"):
            continue
        node, names = out.setdefault(key, (spec["nodeName"], set()))
        if node != spec["nodeName"]:
            out[key] = ("<several nodes>", names)
        names.update(d.get("name", "") for d in spec.get("devices") or [])
    return {key: (node, frozenset(names)) for key, (node, names) in out.items()}


def _selected_nodes(
    selector: Mapping[str, Any] | None, nodes: Mapping[str, Mapping[str, Any]], node: str
) -> list[str]:
    """The nodes an allocation's node selector selects (all of them when it has none)."""
    if not selector:
        return sorted(nodes)
    terms = selector.get("nodeSelectorTerms") or []
    # What schedulers write for a node-local pool: one term, metadata.name In [node].
    if len(terms) == 1 and not terms[0].get("matchExpressions"):
        fields = terms[0].get("matchFields") or []
        if (
            len(fields) == 1
            and fields[0].get("key") == "metadata.name"
            and fields[0].get("operator") == "In"
        ):
            return sorted(v for v in fields[0].get("values") or [] if v in nodes)
    return sorted(name for name, obj in nodes.items() if selects(selector, obj))


def selects(selector: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """A core/v1 NodeSelector: its terms ORed, each term's requirements ANDed (a term with
    none selects nothing); fields: ``metadata.name`` only."""
    meta = _meta(node)
    labels = meta.get("labels") or {}
    fields = {"metadata.name": meta.get("name", "")}
    for term in selector.get("nodeSelectorTerms") or []:
        expressions = term.get("matchExpressions") or []
        matches = term.get("matchFields") or []
        if not expressions and not matches:
            continue
        if all(_requirement(r, labels) for r in expressions) and all(
            _requirement(r, fields) for r in matches
        ):
            return True
    return False


def _requirement(requirement: Mapping[str, Any], values: Mapping[str, str]) -> bool:
    key, operator = requirement.get("key", ""), requirement.get("operator", "")
    wanted = list(requirement.get("values") or [])
    present = key in values
    value = values.get(key, "")
    if operator == "In":
        return present and value in wanted
    if operator == "NotIn":
        return not present or value not in wanted
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(wanted) == 1:
        try:
            have, bound = int(value), int(wanted[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


# -- the verdict's consequence ----------------------------------------------------------------


def withhold(result: ScenarioResult) -> None:
    """A failed run is reported as failed, not measured: its rates and timings are dropped
    (the problems, the bound count and the CPU figures stay, to tell what went wrong)."""
    result.notes["withheld"] = {
        "pods_per_s": result.pods_per_s,
        "pct_of_ceiling": result.pct_of_ceiling,
        "time_to_done_s": result.time_to_done_s,
        "gang_p50_s": result.gang_p50_s,
        "gang_p99_s": result.gang_p99_s,
    }
    result.pods_per_s = None
    result.pct_of_ceiling = None
    result.time_to_done_s = None
    result.gang_p50_s = None
    result.gang_p99_s = None
