"""The allocation a claim gets from the devices chosen for it, as upstream writes it: the
results (``<request>`` or ``<request>/<alternative>``), the configuration (each class's once,
for every request it served, then the claim's own), and the node selector: the node's name
when a device is local to it, else the requirements of the network-attached devices'
selectors gathered into one term (none at all when each is on all nodes). A share of a shared
device gets a fresh ``shareID`` (a UUID, as the API server requires) and what it consumes of
each of the device's capacities."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from koordgang.model.affinity import parse_node_selector
from koordgang.model.dra import AllocatedDevice, ClaimAllocation, ResourceClaimInfo
from koordgang.plugins.dynamicresources.allocator import Chosen
from koordgang.state.dra import DraManager


def build(
    claim: ResourceClaimInfo | None, chosen: Sequence[Chosen], node: str, dra: DraManager
) -> ClaimAllocation:
    devices = tuple(
        AllocatedDevice(
            c.result_name,
            c.device.id.driver,
            c.device.id.pool,
            c.device.id.device,
            tuple(t.raw for t in c.alternative.tolerations),
            admin_access=c.alternative.admin_access,
            binding_conditions=c.device.spec.binding_conditions,
            binding_failure_conditions=c.device.spec.binding_failure_conditions,
            share_id=str(uuid.uuid4()) if c.device.spec.multiple else "",
            consumed=c.consumed,
        )
        for c in chosen
    )
    config: list[dict[str, Any]] = []
    class_entries: dict[str, list[dict[str, Any]]] = {}
    served: list[str] = []
    for c in chosen:
        name = c.result_name
        if name in served:
            continue
        served.append(name)
        class_name = c.alternative.device_class
        entries = class_entries.get(class_name)
        if entries is None:
            device_class = dra.device_class(class_name)
            entries = class_entries[class_name] = [
                {"source": "FromClass", "requests": [name], **dict(raw)}
                for raw in (device_class.config if device_class is not None else ())
            ]
            config.extend(entries)
        else:
            for entry in entries:
                entry["requests"].append(name)
    if claim is not None:
        allocated = {c.request.name for c in chosen} | set(served)
        for claim_config in claim.spec.config:
            names = claim_config.requests
            if names and not any(n in allocated for n in names):
                continue
            entry = {"source": "FromClaim", **dict(claim_config.raw)}
            if names:
                entry["requests"] = list(names)
            else:
                entry.pop("requests", None)
            config.append(entry)
    if any(c.device.node or c.device.spec.binds_to_node for c in chosen) or not chosen:
        return ClaimAllocation.on_node(node, devices, tuple(config))
    selector = network_selector(c.device.reach_raw for c in chosen)
    if selector is None:
        return ClaimAllocation(devices, tuple(config))
    return ClaimAllocation(devices, tuple(config), parse_node_selector(selector), selector)


def network_selector(selectors: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """One term holding every requirement of the selectors (each of one term), each once;
    None when there is none (devices on all nodes)."""
    fields: list[Any] = []
    expressions: list[Any] = []
    for selector in selectors:
        if selector is None:
            continue
        terms = selector.get("nodeSelectorTerms") or []
        if not terms:
            continue
        term = terms[0]
        for found, kind in ((fields, "matchFields"), (expressions, "matchExpressions")):
            for requirement in term.get(kind) or ():
                if requirement not in found:
                    found.append(requirement)
    if not fields and not expressions:
        return None
    term_out: dict[str, Any] = {}
    if expressions:
        term_out["matchExpressions"] = [dict(r) for r in expressions]
    if fields:
        term_out["matchFields"] = [dict(r) for r in fields]
    return {"nodeSelectorTerms": [term_out]}
