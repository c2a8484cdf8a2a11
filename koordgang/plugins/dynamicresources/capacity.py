"""Consumable capacity, as the 1.37 allocator consumes it: what a request takes of each
capacity of a device, and what is left of a shared device's capacities in a what-if.

A request takes of every capacity the device has: what it asks (``capacity.requests``),
rounded up by the capacity's ``requestPolicy`` (to ``validRange.min`` and the next ``step``
above it, or to the next of ``validValues``), or, where it asks nothing, the policy's
``default`` (no default: all of it). A device serves the request only if every capacity the
request names exists on it, what it takes is one the policy allows (at most ``max``, a
``step`` from ``min``, one of ``validValues``, or the ``default``), and is no more than the
capacity. A shared device (``allowMultipleAllocations``) serves it only while that much is
left once its shares (in the snapshot's view, and chosen so far in the search) have taken
theirs; a device that is not shared is taken whole, its capacity checked as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction

from koordgang.model.dra import SubRequest
from koordgang.model.dra.capacity import Amounts, DeviceCapacity, RequestPolicy
from koordgang.model.quantity import format_quantity
from koordgang.state.dra import Device

__all__ = ["CapacityBudget", "consumption"]


def _take(asked: Fraction | None, capacity: DeviceCapacity) -> Fraction:
    """What a request asking ``asked`` (None: nothing) takes of ``capacity``."""
    policy = capacity.policy
    if asked is None:
        return (
            policy.default if policy is not None and policy.default is not None else capacity.value
        )
    if policy is None:
        return asked
    valid_range = policy.valid_range
    if valid_range is not None:
        if asked < valid_range.min:
            return valid_range.min
        if valid_range.step is None:
            return asked
        steps = math.ceil((asked - valid_range.min) / valid_range.step)
        return valid_range.min + steps * valid_range.step
    for value in policy.valid_values:
        if asked <= value:
            return value
    return asked


def _allowed(amount: Fraction, policy: RequestPolicy | None) -> str:
    """Why the policy does not allow taking ``amount`` ("" if it does)."""
    if policy is None or (policy.default is not None and amount == policy.default):
        return ""
    valid_range = policy.valid_range
    if valid_range is not None:
        if valid_range.max is not None and amount > valid_range.max:
            return f"at most {format_quantity(valid_range.max)} may be taken"
        if valid_range.step is not None and (amount - valid_range.min) % valid_range.step:
            return (
                f"amounts go from {format_quantity(valid_range.min)} in steps of "
                f"{format_quantity(valid_range.step)}"
            )
        return ""
    if policy.valid_values and amount not in policy.valid_values:
        values = ", ".join(format_quantity(v) for v in policy.valid_values)
        return f"only {values} may be taken"
    return ""


def consumption(device: Device, alternative: SubRequest) -> Amounts | str:
    """What ``alternative`` takes of each capacity of ``device`` (every capacity, sorted by
    name), or why the device cannot serve it whatever else uses it."""
    capacities = device.spec.capacity
    asked = dict(alternative.capacity)
    for name in asked:
        if name not in capacities:
            return f"device {device.id.device} has no capacity {name}"
    taken: list[tuple[str, Fraction]] = []
    for name, capacity in sorted(capacities.items()):
        amount = _take(asked.get(name), capacity)
        why = _allowed(amount, capacity.policy)
        if why:
            return (
                f"device {device.id.device} does not allow {format_quantity(amount)} of {name}: "
                f"{why}"
            )
        if amount > capacity.value:
            return (
                f"device {device.id.device} has {format_quantity(capacity.value)} of {name}, "
                f"the request asks {format_quantity(amount)}"
            )
        taken.append((name, amount))
    return tuple(taken)


class CapacityBudget:
    """What is left of the shared devices' capacities of one node in one search: their use in
    the snapshot's view (``used``), and the shares the search has taken so far."""

    __slots__ = ("_taking", "_used")

    def __init__(self, used: Callable[[Device], Mapping[str, Fraction] | None]) -> None:
        self._used = used
        #: device id -> (shares taken in the search, what they consume).
        self._taking: dict[object, tuple[int, dict[str, Fraction]]] = {}

    def shared(self, device: Device) -> bool:
        """The device has a share already (its counters are counted once, by the first)."""
        return device.id in self._taking or self._used(device) is not None

    def fits(self, device: Device, amounts: Amounts) -> bool:
        return not self.short(device, amounts)

    def short(self, device: Device, amounts: Amounts, asked: SubRequest | None = None) -> str:
        """Which capacity has too little left for ``amounts`` (``gpu-0 has 10Gi of memory
        left, the request asks 20Gi``); "" if all fit."""
        used = self._used(device) or {}
        taking = self._taking.get(device.id, (0, {}))[1]
        requested = dict(asked.capacity) if asked is not None else {}
        for name, amount in amounts:
            capacity = device.spec.capacity.get(name)
            if capacity is None:
                continue
            left = capacity.value - used.get(name, Fraction(0)) - taking.get(name, Fraction(0))
            if amount > left:
                wanted = format_quantity(amount)
                raw = requested.get(name)
                if raw is not None and raw != amount:
                    wanted = f"{format_quantity(raw)} ({wanted} by its request policy)"
                return (
                    f"{device.id.device} has {format_quantity(max(left, Fraction(0)))} of "
                    f"{name} left, the request asks {wanted}"
                )
        return ""

    def take(self, device: Device, amounts: Amounts) -> None:
        self._add(device, amounts, 1)

    def give(self, device: Device, amounts: Amounts) -> None:
        self._add(device, amounts, -1)

    def _add(self, device: Device, amounts: Amounts, sign: int) -> None:
        count, taking = self._taking.get(device.id, (0, {}))
        taking = dict(taking)
        for name, amount in amounts:
            taking[name] = taking.get(name, Fraction(0)) + sign * amount
        if count + sign <= 0:
            self._taking.pop(device.id, None)
        else:
            self._taking[device.id] = (count + sign, taking)
