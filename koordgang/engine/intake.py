"""Informer and custom-resource events into the cache, the queue and the plugins.

Every method is synchronous and runs on the event loop that runs the scheduling cycle, so a
cycle never sees the cache change under it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from koordgang.engine.collector import ListingCollector
from koordgang.engine.held_room import HeldRoom
from koordgang.engine.parts import EnginePart, EngineParts
from koordgang.framework.report import Report
from koordgang.model.budgets import BudgetInfo
from koordgang.model.dra import DeviceClassInfo, ResourceClaimInfo, ResourceSliceInfo
from koordgang.model.group_key import ALONE
from koordgang.model.node import NodeInfo
from koordgang.model.objects import ObjectRef
from koordgang.model.pod import PodInfo, PodParseError
from koordgang.model.volumes import ClaimInfo
from koordgang.state.devices import LedgerChange
from koordgang.state.objects import WatchedObjects

log = structlog.get_logger("koordgang.intake")

#: What the informers list before the first cycle may run.
LISTED_KINDS = frozenset(
    {
        "pods",
        "nodes",
        "namespaces",
        "claims",
        "budgets",
        "resourceslices",
        "deviceclasses",
        "resourceclaims",
    }
)


class Intake(EnginePart):
    def __init__(self, parts: EngineParts, held: HeldRoom) -> None:
        super().__init__(parts)
        #: Kinds listed at least once; the first cycle waits for all of ``LISTED_KINDS``
        #: (before that, nodes look emptier than they are, claims look missing).
        self.listed: set[str] = set()
        #: Pods of ours that PreEnqueue keeps out of the queue (scheduling gates, a timed-out
        #: gang): ``scheduler_pending_pods{queue="gated"}``.
        self.gated: set[str] = set()
        self.ready = asyncio.Event()
        #: Room held for pods not bound yet (held placements, nominations): the scheduler's,
        #: shared with the loop.
        self.held = held
        #: Watched objects as the plugins last heard of them (a what-if replays them).
        self.objects = WatchedObjects()
        #: The garbage collector's thresholds while the first listings come in (``relax``
        #: before the informers start; settled here once every kind is listed).
        self.collector = ListingCollector()

    # -- pods ----------------------------------------------------------------------------------

    def enqueue(self, pod: PodInfo) -> None:
        """Queues ``pod`` if it needs a node and PreEnqueue lets it in; else takes it out."""
        if not self._pending.is_pending(pod):
            self._queue.delete(pod.uid)
            self.gated.discard(pod.uid)
            if pod.node_name:
                self._reporter.forget(pod.uid)
            return
        if self._framework.run_pre_enqueue(pod).is_success:
            self.gated.discard(pod.uid)
            self._queue.add(pod, self._clock())
            self._signals.wake()
        else:
            # It waits outside the queue (gated) until it changes, or a plugin activates it.
            self._queue.delete(pod.uid)
            self.gated.add(pod.uid)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """PreEnqueue decides again about these pods (a plugin says its verdict may have
        changed): let in, they go to the active queue; refused, they wait outside it. This and
        ``enqueue`` are the only places PreEnqueue runs: a pod popped from the queue is not
        asked again."""
        now = self._clock()
        for pod in pods:
            current = self._cache.pod(pod.uid)
            if current is None or not self._pending.is_pending(current):
                continue
            if self._framework.run_pre_enqueue(current).is_success:
                self.gated.discard(current.uid)
                self._queue.activate(current, now)
            else:
                self._queue.delete(current.uid)
                self.gated.add(current.uid)
        self._signals.wake()

    def on_pod_upsert(self, pod: PodInfo) -> None:
        if pod.node_name or pod.is_terminal or pod.is_terminating:
            self.held.release_nomination(pod.uid)
        old = self._cache.upsert_pod(pod)
        if self._pending.is_ours(pod):
            self._framework.on_pod(old, pod)
            self._waiting.update(pod)
            self.enqueue(pod)
        if old is not None and old.node_name and not old.is_terminal and pod.is_terminal:
            self._signals.request_move()

    def on_pod_delete(self, uid: str) -> None:
        old = self._cache.pod(uid)
        if old is not None and self._pending.is_ours(old):
            self._framework.on_pod(old, None)
        self.gated.discard(uid)
        held = self.held.release_pod(uid)
        self._cache.remove_pod(uid)
        self._queue.delete(uid)
        self._reporter.forget(uid)
        if old is not None:
            self._framework.on_pod_gone(old)
        if old is not None and (old.node_name or held):
            # Room it used, or held as a placement or nomination, is free: parked pods may fit.
            self._signals.request_move()

    def on_pods_listed(self, pods: Iterable[PodInfo]) -> None:
        """A fresh LIST (at start or after a relist): brings cache, plugins and queue in line."""
        listed = list(pods)
        for gone in self._cache.replace_pods(listed):
            self.gated.discard(gone.uid)
            if self._pending.is_ours(gone):
                self._framework.on_pod(gone, None)
            self._waiting.remove(gone.uid)
            self._queue.delete(gone.uid)
            self._reporter.forget(gone.uid)
        ours = [pod for pod in listed if self._pending.is_ours(pod)]
        for pod in ours:
            self._framework.on_pod(None, pod)
            self._waiting.update(pod)
            self._restore_nomination(pod)
        for pod in ours:
            self.enqueue(pod)
        self._signals.request_move()
        self._listed_now("pods")

    def _restore_nomination(self, pod: PodInfo) -> None:
        """After a restart, the room preemption made is held again for the pods nominated to
        it (``status.nominatedNodeName``), until their group is planned again."""
        node = pod.nominated_node_name
        if (
            not node
            or pod.uid in self._framework.nominations
            or not self._pending.is_pending(pod)
            or self._cache.node(node) is None
        ):
            return
        self.held.nominate(pod, node, ALONE)

    def on_pod_invalid(self, obj: Mapping[str, Any], error: PodParseError) -> None:
        """A pod we cannot read: if it is ours and unbound, it is told why on the pod itself;
        the daemon goes on."""
        meta = obj.get("metadata")
        spec = obj.get("spec")
        meta = meta if isinstance(meta, Mapping) else {}
        spec = spec if isinstance(spec, Mapping) else {}
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "default")
        log.warning(
            "pod cannot be scheduled: invalid spec", pod=f"{namespace}/{name}", error=str(error)
        )
        ours = spec.get("schedulerName") in self._pending.names
        if not ours or spec.get("nodeName") or not name:
            return
        ref = ObjectRef("Pod", namespace, name, str(meta.get("uid") or ""))
        message = f"the pod cannot be scheduled: {error}"
        # Written whatever the cache says: the cache never holds a pod it cannot read.
        self._reporter.report(
            Report(
                ref,
                "Warning",
                "FailedScheduling",
                message,
                condition=("False", "Unschedulable"),
                always=True,
                component=str(spec.get("schedulerName")),
            )
        )

    # -- nodes ---------------------------------------------------------------------------------

    def on_node_upsert(self, node: NodeInfo) -> None:
        if self._cache.upsert_node(node):
            self._signals.request_move()

    def on_node_delete(self, name: str) -> None:
        self._cache.remove_node(name)
        self.held.release_on_nodes({name})
        self._signals.request_move()

    def on_nodes_listed(self, nodes: Iterable[NodeInfo]) -> None:
        listed = list(nodes)
        self._cache.replace_nodes(listed)
        names = {node.name for node in listed}
        self.held.release_on_nodes({w.node for w in self._waiting if w.node not in names})
        self._signals.request_move()
        self._listed_now("nodes")

    # -- namespaces and claims -----------------------------------------------------------------
    # Both only let parked pods be tried again: a namespace's labels decide which namespaces an
    # affinity term selects, a claim that got bound lets its pod in.

    def on_namespace_upsert(self, item: tuple[str, dict[str, str]]) -> None:
        if self._cache.upsert_namespace(*item):
            self._signals.request_move()

    def on_namespace_delete(self, name: str) -> None:
        self._cache.remove_namespace(name)

    def on_namespaces_listed(self, items: Iterable[tuple[str, dict[str, str]]]) -> None:
        self._cache.replace_namespaces(items)
        self._signals.request_move()
        self._listed_now("namespaces")

    def on_claim_upsert(self, claim: ClaimInfo) -> None:
        if self._cache.upsert_claim(claim):
            self._signals.request_move()

    def on_claim_delete(self, key: str) -> None:
        self._cache.remove_claim(key)

    def on_claims_listed(self, claims: Iterable[ClaimInfo]) -> None:
        self._cache.replace_claims(claims)
        self._signals.request_move()
        self._listed_now("claims")

    # -- dynamic resource allocation -----------------------------------------------------------
    # Devices that appear or are freed may let parked pods fit; devices taken never do, so a
    # claim's allocation (ours, mostly) moves nothing.

    def _devices_changed(self, change: LedgerChange, *, move: bool) -> None:
        for pool, reason in change.invalid:
            log.warning("resource pool skipped: invalid", pool=pool, reason=reason)
        for device, holders in change.conflicts:
            log.warning(
                "device allocated to more than one claim",
                device=str(device),
                claims=", ".join(holders),
            )
        if move and change.nodes and not change.grew:
            self._signals.request_move()

    def on_resource_slice_upsert(self, info: ResourceSliceInfo) -> None:
        self._devices_changed(self._cache.upsert_resource_slice(info), move=True)

    def on_resource_slice_delete(self, name: str) -> None:
        self._devices_changed(self._cache.remove_resource_slice(name), move=False)

    def on_resource_slices_listed(self, infos: Iterable[ResourceSliceInfo]) -> None:
        self._devices_changed(self._cache.replace_resource_slices(infos), move=True)
        self._listed_now("resourceslices")

    def on_device_class_upsert(self, info: DeviceClassInfo) -> None:
        if self._cache.upsert_device_class(info):
            self._signals.request_move()

    def on_device_class_delete(self, name: str) -> None:
        self._cache.remove_device_class(name)

    def on_device_classes_listed(self, infos: Iterable[DeviceClassInfo]) -> None:
        self._cache.replace_device_classes(infos)
        self._signals.request_move()
        self._listed_now("deviceclasses")

    def on_resource_claim_upsert(self, claim: ResourceClaimInfo) -> None:
        old = self._cache.devices.claim(claim.key)
        change = self._cache.upsert_resource_claim(claim)
        self._devices_changed(change, move=True)
        if old is None:
            self.activate(self._waiting_for(claim))
        elif old.allocation is not None and claim.allocation is None:
            # Given back: its pods may go anywhere now (its devices may be on no node known).
            self._signals.request_move()

    def _waiting_for(self, claim: ResourceClaimInfo) -> list[PodInfo]:
        """The pods a new claim may be all that was missing for: the pod it was made for
        (from a template), or pods of ours in its namespace that name it."""
        if claim.owner_pod_uid:
            pod = self._cache.pod(claim.owner_pod_uid)
            return [pod] if pod is not None else []
        return [
            pod
            for pod in self._cache.pods_in_namespace(claim.namespace)
            if pod.resource_claims
            and not pod.node_name
            and any(ref.claim_name == claim.name for ref in pod.resource_claims)
        ]

    def on_resource_claim_delete(self, key: str) -> None:
        self._devices_changed(self._cache.remove_resource_claim(key), move=True)

    def on_resource_claims_listed(self, claims: Iterable[ResourceClaimInfo]) -> None:
        self._devices_changed(self._cache.replace_resource_claims(claims), move=True)
        self._signals.request_move()
        self._listed_now("resourceclaims")

    # -- disruption budgets: read when preemption weighs its victims ------------------------

    def on_budget_upsert(self, budget: BudgetInfo) -> None:
        self._cache.upsert_budget(budget)

    def on_budget_delete(self, key: str) -> None:
        self._cache.remove_budget(key)

    def on_budgets_listed(self, budgets: Iterable[BudgetInfo]) -> None:
        self._cache.replace_budgets(budgets)
        self._listed_now("budgets")

    # -- custom resources ----------------------------------------------------------------------

    def on_object(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        self.objects.record(kind, event, obj)
        if event == "DELETED":
            # What it was told is remembered to skip repeats; a deleted PodGroup hears no more
            # (with jobs coming and going for hours, this memory grew without end).
            meta = obj.get("metadata")
            uid = meta.get("uid") if isinstance(meta, Mapping) else None
            if isinstance(uid, str) and uid:
                self._reporter.forget(uid)
        if self._framework.on_object(kind, event, obj):
            self._signals.request_move()

    def _listed_now(self, kind: str) -> None:
        self.listed.add(kind)
        if self.listed >= LISTED_KINDS and not self.ready.is_set():
            log.info(
                "cache synced",
                nodes=len(self._cache.nodes()),
                pods=self._cache.pod_count(),
                pending=len(self._queue),
            )
            self.collector.settle()
            self.ready.set()
            self._signals.wake()
