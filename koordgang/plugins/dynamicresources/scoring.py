"""Which node serves a pod's ``firstAvailable`` requests best: the earlier the alternative that
fits there, the better, as kube-scheduler scores it (each request alternative ``i`` of its
first-available list is worth ``8 - i``, 8 being the most a list may have).

kube-scheduler scales the sum over the nodes (the best node gets 100); here the node index
keeps each node's score on its own, so the sum is scaled by the most it could be (every request
served by its first choice): the order of the nodes is the same.
"""

from __future__ import annotations

from collections.abc import Iterable

from koordgang.framework.interfaces import MAX_NODE_SCORE
from koordgang.model.dra import ClaimSpec
from koordgang.plugins.dynamicresources.allocator import Allocation

__all__ = ["FIRST_AVAILABLE_MAX", "first_available_requests", "preference"]

#: The most alternatives a ``firstAvailable`` list may have (the API's limit).
FIRST_AVAILABLE_MAX = 8


def first_available_requests(claims: Iterable[tuple[str, ClaimSpec]]) -> int:
    """How many requests of these claims are lists of alternatives."""
    return sum(1 for _, spec in claims for request in spec.requests if request.first_available)


def preference(allocation: Allocation, requests: int) -> int:
    """The node's score (0..100) for ``allocation`` of a pod with ``requests`` first-available
    requests: each is worth ``8 - i`` for its alternative ``i``."""
    if requests <= 0:
        return 0
    raw = 0
    seen: set[tuple[str, str]] = set()
    for key, chosen in allocation.claims.items():
        for one in chosen:
            request = one.request
            if not request.first_available or (key, request.name) in seen:
                continue
            seen.add((key, request.name))
            raw += FIRST_AVAILABLE_MAX - request.alternatives.index(one.alternative)
    return MAX_NODE_SCORE * raw // (FIRST_AVAILABLE_MAX * requests)
