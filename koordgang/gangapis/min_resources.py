"""PodGroup ``spec.minResources``: is there, right now, room for what the gang needs in all?

Checking this before placing any member saves a pass over the cluster per member for a gang
that cannot fit, and tells the user which resource is short by how much.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from koordgang.model.pod import PodInfo
from koordgang.model.resources import PODS, Resources, format_amount
from koordgang.state.snapshot import Snapshot


def free_in_cluster(snapshot: Snapshot, names: Iterable[str]) -> dict[str, int]:
    """Allocatable minus requested, per resource, summed over the nodes that take pods (ready,
    not cordoned); a node over-committed on a resource adds nothing for it."""
    wanted = tuple(names)
    free = dict.fromkeys(wanted, 0)
    for node in snapshot.nodes:
        info = node.info
        if info is None or not info.ready or info.unschedulable:
            continue
        for name in wanted:
            if name == PODS:
                left = info.allocatable.get(PODS) - snapshot.pod_count(node)
            else:
                left = info.allocatable.get(name) - snapshot.used(node, name)
            if left > 0:
                free[name] += left
    return free


def shortfall(
    minimum: Resources,
    counted: Iterable[PodInfo],
    free: Mapping[str, int],
    reclaimable: Mapping[str, int],
) -> list[str]:
    """``nvidia.com/gpu short by 4 (needs 16, 12 free)`` for each resource that does not fit;
    members that already hold room (``counted``) have their requests taken off the need."""
    held: dict[str, int] = {}
    for pod in counted:
        for name, amount in pod.requests.items():
            held[name] = held.get(name, 0) + amount
    short = []
    for name, amount in minimum.items():
        need = amount - held.get(name, 0)
        have = free.get(name, 0) + reclaimable.get(name, 0)
        if need > have:
            extra = reclaimable.get(name, 0)
            also = f", {format_amount(name, extra)} from preemption" if extra else ""
            short.append(
                f"{name} short by {format_amount(name, need - have)} (needs "
                f"{format_amount(name, need)}, {format_amount(name, free.get(name, 0))} free{also})"
            )
    return short
