"""Counters partitionable devices share (``sharedCounters``, ``consumesCounters``): how much of
each counter set is left on a node in a what-if, and what one search takes of it.

A GPU offered whole and as four 20Gi partitions is five devices drawing on one counter set
(its 80Gi of memory): a device is free only while what it consumes is left, once the devices in
use (in the snapshot's view) and those chosen so far in the search have taken theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction

from koordgang.state.dra import Device

__all__ = ["CounterBudget"]

#: (pool label, counter set, counter)
_Key = tuple[str, str, str]


class CounterBudget:
    """What is left of the counter sets of one node's pools."""

    __slots__ = ("_left", "_total")

    def __init__(self, devices: Iterable[Device], in_use: Callable[[Device], bool]) -> None:
        self._left: dict[_Key, Fraction] = {}
        self._total: dict[_Key, Fraction] = {}
        counted: set[str] = set()
        devices = list(devices)
        for device in devices:
            pool = device.pool
            if pool.label in counted:
                continue
            counted.add(pool.label)
            for set_name, counters in pool.counter_sets.items():
                for counter, amount in counters.items():
                    key = (pool.label, set_name, counter)
                    self._left[key] = self._total[key] = amount
        for device in devices:
            if device.spec.consumes and in_use(device):
                self.take(device)

    def __bool__(self) -> bool:
        return bool(self._total)

    def fits(self, device: Device) -> bool:
        """What ``device`` consumes is left (a counter its pool does not define is never)."""
        label = device.pool.label
        for use in device.spec.consumes:
            for counter, amount in use.counters.items():
                if self._left.get((label, use.counter_set, counter), Fraction(-1)) < amount:
                    return False
        return True

    def take(self, device: Device) -> None:
        self._add(device, -1)

    def give(self, device: Device) -> None:
        self._add(device, 1)

    def _add(self, device: Device, sign: int) -> None:
        label = device.pool.label
        for use in device.spec.consumes:
            for counter, amount in use.counters.items():
                key = (label, use.counter_set, counter)
                self._left[key] = self._left.get(key, Fraction(0)) + sign * amount

    def short(self, device: Device) -> str:
        """Which counter keeps ``device`` away (``counter memory of counter set gpu-0 in
        pool x/y has 0 of 80Gi left``); "" if it fits."""
        label = device.pool.label
        for use in device.spec.consumes:
            for counter, amount in use.counters.items():
                key = (label, use.counter_set, counter)
                left = self._left.get(key)
                if left is None:
                    return (
                        f"counter {counter} of counter set {use.counter_set} is not defined in "
                        f"pool {label}"
                    )
                if left < amount:
                    return (
                        f"counter {counter} of counter set {use.counter_set} in pool {label} "
                        f"has {_amount(max(left, Fraction(0)))} of {_amount(self._total[key])} "
                        f"left, and a device takes {_amount(amount)}"
                    )
        return ""


def _amount(value: Fraction) -> str:
    """A counter's amount as a quantity (``80Gi``, ``4``)."""
    if value.denominator == 1:
        whole = value.numerator
        for suffix, unit in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if whole and whole % unit == 0:
                return f"{whole // unit}{suffix}"
        return str(whole)
    return str(float(value))
