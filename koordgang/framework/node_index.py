"""The best node for a pod, kept in heaps instead of recomputed for every pod.

Scoring every feasible node for every pod costs O(nodes) per pod; kube-scheduler samples a share
of the nodes to bound that. Here the pods that share a *key* (their shape, and the plugins that
are active for them) share a max-heap of (score, node), and finding the best node costs
O(log nodes). The answer is exact: the node returned has the highest score among the feasible
nodes of the view asked about (ties broken at random), because

- every entry carries the *version* of the node it was scored at (``NodeState.version``, or the
  node's version inside a snapshot); versions are never reused, so an entry is current exactly
  when its version equals the node's version in the view;
- whenever a node changes in a way that may raise its score or let the pod fit again, a current
  entry is pushed for it before the heap is read: the cache's change log tells a shared heap
  which nodes changed, a snapshot's log tells its private heaps;
- an outdated entry that reaches the top is scored again (or dropped, if the pod no longer
  fits there) before anything below it is trusted.

Which changes count as "may raise" depends on the scores. NODE filters never let a pod in
because a node got fuller, and most scores only fall as a node fills (spreading): then only
nodes that lost a pod or changed spec are looked at at once, an outdated entry of a node that
only got fuller is an upper bound of its score, and checking it when it surfaces is enough
(one evaluation per placement, however many pod shapes have heaps). When a score rises as a
node fills (``rises_with_usage``: binpacking), every changed node is looked at at once.

This holds for filters and scores that look at one node only (scopes STATIC and NODE); pods for
which a CLUSTER plugin is active are placed by a pass over all nodes instead.

Heaps live at two levels. *Shared* heaps follow the cache and serve every snapshot that has not
changed anything yet (the plain path: one pod per cycle). A snapshot with changes, or a search
limited to a set of nodes (a topology domain), gets *private* heaps, kept in the snapshot's
``index_data`` and dropped with it: a copy of the shared heap (or of its parent's heap, for a
fork) brought up to date with the nodes the snapshot changed.
"""

from __future__ import annotations

import heapq
import random
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

#: (-score, random tie-breaker, node name, version of the node the score was made at)
_Entry = tuple[int, float, str, int]
#: Scores ``node`` for the pods of one key in ``view``; None when the pod does not fit there.
Evaluate = Callable[[NodeState, Snapshot], int | None]

_MAX_SHARED = 256


class _Heap:
    __slots__ = ("entries", "generation", "members", "position")

    def __init__(self, members: frozenset[str], generation: int, position: int) -> None:
        #: Nodes this heap answers for (the statically feasible ones, within its scope).
        self.members = members
        #: The cache's node set it was built for; another one means: build again.
        self.generation = generation
        #: How far into its change log (the cache's, or its snapshot's) it has caught up.
        self.position = position
        self.entries: list[_Entry] = []

    def copy(self, position: int) -> _Heap:
        other = _Heap(self.members, self.generation, position)
        other.entries = list(self.entries)
        return other


class NodeIndex:
    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._shared: OrderedDict[Hashable, _Heap] = OrderedDict()

    def best(
        self,
        key: Hashable,
        snapshot: Snapshot,
        candidates: Sequence[NodeState],
        evaluate: Evaluate,
        within: frozenset[str] | None = None,
        *,
        lazy: bool = True,
    ) -> NodeState | None:
        """The best node of ``snapshot`` among ``candidates`` (the statically feasible nodes;
        a given key must always come with the same ones for a given node set, and the same
        ``lazy``) and, if given, ``within``; None when none fits. ``lazy``: no score of the
        key rises as a node fills (see the module's docstring)."""
        snapshot.check()
        if within is not None:
            heap = self._scoped(key, snapshot, candidates, evaluate, within, lazy)
        elif not snapshot.touched():
            heap = self._shared_heap(key, snapshot, candidates, evaluate, lazy)
        else:
            heap = self._private(key, snapshot, candidates, evaluate, lazy)
        entries = heap.entries
        while entries:
            _, _, name, version = entries[0]
            node = snapshot.node(name)
            if node is not None and version == snapshot.version_of(node):
                return node
            heapq.heappop(entries)
            if lazy and node is not None and name in heap.members:
                # Outdated: score it as it is now (a current entry of it may be in the heap
                # already; a duplicate is harmless).
                entry = self._entry(node, snapshot, evaluate)
                if entry is not None:
                    heapq.heappush(entries, entry)
        return None

    def clear(self) -> None:
        self._shared.clear()

    # -- building and keeping up ---------------------------------------------------------------

    def _entry(self, node: NodeState, view: Snapshot, evaluate: Evaluate) -> _Entry | None:
        score = evaluate(node, view)
        if score is None:
            return None
        # Equal scores are ordered by a number drawn when the entry is made: ties are broken
        # at random, as kube-scheduler breaks them.
        return (-score, self._rng.random(), node.name, view.version_of(node))

    def _fill(
        self, heap: _Heap, nodes: Sequence[NodeState], view: Snapshot, evaluate: Evaluate
    ) -> None:
        entries = heap.entries
        for node in nodes:
            entry = self._entry(node, view, evaluate)
            if entry is not None:
                entries.append(entry)
        heapq.heapify(entries)

    def _refresh(
        self, heap: _Heap, names: Sequence[str], view: Snapshot, evaluate: Evaluate
    ) -> None:
        """Pushes a current entry for each of ``names`` that the heap answers for."""
        members = heap.members
        for name in dict.fromkeys(names):
            if name not in members:
                continue
            node = view.node(name)
            if node is None:
                continue
            entry = self._entry(node, view, evaluate)
            if entry is not None:
                heapq.heappush(heap.entries, entry)

    def _shared_heap(
        self,
        key: Hashable,
        snapshot: Snapshot,
        candidates: Sequence[NodeState],
        evaluate: Evaluate,
        lazy: bool,
    ) -> _Heap:
        """The heap of ``key`` over the cache, up to date with the cache. ``snapshot`` must have
        changed nothing: it stands for the cache here."""
        cache = snapshot.cache
        heap = self._shared.get(key)
        changes = None
        if heap is not None and heap.generation == cache.node_generation:
            changes = (cache.shrinks_since if lazy else cache.changes_since)(heap.position)
            if len(heap.entries) > 4 * len(heap.members) + 64:
                changes = None  # crowded with outdated entries: start afresh
        if heap is None or changes is None:
            heap = _Heap(
                frozenset(n.name for n in candidates), cache.node_generation, cache.change_position
            )
            self._fill(heap, candidates, snapshot, evaluate)
            self._shared[key] = heap
            if len(self._shared) > _MAX_SHARED:
                self._shared.popitem(last=False)
        else:
            self._shared.move_to_end(key)
            if changes:
                self._refresh(heap, changes, snapshot, evaluate)
            heap.position = cache.change_position
        return heap

    def _private(
        self,
        key: Hashable,
        snapshot: Snapshot,
        candidates: Sequence[NodeState],
        evaluate: Evaluate,
        lazy: bool,
    ) -> _Heap:
        """The heap of ``key`` over ``snapshot``, kept in the snapshot and up to date with it."""
        slot = ("heap", key)
        heap: _Heap | None = snapshot.index_data.get(slot)
        if heap is None:
            parent = snapshot.parent
            if parent is not None and parent.touched():
                # A fork starts from its parent's view: copy the parent's heap (brought up to
                # date first) and replay what the fork changed since.
                base = self._private(key, parent, candidates, evaluate, lazy)
                heap = base.copy(0)
            else:
                # The parent (if any) shows the cache as it is: the shared heap stands for it,
                # and this snapshot's own log is all that differs.
                base_view = parent if parent is not None else Snapshot(snapshot.cache)
                shared = self._shared_heap(key, base_view, candidates, evaluate, lazy)
                heap = shared.copy(0)
            snapshot.index_data[slot] = heap
        changes = (snapshot.shrinks_since if lazy else snapshot.log_since)(heap.position)
        if changes:
            self._refresh(heap, changes, snapshot, evaluate)
        heap.position = snapshot.log_position
        return heap

    def _scoped(
        self,
        key: Hashable,
        snapshot: Snapshot,
        candidates: Sequence[NodeState],
        evaluate: Evaluate,
        within: frozenset[str],
        lazy: bool,
    ) -> _Heap:
        """The heap of ``key`` over the nodes in ``within``, private to ``snapshot``."""
        slot = ("scoped", key, within)
        heap: _Heap | None = snapshot.index_data.get(slot)
        if heap is None:
            nodes = [n for n in candidates if n.name in within]
            heap = _Heap(
                frozenset(n.name for n in nodes),
                snapshot.cache.node_generation,
                snapshot.log_position,
            )
            self._fill(heap, nodes, snapshot, evaluate)
            snapshot.index_data[slot] = heap
            return heap
        changes = (snapshot.shrinks_since if lazy else snapshot.log_since)(heap.position)
        if changes:
            self._refresh(heap, changes, snapshot, evaluate)
        heap.position = snapshot.log_position
        return heap
