"""A what-if view of the cache for one scheduling cycle: copy-on-write, nestable, explicit.

A cycle asks questions such as "where would these eight pods go?" or "would this job fit if
those three pods were gone?". It answers them on a ``Snapshot``: ``add(pod, node)`` places a pod,
``remove(pod)`` takes one away (a victim), and ``fork()`` opens a nested what-if on top. Nothing
reaches the cache until ``commit()``: a fork commits into its parent, the root commits its
placements into the cache as assumed pods. A snapshot that is dropped instead leaves no trace
anywhere.

Changes are kept per node as a difference from the cache (``_Delta``). A fork starts with its
parent's differences and copies one only when it changes that node, so forking costs a dict copy
of the nodes touched so far, not of the cluster. The cycle runs without awaiting, so the cache
cannot change under a snapshot; a snapshot used after the cache (or, for a fork, its parent)
changed raises instead of answering from a world that is gone.

Other kinds that follow pods onto nodes (devices) keep their part of the what-if in views of
their own (``state/extensions.py``), made, forked and committed with the snapshot: a pod
removed here gives its claims back in the DRA manager's view, and the root's commit makes the
view's allocations the manager's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from koordgang.model.pod import HostPort, PodInfo
from koordgang.model.resources import PODS, Resources
from koordgang.state.cache import SchedulerCache
from koordgang.state.extensions import CacheExtension, SnapshotView
from koordgang.state.node_state import NodeState, next_version


class StaleSnapshotError(RuntimeError):
    """A snapshot was used after what it stands on changed, or after it was committed."""


@dataclass(frozen=True, slots=True)
class Placement:
    pod: PodInfo
    node_name: str


class _Delta:
    """One node in a snapshot, as a difference from the same node in the cache."""

    __slots__ = (
        "added",
        "pods",
        "ports",
        "removed",
        "requested",
        "version",
    )

    def __init__(self) -> None:
        self.requested: dict[str, int] = {}
        self.pods = 0
        self.added: dict[str, PodInfo] = {}
        self.removed: dict[str, PodInfo] = {}
        #: Net change of host ports in use; None until a pod with host ports comes or goes.
        self.ports: Counter[HostPort] | None = None
        self.version = 0

    def copy(self) -> _Delta:
        other = _Delta()
        other.requested = dict(self.requested)
        other.pods = self.pods
        other.added = dict(self.added)
        other.removed = dict(self.removed)
        other.ports = None if self.ports is None else Counter(self.ports)
        other.version = self.version
        return other

    def change(self, requests: Resources, sign: int, ports: tuple[HostPort, ...]) -> None:
        requested = self.requested
        for name, amount in requests.items():
            value = requested.get(name, 0) + sign * amount
            if value:
                requested[name] = value
            else:
                requested.pop(name, None)
        self.pods += sign
        if ports:
            if self.ports is None:
                self.ports = Counter()
            for port in ports:
                self.ports[port] += sign
        self.version = next_version()


class Snapshot:
    __slots__ = (
        "_cache_position",
        "_closed",
        "_deltas",
        "_log",
        "_log_grew",
        "_mutations",
        "_node_of",
        "_owned",
        "_parent_mutations",
        "_passed",
        "_placed",
        "_removed",
        "_uncached",
        "_views",
        "cache",
        "index_data",
        "nodes",
        "parent",
    )

    def __init__(self, cache: SchedulerCache, parent: Snapshot | None = None) -> None:
        self.cache = cache
        self.parent = parent
        self._cache_position = (cache.change_position, cache.node_generation)
        if parent is None:
            #: Nodes that exist (placeholders excluded), by name; do not mutate.
            self.nodes: list[NodeState] = cache.nodes()
            self._deltas: dict[str, _Delta] = {}
            #: uid -> node for pods placed (a name) or removed (None) in this snapshot.
            self._node_of: dict[str, str | None] = {}
            #: Placements in the order they were made (what ``commit`` assumes, in order).
            self._placed: dict[str, Placement] = {}
            #: The placements of pods the cache does not list (normally none: pods come
            #: from the informer); the cache's indexes yield all the others.
            self._uncached: dict[str, Placement] = {}
            #: Pods of the cache taken away in this snapshot: uid -> their node.
            self._removed: dict[str, Placement] = {}
            #: The part of this what-if that other kinds keep (devices), per extension.
            self._views: dict[CacheExtension, SnapshotView] = {
                extension: extension.new_view(self) for extension in cache.extensions
            }
            self._parent_mutations: int = 0
            #: Pods of other schedulers nominated to a node whose room this view passes
            #: over (lower priority than the group it plans): uid -> (pod, node).
            self._passed: dict[str, Placement] = {}
        else:
            parent.check()
            self.nodes = parent.nodes
            self._deltas = dict(parent._deltas)
            self._node_of = dict(parent._node_of)
            self._placed = dict(parent._placed)
            self._uncached = dict(parent._uncached)
            self._removed = dict(parent._removed)
            self._passed = dict(parent._passed)
            self._views = {extension: view.fork(self) for extension, view in parent._views.items()}
            self._parent_mutations = parent._mutations
        #: Nodes whose delta belongs to this snapshot alone (a fork shares its parent's until
        #: it changes them).
        self._owned: set[str] = set()
        #: Nodes changed in this snapshot, in order, for indexes that keep up with it.
        self._log: list[str] = []
        #: Beside each: did the node only get fuller (see ``SchedulerCache.shrinks_since``)?
        self._log_grew: list[bool] = []
        self._mutations: int = 0
        self._closed = False
        #: Scratch space of the framework's indexes for this snapshot alone (dropped with it).
        self.index_data: dict[Any, Any] = {}

    # -- nesting -----------------------------------------------------------------------------

    def fork(self) -> Snapshot:
        """A nested what-if on top of this one; this one must not change while it is used."""
        return Snapshot(self.cache, self)

    def check(self) -> None:
        """Raises if this snapshot no longer describes a world that exists."""
        if self._closed:
            raise StaleSnapshotError("the snapshot was committed")
        parent = self.parent
        if parent is None:
            cache = self.cache
            if (cache.change_position, cache.node_generation) != self._cache_position:
                raise StaleSnapshotError("the cache changed under the snapshot")
            return
        if parent._mutations != self._parent_mutations or parent._closed:
            raise StaleSnapshotError("the parent snapshot changed under the fork")
        parent.check()

    @property
    def depth(self) -> int:
        return 0 if self.parent is None else 1 + self.parent.depth

    # -- changes -----------------------------------------------------------------------------

    def _delta(self, name: str) -> _Delta:
        if name in self._owned:
            return self._deltas[name]
        current = self._deltas.get(name)
        delta = _Delta() if current is None else current.copy()
        self._deltas[name] = delta
        self._owned.add(name)
        return delta

    def add(self, pod: PodInfo, node: NodeState) -> None:
        """Places ``pod`` on ``node`` (or brings back a pod removed from that node)."""
        self.check()
        uid = pod.uid
        if self.node_of(uid) is not None:
            raise ValueError(f"{pod.key} is already on a node in this snapshot")
        removed = self._removed.get(uid)
        if removed is not None:
            if removed.node_name != node.name:
                raise ValueError(
                    f"{pod.key} was removed from {removed.node_name}; it can only come back there"
                )
            delta = self._delta(node.name)
            del delta.removed[uid]
            del self._removed[uid]
            del self._node_of[uid]
            for view in self._views.values():
                view.restored(uid)
        else:
            delta = self._delta(node.name)
            delta.added[uid] = pod
            placement = Placement(pod, node.name)
            self._placed[uid] = placement
            if self.cache.pod(uid) is None:
                self._uncached[uid] = placement
            self._node_of[uid] = node.name
        delta.change(pod.requests, 1, pod.host_ports)
        self._changed(node.name, grew=True)

    def remove(self, pod: PodInfo) -> None:
        """Takes ``pod`` off its node (a victim in a dry run, or a placement undone)."""
        self.check()
        uid = pod.uid
        name = self.node_of(uid)
        if name is None:
            raise ValueError(f"{pod.key} is on no node in this snapshot")
        delta = self._delta(name)
        placed = self._placed.pop(uid, None)
        if placed is not None:
            self._uncached.pop(uid, None)
            pod = delta.added.pop(uid)
            del self._node_of[uid]
            for view in self._views.values():
                view.unplaced(uid)
        else:
            counted = self.cache.pod(uid)
            pod = counted if counted is not None else pod
            delta.removed[uid] = pod
            self._removed[uid] = Placement(pod, name)
            self._node_of[uid] = None
            for view in self._views.values():
                view.removed(uid)
        delta.change(pod.requests, -1, pod.host_ports)
        self._changed(name, grew=False)

    def _changed(self, name: str, *, grew: bool) -> None:
        self._log.append(name)
        self._log_grew.append(grew)
        self._mutations += 1

    def commit(self) -> list[Placement]:
        """A fork hands its changes to its parent; the root turns its placements into assumed
        pods in the cache, in the order they were made, and returns them. Either way this
        snapshot is finished."""
        self.check()
        parent = self.parent
        if parent is not None:
            # Passing over nominations lasts as long as the view it was asked of.
            for uid in [uid for uid in self._passed if uid not in parent._passed]:
                self._count_again(uid)
            self._closed = True
            parent._deltas = self._deltas
            parent._owned |= self._owned
            parent._node_of = self._node_of
            parent._placed = self._placed
            parent._uncached = self._uncached
            parent._removed = self._removed
            for view in self._views.values():
                view.rebase(parent)
            parent._views = self._views
            parent._log.extend(self._log)
            parent._log_grew.extend(self._log_grew)
            parent._mutations += 1
            return list(self._placed.values())
        if self._removed:
            # Victims leave the cache when the API server has deleted them, not before.
            names = ", ".join(p.pod.key for p in self._removed.values())
            raise ValueError(f"a snapshot with removed pods cannot be committed ({names})")
        self._closed = True
        placements = list(self._placed.values())
        for placement in placements:
            self.cache.assume(placement.pod, placement.node_name)
        for view in self._views.values():
            self.cache.touch_nodes(view.commit(placements))
        return placements

    # -- room passed over: other schedulers' nominations, held room lent --------------------------

    def pass_over(self, below: int) -> None:
        """Room nominated to pods of other schedulers with a priority under ``below`` is free
        in this view (and its forks), as kube-scheduler lets a pod of higher priority use the
        room nominated to one of lower priority. The rest stays taken. A fork's commit counts
        what it passed over again."""
        self.check()
        for pod, name in self.cache.nominated_for_others():
            if pod.priority < below:
                self._pass(pod, name)

    def pass_over_held(self, held: Iterable[Placement]) -> None:
        """Room held for pods of ours not bound yet (nominations: assumed pods in the cache)
        is free in this view (and its forks): the group planned in it is done with that room
        before the pods it is held for need it. A fork's commit counts it again."""
        self.check()
        for placement in held:
            if self.cache.node_of(placement.pod.uid) == placement.node_name:
                self._pass(placement.pod, placement.node_name)

    def _pass(self, pod: PodInfo, name: str) -> None:
        uid = pod.uid
        if uid in self._passed or uid in self._node_of:
            return
        delta = self._delta(name)
        delta.removed[uid] = pod
        delta.change(pod.requests, -1, pod.host_ports)
        self._node_of[uid] = None
        self._passed[uid] = Placement(pod, name)
        self._changed(name, grew=False)

    def _count_again(self, uid: str) -> None:
        placement = self._passed.pop(uid)
        delta = self._delta(placement.node_name)
        del delta.removed[uid]
        del self._node_of[uid]
        delta.change(placement.pod.requests, 1, placement.pod.host_ports)
        self._changed(placement.node_name, grew=True)

    # -- views of other kinds (devices) --------------------------------------------------------

    def view_of(self, extension: CacheExtension) -> SnapshotView:
        """``extension``'s part of this what-if (the DRA manager's: claims and devices)."""
        return self._views[extension]

    def touch(self, name: str, *, grew: bool) -> None:
        """A view changed what node ``name`` offers in this snapshot (``grew``: only took)."""
        delta = self._delta(name)
        delta.version = next_version()
        self._changed(name, grew=grew)

    def placed_here(self, uid: str) -> bool:
        """The pod was placed in this snapshot (or an ancestor), not in the cache."""
        return uid in self._placed

    def release_left_behind(self) -> None:
        """What pods that are gone or going still hold in other kinds (claims not given back
        yet) counts as free in this view: room on its way is not made again."""
        self.check()
        for view in self._views.values():
            view.release_left_behind()

    # -- reading -----------------------------------------------------------------------------

    @property
    def placements(self) -> list[Placement]:
        """Pods placed in this snapshot (and its ancestors), in order."""
        return list(self._placed.values())

    @property
    def removals(self) -> list[Placement]:
        """Pods of the cache removed in this snapshot (and its ancestors), with their node."""
        return list(self._removed.values())

    def node_of(self, uid: str) -> str | None:
        """The node a pod counts on in this snapshot, if any."""
        if uid in self._node_of:
            return self._node_of[uid]
        return self.cache.node_of(uid)

    def node(self, name: str) -> NodeState | None:
        """A node that exists (placeholders, which pods may be bound to, excluded)."""
        state = self.cache.node(name)
        return state if state is not None and state.info is not None else None

    def version(self, name: str) -> int:
        """A number that changes whenever the node changes in this view (see NodeState)."""
        delta = self._deltas.get(name)
        if delta is not None:
            return delta.version
        state = self.cache.node(name)
        return 0 if state is None else state.version

    def version_of(self, node: NodeState) -> int:
        """``version(node.name)`` for a node at hand (saves looking it up in the cache)."""
        delta = self._deltas.get(node.name)
        return node.version if delta is None else delta.version

    def touched(self) -> Iterable[str]:
        """Nodes that differ from the cache in this view."""
        return self._deltas.keys()

    def log_since(self, position: int) -> list[str]:
        """Nodes changed in this snapshot (not its ancestors) since ``position``."""
        return self._log[position:]

    def shrinks_since(self, position: int) -> list[str]:
        """Like ``log_since``, leaving out the changes where a node only got fuller."""
        changes, grew = self._log[position:], self._log_grew[position:]
        return [name for name, up in zip(changes, grew, strict=True) if not up]

    @property
    def log_position(self) -> int:
        return len(self._log)

    def free(self, node: NodeState, name: str) -> int:
        free = node.free(name)
        delta = self._deltas.get(node.name)
        if delta is None:
            return free
        if name == PODS:
            return free - delta.pods
        return free - delta.requested.get(name, 0)

    def used(self, node: NodeState, name: str) -> int:
        """Requested amount of ``name`` on ``node`` in this view."""
        used = node.requested.get(name, 0)
        delta = self._deltas.get(node.name)
        if delta is not None:
            used += delta.requested.get(name, 0)
        return used

    def pod_count(self, node: NodeState) -> int:
        delta = self._deltas.get(node.name)
        return node.pod_count + (0 if delta is None else delta.pods)

    def insufficient(self, node: NodeState, requests: Resources) -> tuple[str, ...]:
        """Resources (and ``pods``) that ``node`` lacks for ``requests``; empty if it fits."""
        info = node.info
        if info is None:
            return ()
        allocatable = info.allocatable
        requested = node.requested
        delta = self._deltas.get(node.name)
        extra = None if delta is None else delta.requested
        short: list[str] | None = None
        for name, amount in requests.items():
            used = requested.get(name, 0)
            if extra is not None:
                used += extra.get(name, 0)
            if used + amount > allocatable.get(name):
                if short is None:
                    short = []
                short.append(name)
        pods = node.pod_count + (0 if delta is None else delta.pods)
        if pods + 1 > allocatable.get(PODS):
            if short is None:
                short = []
            short.append(PODS)
        return () if short is None else tuple(short)

    def ports_in_use(self, node: NodeState) -> Counter[HostPort]:
        delta = self._deltas.get(node.name)
        if delta is None or not delta.ports:
            return node.ports
        total = Counter(node.ports)
        total.update(delta.ports)
        return +total

    def requested_by(self, keep: Callable[[PodInfo], bool]) -> dict[str, int]:
        """What the pods ``keep`` accepts request, summed over every node of this view."""
        total: dict[str, int] = {}
        for node in self.nodes:
            for pod in self.pods_on(node):
                if keep(pod):
                    for name, amount in pod.requests.items():
                        total[name] = total.get(name, 0) + amount
        return total

    def pods_on(self, node: NodeState) -> Iterator[PodInfo]:
        """The pods that count on ``node`` in this view."""
        delta = self._deltas.get(node.name)
        removed = None if delta is None else delta.removed
        for uid in node.pods:
            if removed is not None and uid in removed:
                continue
            pod = self.cache.pod(uid)
            if pod is not None:
                yield pod
        if delta is not None:
            yield from delta.added.values()

    def _counted(self, pods: Iterable[PodInfo]) -> Iterator[tuple[PodInfo, str]]:
        node_of = self._node_of
        cache_node_of = self.cache.node_of
        for pod in pods:
            uid = pod.uid
            name = node_of[uid] if uid in node_of else cache_node_of(uid)
            if name is not None:
                yield pod, name

    def pods_in_namespace(self, namespace: str) -> Iterator[tuple[PodInfo, str]]:
        """(pod, node) for every pod of ``namespace`` that counts on a node in this view."""
        yield from self._counted(self.cache.pods_in_namespace(namespace))
        for placement in self._uncached.values():
            if placement.pod.namespace == namespace:
                yield placement.pod, placement.node_name

    def has_pod_affinity(self) -> bool:
        """Whether any pod known here has pod (anti-)affinity terms (counted or not): when
        none has, plugins about such terms have nothing to look at."""
        return self.cache.has_pod_affinity() or any(
            p.pod.pod_affinity is not None for p in self._uncached.values()
        )

    def pods_with_pod_affinity(self) -> Iterator[tuple[PodInfo, str]]:
        """(pod, node) for every counted pod with pod (anti-)affinity terms in this view."""
        yield from self._counted(self.cache.pods_with_pod_affinity())
        for placement in self._uncached.values():
            if placement.pod.pod_affinity is not None:
                yield placement.pod, placement.node_name
