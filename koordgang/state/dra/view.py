"""The claims and devices of one snapshot: a what-if's allocations, and what it frees.

A snapshot's placements may allocate claims (``allocate``, for the pod placed just before);
its removals free the claims reserved for the pod removed alone, and those this scheduler
allocated for it. Both are differences from the DRA manager, kept here per claim and, for the
devices, per node; a fork starts with its parent's and copies a node's sets only when it
changes them. Each change marks its node on the snapshot (``Snapshot.touch``), so that the
verdicts kept for the node are asked again. A what-if may also add claims that exist in it
alone (``provisional``: made from the templates of pods not submitted yet). Shares of shared
devices (``allowMultipleAllocations``) are differences too: per device, how many shares this
view adds (or frees) and what they consume.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from koordgang.model.dra import ClaimAllocation, DeviceId, ResourceClaimInfo
from koordgang.state.dra.shares import total
from koordgang.state.store import StoreChange

if TYPE_CHECKING:
    from koordgang.state.dra.manager import DraManager
    from koordgang.state.snapshot import Placement, Snapshot

__all__ = ["ClaimView"]


class ClaimView:
    __slots__ = (
        "_claims",
        "_claims_of",
        "_consumed",
        "_consumers",
        "_freed",
        "_freed_by",
        "_manager",
        "_owned",
        "_provisional",
        "_reallocated",
        "_shares",
        "_snapshot",
        "_taken",
    )

    def __init__(
        self, manager: DraManager, snapshot: Snapshot, parent: ClaimView | None = None
    ) -> None:
        self._manager = manager
        self._snapshot = snapshot
        if parent is None:
            #: Claims whose allocation differs from the manager's here: allocated (for a pod
            #: placed here) or deallocated (None: the pods using them were removed here).
            self._claims: dict[str, ClaimAllocation | None] = {}
            #: uid -> the claims allocated here for the pod placed here.
            self._claims_of: dict[str, tuple[str, ...]] = {}
            #: uid -> the claims deallocated here because the pod was removed here.
            self._freed_by: dict[str, tuple[str, ...]] = {}
            #: Claims deallocated here, then allocated again here (for a pod placed here):
            #: undone, they are deallocated again, not as in the manager.
            self._reallocated: set[str] = set()
            #: Per node ("" for network-attached devices): devices allocated here, and
            #: devices in use in the manager that this view frees.
            self._taken: dict[str, set[DeviceId]] = {}
            self._freed: dict[str, set[DeviceId]] = {}
            #: Claims that exist in this what-if alone, by key.
            self._provisional: dict[str, ResourceClaimInfo] = {}
            #: uid -> the claims the pod placed here consumes, and per claim how many pods
            #: placed here consume it (a claim names 256 consumers at most).
            self._consumed: dict[str, tuple[str, ...]] = {}
            self._consumers: dict[str, int] = {}
            #: Per shared device: shares added here (negative: freed), and what they consume
            #: (values replaced, never changed in place: a fork shares them).
            self._shares: dict[DeviceId, tuple[int, dict[str, Fraction]]] = {}
        else:
            self._claims = dict(parent._claims) if parent._claims else {}
            self._claims_of = dict(parent._claims_of) if parent._claims_of else {}
            self._freed_by = dict(parent._freed_by) if parent._freed_by else {}
            self._reallocated = set(parent._reallocated) if parent._reallocated else set()
            self._taken = dict(parent._taken) if parent._taken else {}
            self._freed = dict(parent._freed) if parent._freed else {}
            self._provisional = parent._provisional
            self._consumed = dict(parent._consumed) if parent._consumed else {}
            self._consumers = dict(parent._consumers) if parent._consumers else {}
            self._shares = dict(parent._shares) if parent._shares else {}
        #: Nodes whose sets belong to this view alone (a fork shares its parent's).
        self._owned: set[str] = set()

    # -- the snapshot's part -------------------------------------------------------------------

    def fork(self, snapshot: Snapshot) -> ClaimView:
        return ClaimView(self._manager, snapshot, self)

    def rebase(self, parent: Snapshot) -> None:
        self._snapshot = parent

    def unplaced(self, uid: str) -> None:
        allocated = self._claims_of.pop(uid, None)
        if allocated:
            self._undo(allocated)
        for key in self._consumed.pop(uid, ()):
            self._consumers[key] -= 1

    def removed(self, uid: str) -> None:
        """A pod of the cache leaves this view: the claims reserved for it alone (or
        allocated for it by this scheduler and not seen written) are deallocated here."""
        manager = self._manager
        keys: list[str] = []
        for key in sorted(manager.claims_reserving(uid)):
            claim = manager.claim(key)
            if (
                claim is not None
                and claim.allocation is not None
                and key not in self._claims
                and all(c.uid == uid for c in claim.reserved_for)
            ):
                keys.append(key)
        keys.extend(k for k in manager.in_flight_for(uid) if k not in self._claims)
        if not keys:
            return
        self._deallocate(keys)
        self._freed_by[uid] = tuple(keys)

    def restored(self, uid: str) -> None:
        """A removed pod comes back: the claims its removal freed are as in the manager."""
        keys = self._freed_by.pop(uid, None)
        if not keys:
            return
        manager = self._manager
        for key in keys:
            if key not in self._claims or self._claims[key] is not None:
                continue
            del self._claims[key]
            allocation = manager.allocation(key)
            if allocation is None:
                continue
            self._add_shares(allocation, 1)
            for device_id in allocation.held_ids():
                device = manager.device(device_id)
                if device is None:
                    continue
                freed = self._own(self._freed, device.node)
                freed.discard(device_id)
                self._touch(device.node, grew=True)

    def release_left_behind(self) -> None:
        cache = self._snapshot.cache

        def departed(uid: str) -> bool:
            pod = cache.pod(uid)
            return pod is None or pod.is_terminal or pod.is_terminating

        self.free_claims(self._manager.claims_left_behind(departed))

    def commit(self, placements: Sequence[Placement]) -> StoreChange:
        change = StoreChange()
        claims = self._claims
        for placement in placements:
            uid = placement.pod.uid
            allocated = self._claims_of.get(uid, ())
            consumed = self._consumed.get(uid, ())
            if not allocated and not consumed:
                continue
            made = {key: a for key in allocated if (a := claims.get(key)) is not None}
            sub = self._manager.assume(uid, made, consumed)
            if sub.nodes:
                change.grew = sub.grew if not change.nodes else change.grew and sub.grew
                change.nodes |= sub.nodes
            change.warnings.extend(sub.warnings)
        return change

    # -- reading -------------------------------------------------------------------------------

    def claim(self, key: str) -> ResourceClaimInfo | None:
        """The claim, as the manager has it, or as this what-if made it."""
        claim = self._manager.claim(key)
        return claim if claim is not None else self._provisional.get(key)

    def allocation(self, key: str) -> ClaimAllocation | None:
        """The claim's allocation in this view (written, in flight, or made here)."""
        if key in self._claims:
            return self._claims[key]
        return self._manager.allocation(key)

    def allocated_for(self, uid: str) -> dict[str, ClaimAllocation]:
        """The claims allocated in this view (and its ancestors) for the pod placed here."""
        return {
            key: allocation
            for key in self._claims_of.get(uid, ())
            if (allocation := self._claims.get(key)) is not None
        }

    def consumers(self, key: str) -> int:
        """How many pods the claim names as consumers, will name once this scheduler's writes
        land, or would with the pods placed in this view."""
        return self._manager.consumers(key) + self._consumers.get(key, 0)

    def device_free(self, node: str, device: DeviceId) -> bool:
        """No claim holds ``device`` (a device of ``node``) in this view."""
        for key in (node, "") if node else ("",):
            taken = self._taken.get(key)
            if taken is not None and device in taken:
                return False
            freed = self._freed.get(key)
            if freed is not None and device in freed:
                return True
        return not self._manager.in_use(device)

    def consumed(self, device: DeviceId) -> dict[str, Fraction] | None:
        """What the shares of a shared device consume together in this view, by capacity;
        None while it has none."""
        known = self._manager.consumed(device)
        delta = self._shares.get(device)
        if delta is None:
            return known
        count = len([s for shares in self._manager.shares(device).values() for s in shares])
        if count + delta[0] <= 0:
            return None
        found = dict(known or {})
        for name, amount in delta[1].items():
            found[name] = found.get(name, Fraction(0)) + amount
        return found

    # -- changes -------------------------------------------------------------------------------

    def add_provisional(self, claims: Iterable[ResourceClaimInfo]) -> None:
        """Claims that exist in this what-if alone (and its forks)."""
        self._provisional = {**self._provisional, **{claim.key: claim for claim in claims}}

    def allocate(self, uid: str, allocations: Mapping[str, ClaimAllocation]) -> None:
        """Allocates claims for the pod ``uid``, placed here just before: their devices are in
        use in this view, and go with the pod if it is taken away again. Each allocation names
        the node of its devices."""
        snapshot = self._snapshot
        snapshot.check()
        if not allocations:
            return
        if not snapshot.placed_here(uid):
            raise ValueError(f"pod {uid} was not placed in this snapshot")
        for key, allocation in allocations.items():
            if self.allocation(key) is not None:
                raise ValueError(f"claim {key} is allocated already")
            if key in self._claims:
                self._reallocated.add(key)
            self._claims[key] = allocation
            self._take(allocation)
        self._claims_of[uid] = self._claims_of.get(uid, ()) + tuple(allocations)

    def consume(self, uid: str, keys: Iterable[str]) -> None:
        """The pod ``uid``, placed here just before, consumes these claims (it will be in
        their ``reservedFor``); it stops when it is taken away again."""
        keys = tuple(keys)
        if not keys:
            return
        if not self._snapshot.placed_here(uid):
            raise ValueError(f"pod {uid} was not placed in this snapshot")
        self._consumed[uid] = self._consumed.get(uid, ()) + keys
        for key in keys:
            self._consumers[key] = self._consumers.get(key, 0) + 1

    def free_claims(self, keys: Iterable[str]) -> None:
        """Counts the allocations of ``keys`` as gone in this view (claims whose pods are gone,
        about to be deallocated)."""
        self._snapshot.check()
        manager = self._manager
        keys = [k for k in keys if k not in self._claims and manager.allocation(k) is not None]
        if keys:
            self._deallocate(keys)

    def _own(self, sets: dict[str, set[DeviceId]], node: str) -> set[DeviceId]:
        """``node``'s set of ``sets``, this view's own to change."""
        if node not in self._owned:
            # Both of the node's sets at once: a fork shares either with its parent.
            self._owned.add(node)
            for table in (self._taken, self._freed):
                current = table.get(node)
                if current is not None:
                    table[node] = set(current)
        return sets.setdefault(node, set())

    def _touch(self, node: str, *, grew: bool) -> None:
        """Marks the node of a device changed here; "" (a network-attached device) all."""
        if node:
            self._snapshot.touch(node, grew=grew)
            return
        for state in self._snapshot.cache.nodes():
            self._snapshot.touch(state.name, grew=grew)

    def _undo(self, keys: tuple[str, ...]) -> None:
        for key in keys:
            if key in self._reallocated:
                self._reallocated.discard(key)
                allocation = self._claims.get(key)
                self._claims[key] = None
            else:
                allocation = self._claims.pop(key, None)
            if allocation is not None:
                self._add_shares(allocation, -1)
                for device_id, node in self._devices_of(allocation):
                    self._own(self._taken, node).discard(device_id)
                    self._touch(node, grew=False)

    def _deallocate(self, keys: list[str]) -> None:
        """The claims' allocations are gone in this view; their devices are free here unless
        another claim holds them too."""
        manager = self._manager
        freed_here = set(keys) | {k for k, a in self._claims.items() if a is None}
        for key in keys:
            allocation = manager.allocation(key)
            self._claims[key] = None
            if allocation is None:
                continue
            self._add_shares(allocation, -1)
            for device_id in allocation.held_ids():
                if manager.holders(device_id) <= freed_here:
                    device = manager.device(device_id)
                    if device is None:
                        continue
                    self._own(self._freed, device.node).add(device_id)
                    self._touch(device.node, grew=False)

    def _add_shares(self, allocation: ClaimAllocation, sign: int) -> None:
        """Counts the allocation's shares of shared devices in (1) or out (-1) of this view."""
        shares = allocation.shares()
        if not shares:
            return
        for share in shares:
            count, amounts = self._shares.get(share.id, (0, {}))
            amounts = dict(amounts)
            for name, amount in total((share,)).items():
                amounts[name] = amounts.get(name, Fraction(0)) + sign * amount
            self._shares[share.id] = (count + sign, amounts)
            device = self._manager.device(share.id)
            node = device.node if device is not None else allocation.node
            self._touch(node, grew=sign > 0)

    def _take(self, allocation: ClaimAllocation) -> None:
        self._add_shares(allocation, 1)
        for device_id, node in self._devices_of(allocation):
            self._own(self._taken, node).add(device_id)
            self._touch(node, grew=True)

    def _devices_of(self, allocation: ClaimAllocation) -> list[tuple[DeviceId, str]]:
        """The allocation's devices with the node of each (its own, or the allocation's)."""
        found = []
        for device_id in allocation.held_ids():
            device = self._manager.device(device_id)
            node = device.node if device is not None else allocation.node
            found.append((device_id, node))
        return found
