"""The gangs as people want to see them (``/gangs``, ``koordgang gangs``): every gang, its group,
mode, members created, placed and bound, its state, why it waits, and the devices its members
got through their ResourceClaims, with what plugins add of their own (``facts``: the network
domain a gathered gang was placed in, the nodes a starving job holds).

Upstream PodGroups of the ``basic`` policy are not gangs (from Kubernetes 1.37 the Job
controller makes one for every Job, its pods scheduled one by one): they are left out unless
asked for, and then read ``basic`` in the mode column, with no minimum."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache
from koordgang.state.dra import DraManager
from koordgang.state.gangs import Gang, GangRegistry

#: The mode of a group object that is not a gang (upstream's ``basic`` policy).
BASIC = "basic"
#: The state of a gang whose members all finished (Succeeded or Failed): the job is over,
#: whatever the gang went through.
FINISHED = "Finished"


def gang_rows(
    gangs: GangRegistry,
    cache: SchedulerCache,
    dra: DraManager,
    facts: Callable[[str], Mapping[str, Any]] | None = None,
    *,
    with_basic: bool = False,
) -> list[dict[str, Any]]:
    """One row per gang; ``with_basic`` adds the group objects that are not gangs."""
    rows: list[dict[str, Any]] = []
    for gang in sorted(gangs.gangs(), key=lambda g: g.key):
        is_gang = gang.is_gang()
        if not is_gang and not with_basic:
            continue
        spec = gang.spec
        members = list(gang.live_members())
        state = row_state(gang)
        rows.append(
            {
                "gang": gang.key,
                "api": gang.api,
                "group": list(spec.groups),
                "mode": spec.mode.value if is_gang else BASIC,
                "minAvailable": spec.min_available if is_gang else None,
                "totalNumber": spec.total_number,
                "created": len(members),
                "placed": sum(1 for p in members if cache.node_of(p.uid) is not None),
                "bound": sum(1 for p in members if p.node_name),
                "state": state,
                "waitingFor": gang.last_message if is_gang and _waits(gang, state) else "",
                "devices": _devices(members, cache, dra),
            }
        )
        if facts is not None:
            rows[-1].update(facts(gang.key))
    return rows


def row_state(gang: Gang) -> str:
    """The gang's state as the view says it: ``Finished`` once every member finished, its
    lifecycle state otherwise."""
    if gang.members and all(p.is_terminal for p in gang.members.values()):
        return FINISHED
    return gang.state.value


def _waits(gang: Gang, state: str) -> bool:
    return not gang.satisfied and state != FINISHED


def _devices(
    members: list[PodInfo], cache: SchedulerCache, dra: DraManager
) -> dict[str, list[str]]:
    """The devices each member got through its ResourceClaims (``node: driver/pool/device``,
    a share with what it consumes), allocated or assumed; members without any are left out. A
    device of a network-attached pool reaches several nodes and its allocation names none:
    the member's node is where it is used."""
    found: dict[str, list[str]] = {}
    for pod in members:
        allocations = dra.allocations_of(pod)
        if allocations:
            here = cache.node_of(pod.uid) or "?"
            found[pod.key] = [
                f"{allocation.node or here}: {device.describe()}"
                for allocation in allocations.values()
                for device in allocation.devices
            ]
    return found
