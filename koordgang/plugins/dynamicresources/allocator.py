"""Choosing devices for a pod's claims on one node: a complete search.

Every request of every claim is served in order; a ``firstAvailable`` request tries its
alternatives in order; an ``ExactCount`` request takes ``count`` devices, an ``All`` request
every device of the node that matches. A device serves one request of one claim, and the
devices of one claim satisfy the claim's constraints (``matchAttribute``: one value for all,
``distinctAttribute``: a value each). A shared device (``allowMultipleAllocations``) may serve
several requests, of one claim or of several, each taking a share of its capacities while
enough is left (``capacity.py``); one request's devices are still distinct. The search
backtracks over every choice (alternatives, then which devices), so that when an allocation
exists it is found: what the first choices take can make a later request impossible, and
another choice may not.

The search takes devices of a request in the order the node lists them, as combinations (never
the same set twice in another order), stops a branch as soon as too few candidates are left,
and gives up after ``MAX_STEPS`` devices tried: a node whose answer is that costly is refused
with a message saying so, never answered wrongly.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from koordgang.model.dra import (
    ALLOCATION_MODE_ALL,
    MAX_ALLOCATED_DEVICES,
    AttributeValue,
    ClaimSpec,
    DeviceConstraint,
    DeviceId,
    DeviceRequest,
    SubRequest,
)
from koordgang.model.dra.capacity import Amounts
from koordgang.plugins.dynamicresources.capacity import CapacityBudget, consumption
from koordgang.plugins.dynamicresources.counters import CounterBudget
from koordgang.state.dra import Device

#: Devices tried in one search before it gives up on the node.
MAX_STEPS = 20_000

#: Does this device serve this request alternative (its class, its selectors, a feature
#: koordgang implements)? Asked once per pair per search.
Matcher = Callable[[Device, SubRequest], bool]


@dataclass(frozen=True, slots=True)
class Chosen:
    """A device chosen for a request: the request, the alternative taken, the device."""

    request: DeviceRequest
    alternative: SubRequest
    device: Device
    #: What its share consumes of the device's capacities (a shared device only).
    consumed: Amounts = ()

    @property
    def result_name(self) -> str:
        return self.request.result_name(self.alternative)


@dataclass(slots=True)
class Shortfall:
    """Why a node cannot serve the claims: the first request that is short, by how much."""

    claim: str
    request: str
    device_class: str
    wanted: int
    #: Matching devices that are free, and matching devices in all (in use or not).
    free: int
    total: int
    #: Set instead when the request is not short on its own: what else is in the way.
    reason: str = ""

    @property
    def resolvable(self) -> bool:
        """Would freeing devices help (some matching ones are in use)?"""
        return not self.reason and self.total >= self.wanted


@dataclass(slots=True)
class Allocation:
    """Per claim key, the devices chosen, in request order."""

    claims: dict[str, list[Chosen]] = field(default_factory=dict)


class _Budget:
    __slots__ = ("left",)

    def __init__(self, steps: int) -> None:
        self.left = steps


class GaveUp(Exception):
    """The search used up its budget."""


def allocate(
    claims: Sequence[tuple[str, ClaimSpec]],
    devices: Sequence[Device],
    free: Callable[[DeviceId], bool],
    matches: Matcher,
    *,
    counters: CounterBudget | None = None,
    capacity: CapacityBudget | None = None,
    max_steps: int = MAX_STEPS,
) -> Allocation | Shortfall:
    """Devices of ``devices`` (one node's, in its order) for every request of ``claims``, or
    the first request that cannot be served and why. ``counters``: what is left of the counter
    sets the node's partitionable devices draw on (each device chosen takes its share).
    ``capacity``: what is left of the shared devices' capacities (None: nothing used)."""
    search = _Search(claims, devices, free, matches, _Budget(max_steps), counters or None, capacity)
    try:
        if search.run():
            return Allocation({key: list(chosen) for key, chosen in search.result.items()})
    except GaveUp:
        return Shortfall(
            claims[0][0] if claims else "",
            "",
            "",
            0,
            0,
            0,
            reason=f"the search for devices gave up after {max_steps} tries on this node",
        )
    return search.shortfall()


class _Search:
    def __init__(
        self,
        claims: Sequence[tuple[str, ClaimSpec]],
        devices: Sequence[Device],
        free: Callable[[DeviceId], bool],
        matches: Matcher,
        budget: _Budget,
        counters: CounterBudget | None = None,
        capacity: CapacityBudget | None = None,
    ) -> None:
        self.claims = claims
        self.counters = counters
        self.capacity = capacity if capacity is not None else CapacityBudget(lambda _: None)
        self._amounts: dict[tuple[int, DeviceId], Amounts | str] = {}
        self.devices = devices
        self.free = free
        self.matches = matches
        self.budget = budget
        #: (claim index, request) in the order they are served.
        self.steps = [(i, r) for i, (_, spec) in enumerate(claims) for r in spec.requests]
        self.result: dict[str, list[Chosen]] = {key: [] for key, _ in claims}
        self.used: set[DeviceId] = set()
        #: Per claim index and constraint index: the value ``matchAttribute`` fixed, or the
        #: values ``distinctAttribute`` has seen.
        self.fixed: dict[tuple[int, int], AttributeValue] = {}
        self.seen: dict[tuple[int, int], set[AttributeValue]] = {}
        self._matching: dict[int, list[Device]] = {}

    def matching(self, alternative: SubRequest) -> list[Device]:
        """The node's devices that serve ``alternative`` (free or not), in the node's order."""
        known = self._matching.get(id(alternative))
        if known is None:
            known = [
                d
                for d in self.devices
                if self.matches(d, alternative)
                and not isinstance(self.amounts(alternative, d), str)
            ]
            self._matching[id(alternative)] = known
        return known

    def amounts(self, alternative: SubRequest, device: Device) -> Amounts | str:
        """What ``alternative`` takes of ``device``'s capacities, or why it cannot (only asked
        of shared devices and requests naming capacities: others take a device whole)."""
        if not alternative.capacity and not device.spec.multiple:
            return ()
        key = (id(alternative), device.id)
        found = self._amounts.get(key)
        if found is None:
            found = self._amounts[key] = consumption(device, alternative)
        return found

    def _room(self, alternative: SubRequest, device: Device) -> bool:
        """A shared device has enough left of its capacities for another share."""
        if not device.spec.multiple:
            return True
        amounts = self.amounts(alternative, device)
        return not isinstance(amounts, str) and self.capacity.fits(device, amounts)

    def _free(self, alternative: SubRequest, device_id: DeviceId) -> bool:
        """Free for ``alternative``: in use by no claim, or asked for with admin access (which
        takes a device whoever uses it)."""
        return alternative.admin_access or self.free(device_id)

    def _counted(self, alternative: SubRequest, device: Device) -> bool:
        """What ``device`` consumes of its counter sets is left (admin access takes none)."""
        counters = self.counters
        return (
            counters is None
            or not device.spec.consumes
            or alternative.admin_access
            or (device.spec.multiple and self.capacity.shared(device))
            or counters.fits(device)
        )

    def run(self, position: int = 0) -> bool:
        if position == len(self.steps):
            return True
        claim_index, request = self.steps[position]
        for alternative in request.alternatives:
            if alternative.unsupported:
                continue
            if self._serve(position, claim_index, request, alternative):
                return True
        return False

    def _constraints(
        self, claim_index: int, request: DeviceRequest, alternative: SubRequest
    ) -> list[tuple[int, DeviceConstraint]]:
        spec = self.claims[claim_index][1]
        name = request.result_name(alternative)
        return [
            (index, c)
            for index, c in enumerate(spec.constraints)
            if c.applies_to(request.name, name)
        ]

    def _serve(
        self, position: int, claim_index: int, request: DeviceRequest, alternative: SubRequest
    ) -> bool:
        key = self.claims[claim_index][0]
        constraints = self._constraints(claim_index, request, alternative)
        matching = self.matching(alternative)
        if alternative.mode == ALLOCATION_MODE_ALL:
            if not matching or any(not d.pool.complete for d in self.devices):
                return False
            wanted = len(matching)
            candidates = matching
        else:
            wanted = alternative.count
            candidates = [
                d for d in matching if d.id not in self.used and self._free(alternative, d.id)
            ]
        if len(self.result[key]) + wanted > MAX_ALLOCATED_DEVICES:
            return False
        if len(candidates) < wanted:
            return False
        if alternative.mode == ALLOCATION_MODE_ALL and any(
            d.id in self.used or not self._free(alternative, d.id) for d in candidates
        ):
            return False
        chosen = self.result[key]
        # The first matchAttribute constraint prunes: a device whose value too few candidates
        # share cannot begin a set, and once a value is fixed only its devices are tried.
        # The order of the tries stays the nodes' order (the first allocation found is the
        # same as without the pruning).
        match = next(((i, c) for i, c in constraints if c.match_attribute), None)
        positions: dict[Any, list[int]] = {}
        if match is not None and alternative.mode != ALLOCATION_MODE_ALL:
            attribute = match[1].match_attribute
            for index, device in enumerate(candidates):
                value = device.spec.attributes.get(attribute)
                if value is not None:
                    positions.setdefault(value, []).append(index)
        slot = None if match is None else (claim_index, match[0])

        def tries(start: int, left: int) -> Iterable[int]:
            if match is None or alternative.mode == ALLOCATION_MODE_ALL:
                return range(start, len(candidates) - left + 1)
            fixed = self.fixed.get(slot) if slot is not None else None
            if fixed is not None:
                found = positions.get(fixed, [])
                return found[bisect_left(found, start) :]
            return (
                index
                for value, found in positions.items()
                for index in found[bisect_left(found, start) : len(found) - left + 1]
            )

        def pick(start: int, left: int) -> bool:
            if left == 0:
                return self.run(position + 1)
            for index in sorted(tries(start, left)) if match is not None else tries(start, left):
                if index > len(candidates) - left:
                    break
                self.budget.left -= 1
                if self.budget.left < 0:
                    raise GaveUp
                device = candidates[index]
                if not self._counted(alternative, device) or not self._room(alternative, device):
                    if alternative.mode == ALLOCATION_MODE_ALL:
                        return False
                    continue
                undo = self._admit(claim_index, constraints, device)
                if undo is None:
                    if alternative.mode == ALLOCATION_MODE_ALL:
                        return False
                    continue
                shared = device.spec.multiple
                # A shared device's counters are taken by its first share only.
                consumes = self.counters is not None and bool(device.spec.consumes)
                consumes = consumes and not alternative.admin_access
                consumes = consumes and not (shared and self.capacity.shared(device))
                if consumes and self.counters is not None:
                    self.counters.take(device)
                amounts = self.amounts(alternative, device) if shared else ()
                assert not isinstance(amounts, str)
                if shared:
                    self.capacity.take(device, amounts)
                else:
                    self.used.add(device.id)
                chosen.append(Chosen(request, alternative, device, amounts))
                if pick(index + 1, left - 1):
                    return True
                chosen.pop()
                if shared:
                    self.capacity.give(device, amounts)
                else:
                    self.used.discard(device.id)
                if consumes and self.counters is not None:
                    self.counters.give(device)
                self._retract(undo)
                if alternative.mode == ALLOCATION_MODE_ALL:
                    return False
            return False

        return pick(0, wanted)

    def _admit(
        self,
        claim_index: int,
        constraints: list[tuple[int, DeviceConstraint]],
        device: Device,
    ) -> list[tuple[str, tuple[int, int], AttributeValue]] | None:
        """Checks ``device`` against the claim's constraints and records its values; returns
        how to take the record back, or None when it breaks one."""
        done: list[tuple[str, tuple[int, int], AttributeValue]] = []
        for index, constraint in constraints:
            slot = (claim_index, index)
            if constraint.match_attribute:
                value = device.spec.attributes.get(constraint.match_attribute)
                fixed = self.fixed.get(slot)
                if value is None or (fixed is not None and fixed != value):
                    self._retract(done)
                    return None
                if fixed is None:
                    self.fixed[slot] = value
                    done.append(("fixed", slot, value))
            if constraint.distinct_attribute:
                value = device.spec.attributes.get(constraint.distinct_attribute)
                seen = self.seen.setdefault(slot, set())
                if value is None or value in seen:
                    self._retract(done)
                    return None
                seen.add(value)
                done.append(("seen", slot, value))
        return done

    def _retract(self, done: list[tuple[str, tuple[int, int], AttributeValue]]) -> None:
        for kind, slot, value in reversed(done):
            if kind == "fixed":
                self.fixed.pop(slot, None)
            else:
                self.seen[slot].discard(value)
        done.clear()

    def shortfall(self) -> Shortfall:
        """The first request that is short on its own (the nearest of its alternatives);
        else the claims do not fit together (constraints, or requests competing for the same
        devices)."""
        for key, spec in self.claims:
            for request in spec.requests:
                found = [
                    self._alone(key, request, alternative)
                    for alternative in request.alternatives
                    if not alternative.unsupported
                ]
                if not found:
                    return Shortfall(key, request.name, "", 1, 0, 0)
                if all(s is not None for s in found):
                    return next(s for s in found if s is not None)
        key = self.claims[0][0] if self.claims else ""
        return Shortfall(
            key,
            "",
            "",
            0,
            0,
            0,
            reason="its requests cannot be served together on this node "
            "(their constraints, or requests competing for the same devices)",
        )

    def _alone(self, key: str, request: DeviceRequest, alternative: SubRequest) -> Shortfall | None:
        """Why ``alternative`` cannot be served even alone on this node; None if it can."""
        matching = self.matching(alternative)
        free = sum(
            1
            for d in matching
            if self._free(alternative, d.id)
            and self._counted(alternative, d)
            and self._room(alternative, d)
        )
        total = len(matching)
        name, device_class = request.name, alternative.device_class
        if alternative.mode != ALLOCATION_MODE_ALL:
            wanted = alternative.count
            return (
                None if free >= wanted else Shortfall(key, name, device_class, wanted, free, total)
            )
        incomplete = next((d.pool for d in self.devices if not d.pool.complete), None)
        if incomplete is not None:
            reason = (
                f"it asks for all devices, and pool {incomplete.label} is being updated (not "
                "all of its slices are published)"
            )
            return Shortfall(key, name, device_class, total, free, total, reason=reason)
        if not matching:
            return Shortfall(key, name, device_class, 1, 0, 0)
        return None if free == total else Shortfall(key, name, device_class, total, free, total)
