"""Devices from ResourceSlices, gathered into pools as Kubernetes gathers them.

A pool is the slices of one driver and pool name at the highest ``generation`` seen (older
ones are ignored); it is *incomplete* while fewer slices than ``resourceSliceCount`` are there
(which blocks requests for ``All`` devices, not the others), and *invalid* when two of its
devices share a name (none of its devices is then used). A device is local to one node
(``spec.nodeName``, or the device's own ``nodeName`` with ``perDeviceNodeSelection``), or
network-attached: offered on every node its selector (the slice's ``nodeSelector`` or the
device's) matches, or on all nodes (``allNodes``).
A network-attached device is one device whichever node asks: in use for one, for all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from koordgang.model.affinity import NodeSelector, parse_node_selector
from koordgang.model.dra import DeviceId, ResourceSliceInfo, SliceDevice

__all__ = ["Device", "Pool", "Pools"]


class Device:
    """A device that a node offers: its slice's description, and room for the answers of the
    selectors asked about it (a selector depends on the device alone: the answer holds until
    the device's slice changes, which makes a new ``Device``)."""

    __slots__ = ("answers", "facts", "id", "node", "pool", "reach", "reach_raw", "spec")

    def __init__(
        self,
        device_id: DeviceId,
        node: str,
        spec: SliceDevice,
        pool: Pool,
        reach_raw: Mapping[str, Any] | None = None,
    ) -> None:
        self.id = device_id
        #: Its node; "" for a network-attached device.
        self.node = node
        self.spec = spec
        self.pool = pool
        #: Where a network-attached device is: the nodes its selector matches (None: all).
        self.reach_raw = reach_raw
        self.reach: NodeSelector | None = (
            parse_node_selector(reach_raw) if reach_raw is not None else None
        )
        #: What selectors answered, by expression: True/False, or the error's message.
        self.answers: dict[str, bool | str] = {}
        #: What CEL reads of the device, made when first asked for (by the selector's owner).
        self.facts: Any = None

    def __repr__(self) -> str:
        return f"Device({self.id}, node={self.node})"

    def available(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """The device is offered on this node."""
        if self.node:
            return self.node == node_name
        return self.reach is None or self.reach.matches(node_name, labels)


@dataclass(slots=True, eq=False)
class Pool:
    driver: str
    name: str
    generation: int = 0
    #: Slices at ``generation`` (by slice name), and how many there should be.
    slices: dict[str, ResourceSliceInfo] = field(default_factory=dict)
    slice_count: int = 1
    #: Why none of its devices are used ("" if they may be): duplicate device names.
    invalid: str = ""
    #: Its counter sets (``sharedCounters`` of its slices): name -> counter -> amount.
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return len(self.slices) >= self.slice_count

    @property
    def label(self) -> str:
        return f"{self.driver}/{self.name}"


@dataclass(slots=True)
class Regathered:
    """What gathering pools anew changed: the nodes whose device lists were redone ("" for
    all nodes: network-attached devices changed), and the pools that became invalid with it
    ((label, reason))."""

    nodes: set[str] = field(default_factory=set)
    invalid: list[tuple[str, str]] = field(default_factory=list)


class Pools:
    """The slices, the pools gathered from them, and the devices of each node."""

    def __init__(self) -> None:
        self._slices: dict[str, ResourceSliceInfo] = {}
        #: Slice names per pool (every generation), to regather a pool when one changes.
        self._pool_slices: dict[tuple[str, str], set[str]] = {}
        self._pools: dict[tuple[str, str], Pool] = {}
        #: Devices of valid pools local to each node, in a stable order.
        self._by_node: dict[str, tuple[Device, ...]] = {}
        self._devices: dict[DeviceId, Device] = {}
        #: Network-attached devices of valid pools, per pool.
        self._network: dict[tuple[str, str], tuple[Device, ...]] = {}

    # -- reading -------------------------------------------------------------------------------

    def devices_on(self, node: str) -> tuple[Device, ...]:
        return self._by_node.get(node, ())

    def device(self, device_id: DeviceId) -> Device | None:
        return self._devices.get(device_id)

    def devices(self) -> Iterable[Device]:
        return self._devices.values()

    def network_devices(self) -> Iterable[Device]:
        """Network-attached devices of every valid pool, in a stable order."""
        for key in sorted(self._network):
            yield from self._network[key]

    def pools(self) -> Iterable[Pool]:
        return self._pools.values()

    # -- slices --------------------------------------------------------------------------------

    def upsert(self, info: ResourceSliceInfo) -> Regathered:
        old = self._slices.get(info.name)
        self._slices[info.name] = info
        self._pool_slices.setdefault(info.pool_key, set()).add(info.name)
        change = Regathered()
        if old is not None and old.pool_key != info.pool_key:
            self._pool_slices[old.pool_key].discard(info.name)
            self._regather(old.pool_key, change)
        self._regather(info.pool_key, change)
        return change

    def remove(self, name: str) -> Regathered:
        change = Regathered()
        old = self._slices.pop(name, None)
        if old is not None:
            self._pool_slices[old.pool_key].discard(name)
            self._regather(old.pool_key, change)
        return change

    def replace(self, infos: Iterable[ResourceSliceInfo]) -> Regathered:
        fresh = {info.name: info for info in infos}
        change = Regathered()
        keys = {s.pool_key for s in self._slices.values()} | {s.pool_key for s in fresh.values()}
        self._slices = fresh
        self._pool_slices = {}
        for info in fresh.values():
            self._pool_slices.setdefault(info.pool_key, set()).add(info.name)
        for key in sorted(keys):
            self._regather(key, change)
        return change

    def _regather(self, key: tuple[str, str], change: Regathered) -> None:
        """Gathers one pool anew from its slices and puts its devices on their nodes."""
        names = self._pool_slices.get(key) or set()
        slices = [self._slices[n] for n in names if n in self._slices]
        old = self._pools.get(key)
        touched: set[str] = set()
        if old is not None:
            for info in old.slices.values():
                touched |= _nodes_of(info)
        label = f"{key[0]}/{key[1]}"
        old_network = self._network.pop(key, ())
        for gone in old_network:
            self._devices.pop(gone.id, None)
        if old_network:
            change.nodes.add("")
        if not slices:
            self._pools.pop(key, None)
            self._pool_slices.pop(key, None)
            self._reindex(touched, change)
            return
        generation = max(s.generation for s in slices)
        current = sorted((s for s in slices if s.generation == generation), key=lambda s: s.name)
        pool = Pool(key[0], key[1], generation, {s.name: s for s in current})
        pool.slice_count = max(s.slice_count for s in current)
        for info in current:
            for counter_set in info.counter_sets:
                pool.counter_sets[counter_set.name] = dict(counter_set.counters)
        seen: set[str] = set()
        for info in current:
            touched |= _nodes_of(info)
            for spec in info.devices:
                if spec.name in seen and not pool.invalid:
                    pool.invalid = f"duplicate device name {spec.name!r}"
                seen.add(spec.name)
        if pool.invalid and (old is None or old.invalid != pool.invalid):
            change.invalid.append((label, pool.invalid))
        self._pools[key] = pool
        if not pool.invalid:
            self._gather_network(key, pool, current, {d.id: d for d in old_network}, change)
        self._reindex(touched, change)

    def _gather_network(
        self,
        key: tuple[str, str],
        pool: Pool,
        current: list[ResourceSliceInfo],
        old: dict[DeviceId, Device],
        change: Regathered,
    ) -> None:
        devices: list[Device] = []
        for info in current:
            if info.node_name:
                continue
            for spec in info.devices:
                if info.per_device and spec.node_name:
                    continue
                reach = None
                if info.per_device:
                    reach = None if spec.all_nodes else spec.node_selector
                    if reach is None and not spec.all_nodes:
                        continue
                else:
                    reach = info.node_selector
                device_id = DeviceId(info.driver, info.pool, spec.name)
                known = old.get(device_id)
                if known is not None and known.spec is spec and known.reach_raw is reach:
                    known.pool = pool
                    devices.append(known)
                else:
                    devices.append(Device(device_id, "", spec, pool, reach))
        if devices:
            self._network[key] = tuple(devices)
            for device in devices:
                self._devices[device.id] = device
            change.nodes.add("")

    def _reindex(self, nodes: set[str], change: Regathered) -> None:
        """Rebuilds the device lists of ``nodes`` from the pools (a few pools per node)."""
        if not nodes:
            return
        by_node: dict[str, list[Device]] = {n: [] for n in nodes}
        for pool in sorted(self._pools.values(), key=lambda p: (p.driver, p.name)):
            if pool.invalid:
                continue
            for info in pool.slices.values():
                if info.node_name not in by_node and not info.per_device:
                    continue
                for spec in info.devices:
                    node = info.node_name or (spec.node_name if info.per_device else "")
                    if not node or node not in by_node:
                        continue
                    device_id = DeviceId(info.driver, info.pool, spec.name)
                    known = self._devices.get(device_id)
                    # The same description keeps its record, and with it the selectors'
                    # answers: a slice republished unchanged costs no evaluation.
                    if known is not None and known.spec is spec and known.node == node:
                        known.pool = pool
                        by_node[node].append(known)
                    else:
                        by_node[node].append(Device(device_id, node, spec, pool))
        for node in nodes:
            for device in self._by_node.get(node, ()):
                self._devices.pop(device.id, None)
        for node, devices in by_node.items():
            if devices:
                self._by_node[node] = tuple(devices)
                for device in devices:
                    self._devices[device.id] = device
            else:
                self._by_node.pop(node, None)
        change.nodes |= nodes


def _nodes_of(info: ResourceSliceInfo) -> set[str]:
    """The nodes that a slice's node-local devices are on."""
    if info.node_name:
        return {info.node_name}
    if info.per_device:
        return {spec.node_name for spec in info.devices if spec.node_name}
    return set()
