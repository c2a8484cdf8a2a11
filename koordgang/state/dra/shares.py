"""Shares of devices allocated to several claims at once (``allowMultipleAllocations``): per
device, which claims have a share of it and what each share consumes of its capacities.

A shared device is never in use as a whole: it is full when what its shares consume together
leaves too little of a capacity for the next one.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from koordgang.model.dra import AllocatedDevice, DeviceId

__all__ = ["Shares", "total"]


def total(shares: Iterator[AllocatedDevice] | tuple[AllocatedDevice, ...]) -> dict[str, Fraction]:
    """What ``shares`` consume together, by capacity."""
    found: dict[str, Fraction] = {}
    for share in shares:
        for name, amount in share.consumed:
            found[name] = found.get(name, Fraction(0)) + amount
    return found


class Shares:
    __slots__ = ("_by_claim", "_by_device")

    def __init__(self) -> None:
        #: device -> claim key -> the claim's shares of it.
        self._by_device: dict[DeviceId, dict[str, tuple[AllocatedDevice, ...]]] = {}
        #: claim key -> the devices it has shares of.
        self._by_claim: dict[str, set[DeviceId]] = {}

    def of(self, device_id: DeviceId) -> dict[str, tuple[AllocatedDevice, ...]]:
        return self._by_device.get(device_id) or {}

    def shared(self, device_id: DeviceId) -> bool:
        return device_id in self._by_device

    def devices(self) -> set[DeviceId]:
        return set(self._by_device)

    def consumed(self, device_id: DeviceId) -> dict[str, Fraction] | None:
        """What the device's shares consume together; None while it has none."""
        by_claim = self._by_device.get(device_id)
        if not by_claim:
            return None
        return total(share for shares in by_claim.values() for share in shares)

    def set(self, key: str, shares: tuple[AllocatedDevice, ...]) -> list[tuple[DeviceId, bool]]:
        """The claim's shares are ``shares`` from now on; returns the devices whose use
        changed, each with whether it got fuller."""
        mine: dict[DeviceId, tuple[AllocatedDevice, ...]] = {}
        for share in shares:
            mine[share.id] = (*mine.get(share.id, ()), share)
        changed: list[tuple[DeviceId, bool]] = []
        for device_id in self._by_claim.get(key, set()) - set(mine):
            by_claim = self._by_device[device_id]
            del by_claim[key]
            if not by_claim:
                del self._by_device[device_id]
            changed.append((device_id, False))
        for device_id, held in mine.items():
            by_claim = self._by_device.setdefault(device_id, {})
            if by_claim.get(key) == held:
                continue
            by_claim[key] = held
            changed.append((device_id, True))
        if mine:
            self._by_claim[key] = set(mine)
        else:
            self._by_claim.pop(key, None)
        return changed
