"""The gangs as people want to see them (``/gangs``, ``koordgang gangs``): every gang, its group,
mode, members created, placed and bound, its state, why it waits, and the devices its members
got through their ResourceClaims, with what plugins add of their own (``facts``: the network
domain a gathered gang was placed in, the nodes a starving job holds)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from koordgang.model.pod import PodInfo
from koordgang.state.cache import SchedulerCache
from koordgang.state.dra import DraManager
from koordgang.state.gangs import GangRegistry


def gang_rows(
    gangs: GangRegistry,
    cache: SchedulerCache,
    dra: DraManager,
    facts: Callable[[str], Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for gang in sorted(gangs.gangs(), key=lambda g: g.key):
        spec = gang.spec
        members = list(gang.live_members())
        rows.append(
            {
                "gang": gang.key,
                "api": gang.api,
                "group": list(spec.groups),
                "mode": spec.mode.value,
                "minAvailable": spec.min_available,
                "totalNumber": spec.total_number,
                "created": len(members),
                "placed": sum(1 for p in members if cache.node_of(p.uid) is not None),
                "bound": sum(1 for p in members if p.node_name),
                "state": gang.state.value,
                "waitingFor": "" if gang.satisfied else gang.last_message,
                "devices": _devices(members, dra),
            }
        )
        if facts is not None:
            rows[-1].update(facts(gang.key))
    return rows


def _devices(members: list[PodInfo], dra: DraManager) -> dict[str, list[str]]:
    """The devices each member got through its ResourceClaims (``node: driver/pool/device``),
    allocated or assumed; members without any are left out."""
    found: dict[str, list[str]] = {}
    for pod in members:
        allocations = dra.allocations_of(pod)
        if allocations:
            found[pod.key] = [
                f"{allocation.node or '?'}: {device.id}"
                for allocation in allocations.values()
                for device in allocation.devices
            ]
    return found
