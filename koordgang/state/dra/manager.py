"""The scheduler's one boundary to Dynamic Resource Allocation: which devices each node has,
which classes select them, which claims exist, which DeviceTaintRules taint them, and which
devices are in use.

Pure and synchronous. The plugin, the snapshots' views and the what-if all ask it; the
intake feeds it through its stores (``slice_store``, ``class_store``, ``claim_store``,
``taint_rule_store``). It is the cache's one extension (``state/extensions.py``): the cache
keeps nodes and pods and tells it when a pod is given up; every update returns the nodes
whose devices, or the use of them, changed, and whoever applied it marks them changed in the
cache.

- **Devices** come from ResourceSlices gathered into pools (``pools.py``).
- **In use** is a device that some claim's ``status.allocation`` names, whoever wrote it, or
  that this scheduler allocated to a claim and has not seen written yet (a claim *in flight*:
  an assumed allocation, dropped when the claim shows an allocation, is deleted, or its pod is
  given up). A device held by two claims is a conflict: another scheduler allocated it at the
  same time.
- **Shared** is a device allocated to several claims at once (``allowMultipleAllocations``):
  each allocation is a share of it (``shareID``) consuming part of its capacities, and it is
  never in use as a whole; what its shares consume together must stay within each capacity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, cast

from koordgang.model.dra import (
    DEVICE_CLASS_PREFIX,
    AllocatedDevice,
    ClaimAllocation,
    DeviceClassInfo,
    DeviceId,
    DeviceTaint,
    DeviceTaintRuleInfo,
    ResourceClaimInfo,
    ResourceSliceInfo,
    pending_key,
)
from koordgang.model.pod import PodInfo
from koordgang.model.quantity import format_quantity
from koordgang.state.dra.pools import Device, Pool, Pools, Regathered
from koordgang.state.dra.shares import Shares
from koordgang.state.store import Store, StoreChange, StoreOf

if TYPE_CHECKING:
    from koordgang.state.dra.view import ClaimView
    from koordgang.state.snapshot import Snapshot

__all__ = ["DraManager"]

#: How a log line names a pool skipped as invalid, and a device two claims hold.
INVALID_POOL = "resource pool skipped: invalid"
DOUBLE_ALLOCATION = "device allocated to more than one claim"
OVERDRAWN = "shared device allocated beyond its capacity"


@dataclass(slots=True, frozen=True)
class _InFlight:
    pod_uid: str
    allocation: ClaimAllocation


class DraManager:
    def __init__(self) -> None:
        self._pools = Pools()
        self._classes: dict[str, DeviceClassInfo] = {}
        self._claims: dict[str, ResourceClaimInfo] = {}
        self._taint_rules: dict[str, DeviceTaintRuleInfo] = {}
        #: device -> the claims whose allocation (written, or in flight) names it; results
        #: given for admin access hold nothing.
        self._holders: dict[DeviceId, set[str]] = {}
        #: The shares of shared devices (written, or in flight).
        self._shares = Shares()
        #: claim key -> the devices its written allocation names for admin access.
        self._admin: dict[str, tuple[DeviceId, ...]] = {}
        #: claim key -> this scheduler's allocation of it, not yet seen written.
        self._in_flight: dict[str, _InFlight] = {}
        self._in_flight_by_pod: dict[str, list[str]] = {}
        #: pod uid -> claims whose ``reservedFor`` names it.
        self._reserving: dict[str, set[str]] = {}
        #: pod uid -> claims this scheduler placed it as a consumer of, not seen in their
        #: ``reservedFor`` yet (a claim names 256 consumers at most).
        self._consuming: dict[str, set[str]] = {}
        #: claim key -> what to call when the claim changes (binding conditions awaited).
        self._watchers: dict[str, list[Callable[[], None]]] = {}
        #: Changes of the classes since the manager was made, for keys of what derives from
        #: them.
        self.class_generation = 0
        #: Extended resource -> the DeviceClass that provides it through DRA, as of
        #: ``_extended_generation``.
        self._extended: dict[str, str] = {}
        self._extended_generation = -1
        #: The stores of the four kinds, as the intake feeds them.
        self.slice_store: Store[ResourceSliceInfo] = StoreOf(
            self.upsert_slice, self.remove_slice, self.replace_slices
        )
        self.class_store: Store[DeviceClassInfo] = StoreOf(
            self.upsert_class, self.remove_class, self.replace_classes
        )
        self.claim_store: Store[ResourceClaimInfo] = StoreOf(
            self.upsert_claim, self.remove_claim, self.replace_claims
        )
        self.taint_rule_store: Store[DeviceTaintRuleInfo] = StoreOf(
            self._upsert_rule, self._remove_rule, self._replace_rules
        )

    # -- the cache's extension -----------------------------------------------------------------

    def pod_released(self, uid: str) -> StoreChange:
        """Drops what is in flight for ``uid`` (its placement was given up, or it ended)."""
        change = StoreChange()
        for key in list(self._in_flight_by_pod.get(uid, ())):
            self._drop_in_flight(key, change)
        self._consuming.pop(uid, None)
        return change

    def new_view(self, snapshot: Snapshot) -> ClaimView:
        from koordgang.state.dra.view import ClaimView

        return ClaimView(self, snapshot)

    def view(self, snapshot: Snapshot) -> ClaimView:
        """The claims and devices of ``snapshot``'s what-if."""
        from koordgang.state.dra.view import ClaimView

        return cast(ClaimView, snapshot.view_of(self))

    # -- reading -------------------------------------------------------------------------------

    def devices_on(self, node: str) -> tuple[Device, ...]:
        return self._pools.devices_on(node)

    def network_devices(self) -> Iterable[Device]:
        """Network-attached devices (``Device.available`` says on which nodes)."""
        return self._pools.network_devices()

    def device(self, device_id: DeviceId) -> Device | None:
        return self._pools.device(device_id)

    def device_class(self, name: str) -> DeviceClassInfo | None:
        return self._classes.get(name)

    def classes(self) -> Iterable[DeviceClassInfo]:
        return self._classes.values()

    def claim(self, key: str) -> ResourceClaimInfo | None:
        return self._claims.get(key)

    def extended_class(self, resource: str) -> str | None:
        """The DeviceClass that provides the extended resource ``resource`` through DRA (its
        ``extendedResourceName``, or ``deviceclass.resource.kubernetes.io/<class>``), None if
        none does. A class naming it explicitly wins over the implicit name; among several,
        the first by name (the mapping must name one class)."""
        if self._extended_generation != self.class_generation:
            self._extended_generation = self.class_generation
            extended: dict[str, str] = {}
            for info in sorted(self._classes.values(), key=lambda c: c.name):
                extended.setdefault(f"{DEVICE_CLASS_PREFIX}{info.name}", info.name)
            for info in sorted(self._classes.values(), key=lambda c: c.name, reverse=True):
                if info.extended_resource_name:
                    extended[info.extended_resource_name] = info.name
            self._extended = extended
        return self._extended.get(resource)

    def extended_claims_of(self, namespace: str, pod_uid: str) -> list[ResourceClaimInfo]:
        """The special claims made for the pod's DRA-backed extended resources (annotated,
        owned by it)."""
        return [
            c
            for c in self._claims.values()
            if c.extended and c.owner_pod_uid == pod_uid and c.namespace == namespace
        ]

    def claims(self) -> Iterable[ResourceClaimInfo]:
        return self._claims.values()

    def pools(self) -> Iterable[Pool]:
        return self._pools.pools()

    def taint_rules(self) -> Iterable[DeviceTaintRuleInfo]:
        return self._taint_rules.values()

    @property
    def has_taint_rules(self) -> bool:
        return bool(self._taint_rules)

    def taints(self, device: Device) -> tuple[DeviceTaint, ...]:
        """The device's taints: its slice's, then those of the DeviceTaintRules that select it
        (as Kubernetes merges them)."""
        own = device.spec.taints
        if not self._taint_rules:
            return own
        ruled = tuple(r.taint for r in self._taint_rules.values() if r.selects(device.id))
        return own + ruled if ruled else own

    def allocation(self, key: str) -> ClaimAllocation | None:
        """The claim's allocation: as written, or as in flight from this scheduler."""
        claim = self._claims.get(key)
        if claim is not None and claim.allocation is not None:
            return claim.allocation
        in_flight = self._in_flight.get(key)
        return None if in_flight is None else in_flight.allocation

    def is_in_flight(self, key: str) -> bool:
        return key in self._in_flight

    def in_flight_for(self, pod_uid: str) -> dict[str, ClaimAllocation]:
        """The allocations this scheduler made for ``pod_uid``'s claims, not seen written."""
        return {
            key: self._in_flight[key].allocation for key in self._in_flight_by_pod.get(pod_uid, ())
        }

    def holders(self, device_id: DeviceId) -> set[str]:
        return self._holders.get(device_id) or set()

    def in_use(self, device_id: DeviceId) -> bool:
        """A claim holds the device as a whole (a share of a shared device does not)."""
        return bool(self._holders.get(device_id))

    def shares(self, device_id: DeviceId) -> dict[str, tuple[AllocatedDevice, ...]]:
        """The shares of a shared device, by claim key (written, or in flight)."""
        return self._shares.of(device_id)

    def consumed(self, device_id: DeviceId) -> dict[str, Fraction] | None:
        """What the shares of a shared device consume together, by capacity; None while it
        has none."""
        return self._shares.consumed(device_id)

    def overdrawn(self, device_id: DeviceId) -> str:
        """The capacity of a shared device that its shares consume more of than it has
        (``memory: 100Gi of 80Gi``), "" if none."""
        consumed = self.consumed(device_id)
        device = self._pools.device(device_id)
        if not consumed or device is None:
            return ""
        for name, amount in sorted(consumed.items()):
            capacity = device.spec.capacity.get(name)
            if capacity is not None and amount > capacity.value:
                return f"{name}: {format_quantity(amount)} of {format_quantity(capacity.value)}"
        return ""

    def claims_reserving(self, pod_uid: str) -> set[str]:
        return self._reserving.get(pod_uid) or set()

    def consumers(self, key: str) -> int:
        """How many consumers the claim names, or will once this scheduler's writes land."""
        claim = self._claims.get(key)
        named = () if claim is None else claim.reserved_for
        pending = sum(
            1
            for uid, keys in self._consuming.items()
            if key in keys and not any(c.uid == uid for c in named)
        )
        return len(named) + pending

    def conflicts(self) -> Iterator[tuple[DeviceId, tuple[str, ...]]]:
        for device_id, holders in self._holders.items():
            if len(holders) > 1:
                yield device_id, tuple(sorted(holders))

    def counts(self) -> dict[str, int]:
        """Sizes for the gauges: devices (in use, held by two claims), claims (allocated,
        in flight), invalid pools."""
        devices = list(self._pools.devices())
        held = [self._holders.get(d.id) or self._shares.shared(d.id) for d in devices]
        allocated = sum(1 for c in self._claims.values() if c.allocation is not None)
        admin = {device_id for ids in self._admin.values() for device_id in ids}
        return {
            "devices": len(held),
            "tainted": sum(1 for d in devices if any(t.blocks for t in self.taints(d))),
            "admin": len(admin),
            "in_use": sum(1 for h in held if h),
            "double": sum(1 for h in self._holders.values() if len(h) > 1),
            "claims": len(self._claims),
            "allocated": allocated,
            "in_flight": sum(1 for k in self._in_flight if k in self._claims),
            "invalid_pools": sum(1 for p in self._pools.pools() if p.invalid),
        }

    def allocations_of(self, pod: PodInfo) -> dict[str, ClaimAllocation]:
        """The allocations (written or in flight) of the claims ``pod`` names, by claim key."""
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

    def claims_left_behind(self, departed: Callable[[str], bool]) -> list[str]:
        """Allocated claims whose consumers are all pods that are ``departed`` (gone,
        finished or being deleted): the resourceclaim controller deallocates them soon, and a
        what-if may count their devices as free."""
        left: list[str] = []
        for claim in self._claims.values():
            if claim.allocation is None or not claim.reserved_for:
                continue
            if all(c.is_pod and departed(c.uid) for c in claim.reserved_for):
                left.append(claim.key)
        return left

    # -- slices --------------------------------------------------------------------------------

    def upsert_slice(self, info: ResourceSliceInfo) -> StoreChange:
        return self._regathered(self._pools.upsert(info))

    def remove_slice(self, name: str) -> StoreChange:
        return self._regathered(self._pools.remove(name))

    def replace_slices(self, infos: Iterable[ResourceSliceInfo]) -> StoreChange:
        return self._regathered(self._pools.replace(infos))

    @staticmethod
    def _regathered(regathered: Regathered) -> StoreChange:
        change = StoreChange(changed=True, nodes=regathered.nodes)
        for label, reason in regathered.invalid:
            change.warnings.append((INVALID_POOL, {"pool": label, "reason": reason}))
        return change

    # -- classes -------------------------------------------------------------------------------

    def upsert_class(self, info: DeviceClassInfo) -> StoreChange:
        old = self._classes.get(info.name)
        self._classes[info.name] = info
        changed = old is None or old.resource_version != info.resource_version
        if changed:
            self.class_generation += 1
        return StoreChange(changed=changed)

    def remove_class(self, name: str) -> StoreChange:
        if self._classes.pop(name, None) is None:
            return StoreChange()
        self.class_generation += 1
        return StoreChange(changed=True)

    def replace_classes(self, infos: Iterable[DeviceClassInfo]) -> StoreChange:
        self._classes = {info.name: info for info in infos}
        self.class_generation += 1
        return StoreChange(changed=True)

    # -- device taint rules --------------------------------------------------------------------

    def _upsert_rule(self, info: DeviceTaintRuleInfo) -> StoreChange:
        old = self._taint_rules.get(info.name)
        self._taint_rules[info.name] = info
        if old == info:
            return StoreChange()
        return self._ruled((old, info))

    def _remove_rule(self, name: str) -> StoreChange:
        old = self._taint_rules.pop(name, None)
        return StoreChange() if old is None else self._ruled((old,))

    def _replace_rules(self, infos: Iterable[DeviceTaintRuleInfo]) -> StoreChange:
        old = list(self._taint_rules.values())
        self._taint_rules = {info.name: info for info in infos}
        return self._ruled((*old, *self._taint_rules.values()))

    def _ruled(self, rules: Iterable[DeviceTaintRuleInfo | None]) -> StoreChange:
        """The nodes whose devices these rules select: what they offer changed (a taint came,
        or went)."""
        selecting = [r for r in rules if r is not None]
        nodes = {
            device.node
            for device in self._pools.devices()
            if any(r.selects(device.id) for r in selecting)
        }
        return StoreChange(changed=True, nodes=nodes)

    # -- claims --------------------------------------------------------------------------------

    def watch_claim(self, key: str, wake: Callable[[], None]) -> Callable[[], None]:
        """Calls ``wake`` whenever the claim ``key`` changes or goes, until the returned
        function is called."""
        self._watchers.setdefault(key, []).append(wake)

        def unwatch() -> None:
            watchers = self._watchers.get(key, [])
            if wake in watchers:
                watchers.remove(wake)
            if not watchers:
                self._watchers.pop(key, None)

        return unwatch

    def _wake(self, key: str) -> None:
        for wake in list(self._watchers.get(key, ())):
            wake()

    def upsert_claim(self, claim: ResourceClaimInfo) -> StoreChange:
        change = self._upsert_claim(claim)
        self._wake(claim.key)
        return change

    def _upsert_claim(self, claim: ResourceClaimInfo) -> StoreChange:
        old = self._claims.get(claim.key)
        change = StoreChange(
            changed=True,
            added=old is None,
            released=old is not None and old.allocation is not None and claim.allocation is None,
        )
        self._claims[claim.key] = claim
        if old is not None and old.uid != claim.uid:
            # Deleted and made again under the same name: the old one's assumption is void.
            self._drop_in_flight(claim.key, change)
        self._unreserve(old)
        for consumer in claim.reserved_for:
            self._reserving.setdefault(consumer.uid, set()).add(claim.key)
            consuming = self._consuming.get(consumer.uid)
            if consuming is not None:
                # Named now: counted by the claim itself from here on.
                consuming.discard(claim.key)
                if not consuming:
                    del self._consuming[consumer.uid]
        if claim.allocation is not None:
            # Written: the truth from now on, whatever this scheduler assumed.
            self._drop_in_flight(claim.key, change)
            if claim.extended and claim.owner_pod_uid:
                # The special claim made for a pod's extended resources, held until now
                # under the key it had before it existed.
                self._drop_in_flight(pending_key(claim.namespace, claim.owner_pod_uid), change)
        old_devices = () if old is None or old.allocation is None else old.allocation.held_ids()
        new_devices = () if claim.allocation is None else claim.allocation.held_ids()
        self._note_admin(claim)
        if old_devices != new_devices:
            self._release(claim.key, old_devices, change)
            self._hold(claim.key, new_devices, change)
        self._share(claim.key, self._current_shares(claim.key), change)
        return change

    def remove_claim(self, key: str) -> StoreChange:
        self._wake(key)
        change = StoreChange()
        old = self._claims.pop(key, None)
        change.changed = old is not None
        self._admin.pop(key, None)
        self._unreserve(old)
        self._drop_in_flight(key, change)
        if old is not None and old.allocation is not None:
            self._release(key, old.allocation.held_ids(), change)
        self._share(key, (), change)
        return change

    def replace_claims(self, claims: Iterable[ResourceClaimInfo]) -> StoreChange:
        fresh = {claim.key: claim for claim in claims}
        change = StoreChange(changed=True)
        for key in [k for k in self._claims if k not in fresh]:
            sub = self.remove_claim(key)
            change.nodes |= sub.nodes
        for claim in fresh.values():
            sub = self.upsert_claim(claim)
            change.nodes |= sub.nodes
            change.grew = change.grew or sub.grew
            change.warnings.extend(sub.warnings)
        return change

    def _note_admin(self, claim: ResourceClaimInfo) -> None:
        allocation = claim.allocation
        admin = () if allocation is None else allocation.device_ids()
        if admin and allocation is not None:
            held = set(allocation.held_ids())
            admin = tuple(d for d in admin if d not in held)
        if admin:
            self._admin[claim.key] = admin
        else:
            self._admin.pop(claim.key, None)

    def _unreserve(self, old: ResourceClaimInfo | None) -> None:
        if old is None:
            return
        for consumer in old.reserved_for:
            keys = self._reserving.get(consumer.uid)
            if keys is not None:
                keys.discard(old.key)
                if not keys:
                    del self._reserving[consumer.uid]

    # -- claims in flight ----------------------------------------------------------------------

    def assume(
        self,
        pod_uid: str,
        allocations: Mapping[str, ClaimAllocation],
        consuming: Iterable[str] = (),
    ) -> StoreChange:
        """This scheduler allocated these claims for ``pod_uid``: their devices are in use
        until the claims show an allocation (or the pod is given up). The pod is placed as a
        consumer of the claims ``consuming`` (those allocated here among them), counted until
        their ``reservedFor`` names it."""
        change = StoreChange()
        keys = set(consuming) - self.claims_reserving(pod_uid)
        if keys:
            self._consuming.setdefault(pod_uid, set()).update(keys)
        for key, allocation in allocations.items():
            claim = self._claims.get(key)
            if claim is not None and claim.allocation is not None:
                continue  # written already (a shared claim): nothing to assume
            self._drop_in_flight(key, change)
            self._in_flight[key] = _InFlight(pod_uid, allocation)
            self._in_flight_by_pod.setdefault(pod_uid, []).append(key)
            self._hold(key, allocation.held_ids(), change)
            self._share(key, allocation.shares(), change)
        return change

    def _drop_in_flight(self, key: str, change: StoreChange) -> None:
        in_flight = self._in_flight.pop(key, None)
        if in_flight is None:
            return
        keys = self._in_flight_by_pod.get(in_flight.pod_uid)
        if keys is not None:
            if key in keys:
                keys.remove(key)
            if not keys:
                del self._in_flight_by_pod[in_flight.pod_uid]
        claim = self._claims.get(key)
        written = () if claim is None or claim.allocation is None else claim.allocation.held_ids()
        unwritten = tuple(d for d in in_flight.allocation.held_ids() if d not in written)
        self._release(key, unwritten, change)
        self._share(key, self._current_shares(key), change)

    def _current_shares(self, key: str) -> tuple[AllocatedDevice, ...]:
        """The claim's shares as its allocation (written, else in flight) has them."""
        allocation = self.allocation(key)
        return () if allocation is None else allocation.shares()

    # -- holding -------------------------------------------------------------------------------

    def _hold(self, key: str, devices: Iterable[DeviceId], change: StoreChange) -> None:
        for device_id in devices:
            holders = self._holders.setdefault(device_id, set())
            holders.add(key)
            if len(holders) > 1:
                change.warnings.append(
                    (
                        DOUBLE_ALLOCATION,
                        {"device": str(device_id), "claims": ", ".join(sorted(holders))},
                    )
                )
            self._note(device_id, change, grew=True)

    def _share(self, key: str, shares: tuple[AllocatedDevice, ...], change: StoreChange) -> None:
        """The claim's shares of shared devices are ``shares`` from now on."""
        for device_id, fuller in self._shares.set(key, shares):
            over = self.overdrawn(device_id) if fuller else ""
            if over:
                holders = ", ".join(sorted(self._shares.of(device_id)))
                change.warnings.append(
                    (OVERDRAWN, {"device": str(device_id), "capacity": over, "claims": holders})
                )
            self._note(device_id, change, grew=fuller)

    def _release(self, key: str, devices: Iterable[DeviceId], change: StoreChange) -> None:
        for device_id in devices:
            holders = self._holders.get(device_id)
            if holders is None or key not in holders:
                continue
            holders.discard(key)
            if not holders:
                del self._holders[device_id]
            self._note(device_id, change, grew=False)

    def _note(self, device_id: DeviceId, change: StoreChange, *, grew: bool) -> None:
        device = self._pools.device(device_id)
        if device is None:
            return
        if not change.nodes:
            change.grew = grew
        elif not grew:
            change.grew = False
        change.nodes.add(device.node)
