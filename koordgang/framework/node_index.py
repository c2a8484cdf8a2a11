"""The best node for a pod shape, kept in a heap instead of recomputed for every pod.

Scoring every feasible node for every pod costs O(nodes) per pod; kube-scheduler samples a share
of the nodes to bound that. Here each pod shape keeps a max-heap of (score, node). A pod only
changes the score of the node it lands on, so after a placement one entry is recomputed, and
finding the best node costs O(log nodes). Exactness rests on two facts:

- every heap entry carries the node's *stamp* (its usage generation, plus pods tentatively placed
  on it in the current snapshot); an entry whose stamp is stale is re-scored before it is trusted;
- between rebuilds usage only grows, except where the cache's freed-log says otherwise, and
  those nodes are re-scored when the index is next used. Nodes whose spec changed force a
  rebuild (new node generation).

This holds because filters that depend on usage and all score plugins look at one node only
(the pod and that node's state), which is true of every plugin in this profile.
"""

from __future__ import annotations

import heapq
import random
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import FilterPlugin, ScorePlugin
from koordgang.model.pod import PodInfo
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

#: (-score, random tie-breaker, node name, generation, overlay count)
_Entry = tuple[int, float, str, int, int]
_MAX_SHAPES = 256


class _ShapeHeap:
    __slots__ = ("feasible", "freed_position", "generation", "heap")

    def __init__(self, generation: int, freed_position: int, feasible: frozenset[str]) -> None:
        self.generation = generation
        self.freed_position = freed_position
        self.feasible = feasible
        self.heap: list[_Entry] = []


class NodeIndex:
    def __init__(
        self,
        dynamic_filters: Sequence[FilterPlugin],
        scores: Sequence[ScorePlugin],
        rng: random.Random,
    ) -> None:
        self._rng = rng
        self._filters = tuple(dynamic_filters)
        self._scores = tuple(scores)
        self._heaps: OrderedDict[Hashable, _ShapeHeap] = OrderedDict()

    def best(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        static_feasible: Callable[[], list[NodeState]],
    ) -> NodeState | None:
        """The highest-scoring node that fits ``pod`` (ties: by name), or None if none fits."""
        cache = snapshot.cache
        shape = pod.shape
        index = self._heaps.get(shape)
        if index is not None and len(index.heap) > 4 * len(index.feasible) + 64:
            # Re-pushed freed nodes leave stale duplicates behind: start afresh.
            index = None
        if index is None or index.generation != cache.node_generation:
            index = self._build(state, pod, snapshot, static_feasible())
        else:
            self._heaps.move_to_end(shape)
            freed = cache.freed_since(index.freed_position)
            if freed is None:
                index = self._build(state, pod, snapshot, static_feasible())
            else:
                index.freed_position = cache.freed_position
                for name in set(freed):
                    node = cache.node(name)
                    if node is not None and name in index.feasible:
                        self._push(index, state, pod, node, snapshot)
        heap = index.heap
        while heap:
            _, _, name, generation, overlay = heap[0]
            node = cache.node(name)
            if node is None or node.info is None:
                heapq.heappop(heap)
                continue
            if generation == node.generation and overlay == snapshot.overlay_count(name):
                return node
            heapq.heappop(heap)
            self._push(index, state, pod, node, snapshot)
        return None

    def _build(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, nodes: list[NodeState]
    ) -> _ShapeHeap:
        cache = snapshot.cache
        index = _ShapeHeap(
            cache.node_generation, cache.freed_position, frozenset(n.name for n in nodes)
        )
        entries: list[_Entry] = []
        for node in nodes:
            entry = self._entry(state, pod, node, snapshot)
            if entry is not None:
                entries.append(entry)
        heapq.heapify(entries)
        index.heap = entries
        self._heaps[pod.shape] = index
        if len(self._heaps) > _MAX_SHAPES:
            self._heaps.popitem(last=False)
        return index

    def _push(
        self,
        index: _ShapeHeap,
        state: CycleState,
        pod: PodInfo,
        node: NodeState,
        snapshot: Snapshot,
    ) -> None:
        entry = self._entry(state, pod, node, snapshot)
        if entry is not None:
            heapq.heappush(index.heap, entry)

    def _entry(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> _Entry | None:
        for check in self._filters:
            if not check.filter(state, pod, node, snapshot).is_success:
                return None
        total = 0
        for scorer in self._scores:
            total += scorer.weight * scorer.score(state, pod, node, snapshot)
        # Equal scores are ordered by a number drawn when the entry is made: ties are broken
        # at random, as kube-scheduler breaks them.
        return (
            -total,
            self._rng.random(),
            node.name,
            node.generation,
            snapshot.overlay_count(node.name),
        )

    def clear(self) -> None:
        self._heaps.clear()
