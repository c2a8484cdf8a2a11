"""Informer and custom-resource events into the cache, the queue and the plugins.

Every method is synchronous and runs on the event loop that runs the scheduling cycle, so a
cycle never sees the cache change under it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, NamedTuple, TypeVar, cast

import structlog

from koordgang.engine.collector import ListingCollector
from koordgang.engine.held_room import HeldRoom
from koordgang.engine.kinds import KINDS, LISTED_KINDS, Relevance, WatchedKind
from koordgang.engine.parts import EnginePart, EngineParts
from koordgang.engine.watch_lag import WatchLag
from koordgang.framework.report import Report
from koordgang.model.dra import ResourceClaimInfo
from koordgang.model.errors import ModelError
from koordgang.model.group_key import ALONE
from koordgang.model.node import NodeInfo
from koordgang.model.objects import ObjectRef
from koordgang.model.pod import PodInfo, PodParseError
from koordgang.state.objects import WatchedObjects
from koordgang.state.store import Store, StoreChange, StoreOf

log = structlog.get_logger("koordgang.intake")

T = TypeVar("T")

#: What the nodes' and pods' stores return: they act on their changes themselves.
_OWN = StoreChange()


class KindHandlers(NamedTuple, Generic[T]):
    """What a kind's informer calls: an object added or changed, one deleted (by its key), a
    fresh LIST of all of them (after a start or a relist)."""

    upsert: Callable[[T], Any]
    delete: Callable[[str], Any]
    listed: Callable[[Iterable[T]], None]


class Intake(EnginePart):
    def __init__(self, parts: EngineParts, held: HeldRoom, watch_lag: WatchLag) -> None:
        super().__init__(parts)
        #: Bindings of ours accepted and not seen yet: seeing them is timed.
        self.watch_lag = watch_lag
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
        #: The stores of the kinds besides nodes and pods.
        self.stores = parts.stores
        #: Nodes and pods, as the kind table's stores: into the cache, the queue, the plugins.
        self.pod_store = StoreOf(self._upsert_pod, self._delete_pod, self._pods_listed)
        self.node_store = StoreOf(self._upsert_node, self._delete_node, self._nodes_listed)
        self._handlers: dict[str, KindHandlers[Any]] = {}

    # -- any watched kind (engine/kinds.py) ------------------------------------------------------

    def kind(self, name: str) -> KindHandlers[Any]:
        """What the informer of the kind ``name`` calls."""
        handlers = self._handlers.get(name)
        if handlers is None:
            kind = next(k for k in KINDS if k.name == name)
            handlers = self._handlers[name] = self._make_handlers(kind)
        return handlers

    def _make_handlers(self, kind: WatchedKind[T]) -> KindHandlers[T]:
        if kind.store is None:
            own = cast(Store[T], self.pod_store if kind.name == "pods" else self.node_store)

            def listed_own(items: Iterable[T]) -> None:
                own.replace(items)
                self._listed_now(kind.name)

            return KindHandlers(own.upsert, own.remove, listed_own)

        store = kind.store(self.stores)

        def upserted(item: T) -> None:
            self._apply(kind, store.upsert(item), item)

        def deleted(key: str) -> None:
            self._apply(kind, store.remove(key), None)

        def listed(items: Iterable[T]) -> None:
            self._apply(kind, store.replace(items), None)
            if kind.relevance is not Relevance.NONE:
                self._signals.request_move()
            self._listed_now(kind.name)

        return KindHandlers(upserted, deleted, listed)

    def _apply(self, kind: WatchedKind[T], change: StoreChange, item: T | None) -> None:
        """What a store's change means beyond the store: nodes marked changed in the cache,
        problems logged, parked pods tried again where they may fit now."""
        for message, fields in change.warnings:
            log.warning(message, **fields)
        if change.nodes:
            self._cache.touch_nodes(change)
        relevance = kind.relevance
        if relevance is Relevance.CHANGED:
            move = change.changed and item is not None
        elif relevance is Relevance.ROOM:
            move = change.roomier or change.released
        else:
            move = False
        if change.added and isinstance(item, ResourceClaimInfo):
            self.activate(self._waiting_for(item))
        if move:
            self._signals.request_move()

    def unreadable(self, kind: WatchedKind[Any], obj: Mapping[str, Any], error: ModelError) -> None:
        """An object of ``kind`` that cannot be read: left out, and said (a pod of ours is
        told why on the pod itself)."""
        if isinstance(error, PodParseError):
            self.on_pod_invalid(obj, error)
            return
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        namespace, name = meta.get("namespace"), meta.get("name")
        named = f"{namespace}/{name}" if namespace else str(name)
        if kind.loud:
            # Its status cannot be read either: whoever wrote an allocation there keeps its
            # devices out of our sight. Said loudly, since devices may be given twice.
            log.error(f"{kind.noun} ignored: cannot read it", name=named, error=str(error))
        else:
            log.warning(f"{kind.noun} ignored: cannot read it", name=named, error=str(error))

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

    def _upsert_pod(self, pod: PodInfo) -> StoreChange:
        self.on_pod_upsert(pod)
        return _OWN

    def _delete_pod(self, uid: str) -> StoreChange:
        self.on_pod_delete(uid)
        return _OWN

    def _pods_listed(self, pods: Iterable[PodInfo]) -> StoreChange:
        self.on_pods_listed(pods)
        return _OWN

    def on_pod_upsert(self, pod: PodInfo) -> None:
        if pod.node_name:
            self.watch_lag.seen(pod.uid)
        if pod.node_name or pod.is_terminal or pod.is_terminating:
            self.held.release_nomination(pod.uid)
        counted = self._cache.node_of(pod.uid)
        old = self._cache.upsert_pod(pod)
        if self._pending.is_ours(pod):
            self._framework.on_pod(old, pod)
            self._waiting.update(pod)
            self.enqueue(pod)
        if old is not None and pod.is_terminal and not old.is_terminal:
            # Finished (a Job's pods stay as objects): its room is free as if it were gone.
            self._framework.on_pod_gone(pod)
        if counted is not None and counted != self._cache.node_of(pod.uid):
            # It left the node it counted on (ended, or another scheduler's nomination was
            # cleared or moved): room there is free, parked pods may fit.
            self._signals.request_move()

    def on_pod_delete(self, uid: str) -> None:
        old = self._cache.pod(uid)
        if old is not None and self._pending.is_ours(old):
            self._framework.on_pod(old, None)
        self.gated.discard(uid)
        self.watch_lag.forget(uid)
        held = self.held.release_pod(uid)
        self._cache.remove_pod(uid)
        self._queue.delete(uid)
        self._reporter.forget(uid)
        if old is not None:
            self._framework.on_pod_gone(old)
        if old is not None and (old.node_name or old.nominated_node_name or held):
            # Room it used, or held as a placement or nomination, is free: parked pods may fit.
            self._signals.request_move()

    def on_pods_listed(self, pods: Iterable[PodInfo]) -> None:
        """A fresh LIST (at start or after a relist): brings cache, plugins and queue in line."""
        listed = list(pods)
        for pod in listed:
            if pod.node_name:
                self.watch_lag.seen(pod.uid)
        for gone in self._cache.replace_pods(listed):
            self.watch_lag.forget(gone.uid)
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

    def _upsert_node(self, node: NodeInfo) -> StoreChange:
        self.on_node_upsert(node)
        return _OWN

    def _delete_node(self, name: str) -> StoreChange:
        self.on_node_delete(name)
        return _OWN

    def _nodes_listed(self, nodes: Iterable[NodeInfo]) -> StoreChange:
        self.on_nodes_listed(nodes)
        return _OWN

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
