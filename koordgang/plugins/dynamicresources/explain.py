"""What a pod waiting for devices is told beyond the best node's shortfall: devices that would
serve it but are kept away (tainted, or of a pool not all published), devices of pools
koordgang does not allocate, and the selectors that may be why too few match."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from koordgang.model.dra import (
    ClaimSpec,
    DeviceId,
    DeviceRequest,
    DeviceTaint,
    DeviceToleration,
    SubRequest,
    untolerated,
)
from koordgang.plugins.dynamicresources.allocator import Shortfall
from koordgang.plugins.dynamicresources.capacity import CapacityBudget, consumption
from koordgang.plugins.dynamicresources.counters import CounterBudget
from koordgang.plugins.dynamicresources.selectors import (
    CelProblem,
    SelectorCache,
    class_source,
    request_source,
)
from koordgang.state.dra import Device, Pool

__all__ = [
    "incomplete_pool",
    "kept_away",
    "note_capacity",
    "note_counters",
    "problems",
    "short_request",
    "untolerated_taint",
]


def short_request(
    claims: Iterable[tuple[str, ClaimSpec]], shortfall: Shortfall
) -> DeviceRequest | None:
    """The request the shortfall names, or None (the claims do not fit together)."""
    if shortfall.reason:
        return None
    for key, spec in claims:
        if key == shortfall.claim:
            return next((r for r in spec.requests if r.name == shortfall.request), None)
    return None


def incomplete_pool(pool: Pool) -> str:
    """Why a pool not all published serves nothing."""
    return (
        f"pool {pool.label} has {len(pool.slices)} of its {pool.slice_count} slices: none of "
        "its devices is used until all are published"
    )


def untolerated_taint(
    taints: Iterable[DeviceTaint], tolerations: Sequence[DeviceToleration]
) -> str:
    """Why a device with ``taints`` is kept from a request with ``tolerations`` ("" if it is
    not): a taint it does not tolerate, or tolerates for ``tolerationSeconds`` only."""
    taint = untolerated(taints, tolerations)
    if taint is None:
        return ""
    if any(t.tolerates(taint) for t in tolerations):
        return (
            f"tainted {taint.describe()}, which the request tolerates only for "
            "tolerationSeconds (its pod would be evicted)"
        )
    return f"tainted {taint.describe()}, which the request does not tolerate"


def note_counters(
    kept: dict[str, set[DeviceId]],
    claims: Sequence[tuple[str, ClaimSpec]],
    shortfall: Shortfall,
    devices: Iterable[Device],
    matches: Callable[[Device, SubRequest], bool],
    counters: CounterBudget,
) -> None:
    """Devices that would serve the short request but whose counters are spent (the other
    partitions of their GPU are in use): kept away, with the counter named."""
    request = short_request(claims, shortfall)
    if request is None:
        return
    for device in devices:
        if not device.spec.consumes or counters.fits(device):
            continue
        if any(matches(device, alternative) for alternative in request.alternatives):
            kept.setdefault(counters.short(device), set()).add(device.id)


def note_capacity(
    kept: dict[str, set[DeviceId]],
    claims: Sequence[tuple[str, ClaimSpec]],
    shortfall: Shortfall,
    devices: Iterable[Device],
    matches: Callable[[Device, SubRequest], bool],
    capacity: CapacityBudget | None,
) -> None:
    """Devices that would serve the short request but for their capacities: what it asks is
    more than a device has or its request policy allows, or a shared device's shares have
    left too little (``device gpu-0 has 10Gi of memory left, the request asks 20Gi``)."""
    request = short_request(claims, shortfall)
    if request is None:
        return
    for device in devices:
        for alternative in request.alternatives:
            if not alternative.capacity and not device.spec.multiple:
                continue
            if not matches(device, alternative):
                continue
            amounts = consumption(device, alternative)
            if isinstance(amounts, str):
                why = amounts
            elif device.spec.multiple and capacity is not None:
                why = capacity.short(device, amounts, alternative)
                why = f"device {why}" if why else ""
            else:
                why = ""
            if why:
                kept.setdefault(why, set()).add(device.id)
                break


def kept_away(kept: Mapping[str, set[DeviceId]]) -> str:
    """What kept matching devices from the pod (``incomplete_pool``, ``untolerated_taint``),
    with how many devices each kept away."""
    said = []
    for why, devices in sorted(kept.items(), key=lambda item: (-len(item[1]), item[0])):
        said.append(
            why
            if why.startswith(("pool ", "device "))
            else f"{len(devices)} matching device(s) are {why}"
        )
    return "; ".join(said[:3])


def problems(selectors: SelectorCache, claims: Iterable[tuple[str, ClaimSpec]]) -> list[CelProblem]:
    """Selectors of these claims' classes or requests that do not compile: they may be why
    too few devices match (errors at run time fail the attempt instead)."""
    sources = set()
    for key, spec in claims:
        for request in spec.requests:
            for alternative in request.alternatives:
                sources.add(class_source(alternative.device_class))
                sources.add(request_source(key, request.result_name(alternative)))
    return [
        p
        for (_, source), p in selectors.problems.items()
        if source in sources and p.device_id is None
    ]
