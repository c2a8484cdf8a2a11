"""The scheduler's memory of Dynamic Resource Allocation: which devices each node has, which
classes select them, which claims exist, and which devices are in use.

Pure and synchronous, owned by the cache (``SchedulerCache.devices``): the cache tells the
nodes it names that their devices changed, so that every view and index of them is redone.

- **Devices** come from ResourceSlices, gathered into pools as Kubernetes gathers them: a pool
  is the slices of one driver and pool name at the highest ``generation`` seen (older ones are
  ignored); it is *incomplete* while fewer slices than ``resourceSliceCount`` are there (which
  blocks requests for ``All`` devices, not the others), and *invalid* when two of its devices
  share a name (none of its devices is then used). Only pools local to one node
  (``spec.nodeName``) give devices here; the others are kept, to say why they are not used.
- **In use** is a device that some claim's ``status.allocation`` names, whoever wrote it, or
  that this scheduler allocated to a claim and has not seen written yet (an *assumed*
  allocation, dropped when the claim shows an allocation, is deleted, or its pod is forgotten).
  A device held by two claims is a conflict: another scheduler allocated it at the same time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model.dra import (
    ClaimAllocation,
    DeviceClassInfo,
    DeviceId,
    ResourceClaimInfo,
    ResourceSliceInfo,
    SliceDevice,
)
from koordgang.model.pod import PodInfo

__all__ = ["Device", "DeviceLedger", "Elsewhere", "LedgerChange", "Pool"]


class Device:
    """A device that a node offers: its slice's description, and room for the answers of the
    selectors asked about it (a selector depends on the device alone: the answer holds until
    the device's slice changes, which makes a new ``Device``)."""

    __slots__ = ("answers", "facts", "id", "node", "pool", "spec")

    def __init__(self, device_id: DeviceId, node: str, spec: SliceDevice, pool: Pool) -> None:
        self.id = device_id
        self.node = node
        self.spec = spec
        self.pool = pool
        #: What selectors answered, by expression: True/False, or the error's message.
        self.answers: dict[str, bool | str] = {}
        #: What CEL reads of the device, made when first asked for (by the selector's owner).
        self.facts: Any = None

    def __repr__(self) -> str:
        return f"Device({self.id}, node={self.node})"


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

    @property
    def complete(self) -> bool:
        return len(self.slices) >= self.slice_count

    @property
    def label(self) -> str:
        return f"{self.driver}/{self.name}"


@dataclass(slots=True, eq=False)
class Elsewhere:
    """A pool whose devices are not local to one node: why koordgang does not allocate them
    yet, and its devices (node ""), for the selectors to say whether they would have served."""

    pool: Pool
    reason: str
    devices: list[Device] = field(default_factory=list)


@dataclass(slots=True)
class LedgerChange:
    """What an update changed: nodes whose devices or their use changed (``grew``: only got
    fuller), and problems to report."""

    nodes: set[str] = field(default_factory=set)
    grew: bool = False
    #: Pools that became invalid with this update: (pool label, reason).
    invalid: list[tuple[str, str]] = field(default_factory=list)
    #: Devices found held by two claims: (device, claim keys).
    conflicts: list[tuple[DeviceId, tuple[str, ...]]] = field(default_factory=list)


@dataclass(slots=True, frozen=True)
class _Assumed:
    pod_uid: str
    allocation: ClaimAllocation


class DeviceLedger:
    def __init__(self) -> None:
        self._slices: dict[str, ResourceSliceInfo] = {}
        #: Slice names per pool (every generation), to regather a pool when one changes.
        self._pool_slices: dict[tuple[str, str], set[str]] = {}
        self._pools: dict[tuple[str, str], Pool] = {}
        self._classes: dict[str, DeviceClassInfo] = {}
        self._claims: dict[str, ResourceClaimInfo] = {}
        #: Devices of valid pools local to each node, in a stable order.
        self._by_node: dict[str, tuple[Device, ...]] = {}
        self._devices: dict[DeviceId, Device] = {}
        #: Pools not local to one node, by label, with why their devices are not used.
        self._elsewhere: dict[str, Elsewhere] = {}
        #: device -> the claims whose allocation (written, or assumed) names it.
        self._holders: dict[DeviceId, set[str]] = {}
        #: claim key -> this scheduler's allocation of it, not yet seen written.
        self._assumed: dict[str, _Assumed] = {}
        self._assumed_by_pod: dict[str, list[str]] = {}
        #: pod uid -> claims whose ``reservedFor`` names it.
        self._reserving: dict[str, set[str]] = {}
        #: Changes since the ledger was made, for keys of things derived from classes.
        self.class_generation = 0

    # -- reading -------------------------------------------------------------------------------

    def devices_on(self, node: str) -> tuple[Device, ...]:
        return self._by_node.get(node, ())

    def device(self, device_id: DeviceId) -> Device | None:
        return self._devices.get(device_id)

    def device_class(self, name: str) -> DeviceClassInfo | None:
        return self._classes.get(name)

    def classes(self) -> Iterable[DeviceClassInfo]:
        return self._classes.values()

    def claim(self, key: str) -> ResourceClaimInfo | None:
        return self._claims.get(key)

    def claims(self) -> Iterable[ResourceClaimInfo]:
        return self._claims.values()

    def pools(self) -> Iterable[Pool]:
        return self._pools.values()

    def pools_elsewhere(self) -> Iterable[Elsewhere]:
        """Pools whose devices are not local to one node (never allocated here, yet), with
        their devices, so that a pod those devices might serve can be told why not."""
        return self._elsewhere.values()

    def allocation(self, key: str) -> ClaimAllocation | None:
        """The claim's allocation: as written, or as assumed by this scheduler."""
        claim = self._claims.get(key)
        if claim is not None and claim.allocation is not None:
            return claim.allocation
        assumed = self._assumed.get(key)
        return None if assumed is None else assumed.allocation

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed

    def assumed_for(self, pod_uid: str) -> dict[str, ClaimAllocation]:
        """The allocations this scheduler made for ``pod_uid``'s claims, not seen written."""
        return {key: self._assumed[key].allocation for key in self._assumed_by_pod.get(pod_uid, ())}

    def holders(self, device_id: DeviceId) -> set[str]:
        return self._holders.get(device_id) or set()

    def in_use(self, device_id: DeviceId) -> bool:
        return bool(self._holders.get(device_id))

    def claims_reserving(self, pod_uid: str) -> set[str]:
        return self._reserving.get(pod_uid) or set()

    def conflicts(self) -> Iterator[tuple[DeviceId, tuple[str, ...]]]:
        for device_id, holders in self._holders.items():
            if len(holders) > 1:
                yield device_id, tuple(sorted(holders))

    def counts(self) -> dict[str, int]:
        """Sizes for the gauges: devices (in use, held by two claims), claims (allocated,
        assumed), invalid pools."""
        held = [self._holders.get(d) for d in self._devices]
        allocated = sum(1 for c in self._claims.values() if c.allocation is not None)
        return {
            "devices": len(self._devices),
            "in_use": sum(1 for h in held if h),
            "double": sum(1 for h in held if h is not None and len(h) > 1),
            "claims": len(self._claims),
            "allocated": allocated,
            "assumed": sum(1 for k in self._assumed if k in self._claims),
            "invalid_pools": sum(1 for p in self._pools.values() if p.invalid),
        }

    def allocations_of(self, pod: PodInfo) -> dict[str, ClaimAllocation]:
        """The allocations (written or assumed) of the claims ``pod`` names, by claim key."""
        found: dict[str, ClaimAllocation] = {}
        for ref in pod.resource_claims:
            name = ref.claim_name or pod.claim_statuses.get(ref.name) or ""
            if not name:
                continue
            key = f"{pod.namespace}/{name}"
            allocation = self.allocation(key)
            if allocation is not None:
                found[key] = allocation
        return found

    # -- slices --------------------------------------------------------------------------------

    def upsert_slice(self, info: ResourceSliceInfo) -> LedgerChange:
        old = self._slices.get(info.name)
        self._slices[info.name] = info
        self._pool_slices.setdefault(info.pool_key, set()).add(info.name)
        change = LedgerChange()
        if old is not None and old.pool_key != info.pool_key:
            self._pool_slices[old.pool_key].discard(info.name)
            self._regather(old.pool_key, change)
        self._regather(info.pool_key, change)
        return change

    def remove_slice(self, name: str) -> LedgerChange:
        change = LedgerChange()
        old = self._slices.pop(name, None)
        if old is not None:
            self._pool_slices[old.pool_key].discard(name)
            self._regather(old.pool_key, change)
        return change

    def replace_slices(self, infos: Iterable[ResourceSliceInfo]) -> LedgerChange:
        fresh = {info.name: info for info in infos}
        change = LedgerChange()
        keys = {s.pool_key for s in self._slices.values()} | {s.pool_key for s in fresh.values()}
        self._slices = fresh
        self._pool_slices = {}
        for info in fresh.values():
            self._pool_slices.setdefault(info.pool_key, set()).add(info.name)
        for key in sorted(keys):
            self._regather(key, change)
        return change

    def _regather(self, key: tuple[str, str], change: LedgerChange) -> None:
        """Gathers one pool anew from its slices and puts its devices on their nodes."""
        names = self._pool_slices.get(key) or set()
        slices = [self._slices[n] for n in names if n in self._slices]
        old = self._pools.get(key)
        touched: set[str] = set()
        if old is not None:
            for info in old.slices.values():
                if info.node_name:
                    touched.add(info.node_name)
        label = f"{key[0]}/{key[1]}"
        self._elsewhere.pop(label, None)
        if not slices:
            self._pools.pop(key, None)
            self._pool_slices.pop(key, None)
            self._reindex(touched, change)
            return
        generation = max(s.generation for s in slices)
        current = sorted((s for s in slices if s.generation == generation), key=lambda s: s.name)
        pool = Pool(key[0], key[1], generation, {s.name: s for s in current})
        pool.slice_count = max(s.slice_count for s in current)
        seen: set[str] = set()
        for info in current:
            if info.node_name:
                touched.add(info.node_name)
            elif info.unsupported:
                known = self._elsewhere.setdefault(label, Elsewhere(pool, info.unsupported))
                known.devices.extend(
                    Device(DeviceId(info.driver, info.pool, spec.name), "", spec, pool)
                    for spec in info.devices
                )
                self._elsewhere[label] = known
            for device in info.devices:
                if device.name in seen and not pool.invalid:
                    pool.invalid = f"duplicate device name {device.name!r}"
                seen.add(device.name)
        if pool.invalid and (old is None or old.invalid != pool.invalid):
            change.invalid.append((label, pool.invalid))
        self._pools[key] = pool
        self._reindex(touched, change)

    def _reindex(self, nodes: set[str], change: LedgerChange) -> None:
        """Rebuilds the device lists of ``nodes`` from the pools (a few pools per node)."""
        if not nodes:
            return
        by_node: dict[str, list[Device]] = {n: [] for n in nodes}
        for pool in sorted(self._pools.values(), key=lambda p: (p.driver, p.name)):
            if pool.invalid:
                continue
            for info in pool.slices.values():
                node = info.node_name
                if node not in by_node:
                    continue
                for spec in info.devices:
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

    # -- classes -------------------------------------------------------------------------------

    def upsert_class(self, info: DeviceClassInfo) -> bool:
        old = self._classes.get(info.name)
        self._classes[info.name] = info
        changed = old is None or old.resource_version != info.resource_version
        if changed:
            self.class_generation += 1
        return changed

    def remove_class(self, name: str) -> None:
        if self._classes.pop(name, None) is not None:
            self.class_generation += 1

    def replace_classes(self, infos: Iterable[DeviceClassInfo]) -> None:
        self._classes = {info.name: info for info in infos}
        self.class_generation += 1

    # -- claims --------------------------------------------------------------------------------

    def upsert_claim(self, claim: ResourceClaimInfo) -> LedgerChange:
        change = LedgerChange()
        old = self._claims.get(claim.key)
        self._claims[claim.key] = claim
        if old is not None and old.uid != claim.uid:
            # Deleted and made again under the same name: the old one's assumption is void.
            self._drop_assumed(claim.key, change)
        self._unreserve(old)
        for consumer in claim.reserved_for:
            self._reserving.setdefault(consumer.uid, set()).add(claim.key)
        if claim.allocation is not None:
            # Written: the truth from now on, whatever this scheduler assumed.
            self._drop_assumed(claim.key, change)
        old_devices = () if old is None or old.allocation is None else old.allocation.device_ids()
        new_devices = () if claim.allocation is None else claim.allocation.device_ids()
        if old_devices != new_devices:
            self._release(claim.key, old_devices, change)
            self._hold(claim.key, new_devices, change)
        return change

    def remove_claim(self, key: str) -> LedgerChange:
        change = LedgerChange()
        old = self._claims.pop(key, None)
        self._unreserve(old)
        self._drop_assumed(key, change)
        if old is not None and old.allocation is not None:
            self._release(key, old.allocation.device_ids(), change)
        return change

    def replace_claims(self, claims: Iterable[ResourceClaimInfo]) -> LedgerChange:
        fresh = {claim.key: claim for claim in claims}
        change = LedgerChange()
        for key in [k for k in self._claims if k not in fresh]:
            sub = self.remove_claim(key)
            change.nodes |= sub.nodes
        for claim in fresh.values():
            sub = self.upsert_claim(claim)
            change.nodes |= sub.nodes
            change.grew = change.grew or sub.grew
            change.conflicts.extend(sub.conflicts)
        return change

    def _unreserve(self, old: ResourceClaimInfo | None) -> None:
        if old is None:
            return
        for consumer in old.reserved_for:
            keys = self._reserving.get(consumer.uid)
            if keys is not None:
                keys.discard(old.key)
                if not keys:
                    del self._reserving[consumer.uid]

    # -- assumed allocations -------------------------------------------------------------------

    def assume(self, pod_uid: str, allocations: Mapping[str, ClaimAllocation]) -> LedgerChange:
        """This scheduler allocated these claims for ``pod_uid``: their devices are in use
        until the claims show an allocation (or the pod is forgotten)."""
        change = LedgerChange()
        for key, allocation in allocations.items():
            claim = self._claims.get(key)
            if claim is not None and claim.allocation is not None:
                continue  # written already (a shared claim): nothing to assume
            self._drop_assumed(key, change)
            self._assumed[key] = _Assumed(pod_uid, allocation)
            self._assumed_by_pod.setdefault(pod_uid, []).append(key)
            self._hold(key, allocation.device_ids(), change)
        return change

    def forget(self, pod_uid: str) -> LedgerChange:
        """Drops what was assumed for ``pod_uid`` (its placement was given up)."""
        change = LedgerChange()
        for key in list(self._assumed_by_pod.get(pod_uid, ())):
            self._drop_assumed(key, change)
        return change

    def _drop_assumed(self, key: str, change: LedgerChange) -> None:
        assumed = self._assumed.pop(key, None)
        if assumed is None:
            return
        keys = self._assumed_by_pod.get(assumed.pod_uid)
        if keys is not None:
            if key in keys:
                keys.remove(key)
            if not keys:
                del self._assumed_by_pod[assumed.pod_uid]
        claim = self._claims.get(key)
        written = () if claim is None or claim.allocation is None else claim.allocation.device_ids()
        unwritten = tuple(d for d in assumed.allocation.device_ids() if d not in written)
        self._release(key, unwritten, change)

    # -- holding -------------------------------------------------------------------------------

    def _hold(self, key: str, devices: Iterable[DeviceId], change: LedgerChange) -> None:
        for device_id in devices:
            holders = self._holders.setdefault(device_id, set())
            holders.add(key)
            if len(holders) > 1:
                change.conflicts.append((device_id, tuple(sorted(holders))))
            self._note(device_id, change, grew=True)

    def _release(self, key: str, devices: Iterable[DeviceId], change: LedgerChange) -> None:
        for device_id in devices:
            holders = self._holders.get(device_id)
            if holders is None or key not in holders:
                continue
            holders.discard(key)
            if not holders:
                del self._holders[device_id]
            self._note(device_id, change, grew=False)

    def _note(self, device_id: DeviceId, change: LedgerChange, *, grew: bool) -> None:
        device = self._devices.get(device_id)
        if device is None:
            return
        if not change.nodes:
            change.grew = grew
        elif not grew:
            change.grew = False
        change.nodes.add(device.node)
