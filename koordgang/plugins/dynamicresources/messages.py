"""What pods that wait for devices are told: the per-node reason (counted over nodes, in
kube-scheduler's manner) and the pod-wide note of the best node's shortfall."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from koordgang.framework.status import Status
from koordgang.model.dra import MAX_RESERVED_FOR, is_pending_key
from koordgang.plugins.dynamicresources.allocator import Shortfall
from koordgang.plugins.dynamicresources.selectors import CelProblem

PLUGIN = "DynamicResources"


def pinned_reason(claim: str) -> str:
    """Why a node is refused to a pod whose claim is allocated elsewhere."""
    return f'node(s) not where resourceclaim "{claim}" is allocated'


def full_reason(claim: str) -> str:
    """Why a pod may not use a claim that names as many consumers as a claim can."""
    return f"claim {claim} is reserved for {MAX_RESERVED_FOR} pods, the most a claim can name"


def refusal(shortfall: Shortfall) -> Status:
    """The node's verdict: UNSCHEDULABLE where freeing devices would help (some that match
    are in use), UNSCHEDULABLE_AND_UNRESOLVABLE where the node has too few that match."""
    if shortfall.reason:
        return Status.unschedulable(PLUGIN, "node(s) cannot serve the pod's claims together")
    if not shortfall.device_class:
        return Status.unresolvable(PLUGIN, "node(s) had no matching devices")
    reason = f"Insufficient devices of class {shortfall.device_class}"
    if shortfall.resolvable:
        return Status.unschedulable(PLUGIN, reason)
    if shortfall.total == 0:
        reason = f"node(s) had no devices of class {shortfall.device_class}"
    return Status.unresolvable(PLUGIN, reason)


def missing(shortfall: Shortfall) -> tuple[int, int]:
    """How far a node is from serving the claims (smaller is better): devices missing, then
    the more matching devices it has at all (in use ones may be freed), the nearer."""
    if shortfall.reason:
        return (10**6, 0)
    return (shortfall.wanted - shortfall.free, -shortfall.total)


def describe(
    shortfall: Shortfall,
    node: str,
    problems: Iterable[CelProblem],
    extended: Mapping[str, str] | None = None,
) -> str:
    """``ResourceClaim x: request "gpus" wants 2 devices of class gpu; the best node, n1, has
    0 of 2 free``, and the first selector problem that may be why, if any. The claim made for
    the pod's extended resources (``extended``: resource -> class) is said as the extended
    resource and the class it maps to."""
    claim = shortfall.claim.partition("/")[2] or shortfall.claim
    if is_pending_key(shortfall.claim):
        names = sorted(
            r for r, c in (extended or {}).items() if c == shortfall.device_class
        ) or sorted(extended or {})
        claim = f"for extended resource {', '.join(names)} (DeviceClass {shortfall.device_class})"
    if shortfall.reason:
        text = f"ResourceClaim {claim}: {shortfall.reason} (the best node: {node})"
    else:
        wanted = shortfall.wanted
        text = (
            f'ResourceClaim {claim}: request "{shortfall.request}" wants {wanted} '
            f"{'device' if wanted == 1 else 'devices'} of class {shortfall.device_class}; "
            f"the best node, {node}, has {shortfall.free} of {shortfall.total} free"
        )
    first = next(iter(problems), None)
    if first is not None:
        text = f"{text} ({first.describe()})"
    return text
