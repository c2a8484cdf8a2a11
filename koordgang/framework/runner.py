"""Runs the plugins of one profile for one pod: prefilter, filter, score, select.

Static filter verdicts (labels, taints, readiness) are cached per pod shape and node generation,
so that a thousand identical pods pay for them once; only the resource fit is checked per pod.
"""

from __future__ import annotations

import random
from collections import Counter, OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.diagnosis import Diagnosis
from koordgang.framework.interfaces import (
    FilterPlugin,
    PreFilterPlugin,
    QueueSortPlugin,
    ScorePlugin,
    SortKey,
)
from koordgang.framework.node_index import NodeIndex
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.pod import PodInfo
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

#: Below this many nodes every node is examined; above it, a share of them (kube-scheduler's
#: minFeasibleNodesToFind).
MIN_FEASIBLE_NODES_TO_FIND = 100
_STATIC_CACHE_SIZE = 512


@dataclass(slots=True)
class _StaticVerdict:
    generation: int
    feasible: list[NodeState]
    rejected: Counter[str]


@dataclass(slots=True)
class ScheduleResult:
    node: NodeState | None
    status: Status
    diagnosis: Diagnosis
    #: Nodes examined (for metrics and profiling).
    evaluated: int = 0


class Framework:
    def __init__(
        self,
        queue_sort: QueueSortPlugin,
        pre_filters: Sequence[PreFilterPlugin] = (),
        filters: Sequence[FilterPlugin] = (),
        scores: Sequence[ScorePlugin] = (),
        *,
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
    ) -> None:
        self.queue_sort = queue_sort
        self.pre_filters = tuple(pre_filters)
        self.static_filters = tuple(f for f in filters if f.static)
        self.dynamic_filters = tuple(f for f in filters if not f.static)
        self.scores = tuple(scores)
        self.percentage = percentage_of_nodes_to_score
        self._rng = rng or random.Random()
        self._static_cache: OrderedDict[Hashable, _StaticVerdict] = OrderedDict()
        self._next_start = 0
        self.index = NodeIndex(self.dynamic_filters, self.scores, self._rng)

    def sort_key(self, pod: PodInfo) -> SortKey:
        return self.queue_sort.sort_key(pod)

    # -- phases ------------------------------------------------------------------------------

    def run_pre_filters(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        for plugin in self.pre_filters:
            status = plugin.pre_filter(state, pod, snapshot)
            if not status.is_success and status.code is not Code.SKIP:
                return status
        return SUCCESS

    def static_feasible(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> _StaticVerdict:
        generation = snapshot.cache.node_generation
        cached = self._static_cache.get(pod.shape)
        if cached is not None and cached.generation == generation:
            self._static_cache.move_to_end(pod.shape)
            return cached
        feasible: list[NodeState] = []
        rejected: Counter[str] = Counter()
        for node in snapshot.nodes:
            for plugin in self.static_filters:
                status = plugin.filter(state, pod, node, snapshot)
                if not status.is_success:
                    rejected.update(status.reasons)
                    break
            else:
                feasible.append(node)
        verdict = _StaticVerdict(generation, feasible, rejected)
        self._static_cache[pod.shape] = verdict
        if len(self._static_cache) > _STATIC_CACHE_SIZE:
            self._static_cache.popitem(last=False)
        return verdict

    def nodes_to_find(self, total: int) -> int:
        """How many feasible nodes are enough before scoring (kube-scheduler's rule)."""
        if total < MIN_FEASIBLE_NODES_TO_FIND or self.percentage >= 100:
            return total
        percentage = self.percentage
        if percentage <= 0:
            percentage = max(5, 50 - total // 125)
        return max(MIN_FEASIBLE_NODES_TO_FIND, total * percentage // 100)

    def find_feasible(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, diagnosis: Diagnosis
    ) -> tuple[list[NodeState], int]:
        """Feasible nodes (a sample of them in big clusters) and how many were examined."""
        verdict = self.static_feasible(state, pod, snapshot)
        diagnosis.total_nodes = len(snapshot.nodes)
        candidates = verdict.feasible
        if not candidates:
            diagnosis.merge(verdict.rejected)
            return [], 0
        want = self.nodes_to_find(len(snapshot.nodes))
        count = len(candidates)
        start = self._next_start % count
        feasible: list[NodeState] = []
        examined = 0
        dynamic = self.dynamic_filters
        for offset in range(count):
            node = candidates[(start + offset) % count]
            examined += 1
            for plugin in dynamic:
                status = plugin.filter(state, pod, node, snapshot)
                if not status.is_success:
                    diagnosis.add(status.reasons)
                    break
            else:
                feasible.append(node)
                if len(feasible) >= want:
                    break
        self._next_start = (start + examined) % count
        if not feasible:
            diagnosis.merge(verdict.rejected)
        return feasible, examined

    def select(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeState], snapshot: Snapshot
    ) -> NodeState:
        if len(nodes) == 1 or not self.scores:
            return nodes[0]
        best: NodeState | None = None
        best_score = -1
        ties = 0
        for node in nodes:
            total = 0
            for plugin in self.scores:
                total += plugin.weight * plugin.score(state, pod, node, snapshot)
            if total > best_score:
                best, best_score, ties = node, total, 1
            elif total == best_score:
                # Reservoir sampling keeps ties fair without a second pass.
                ties += 1
                if self._rng.randrange(ties) == 0:
                    best = node
        assert best is not None
        return best

    # -- one pod -----------------------------------------------------------------------------

    def schedule_pod(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> ScheduleResult:
        """Finds the best node for ``pod`` in ``snapshot``; does not place it."""
        diagnosis = Diagnosis(total_nodes=len(snapshot.nodes))
        status = self.run_pre_filters(state, pod, snapshot)
        if not status.is_success:
            diagnosis.pod_reason = status.message()
            return ScheduleResult(None, status, diagnosis)
        best = self.index.best(
            state, pod, snapshot, lambda: self.static_feasible(state, pod, snapshot).feasible
        )
        if best is not None:
            return ScheduleResult(best, SUCCESS, diagnosis)
        # Nothing fits: the full pass over all nodes says why, node by node.
        feasible, examined = self.find_feasible(state, pod, snapshot, diagnosis)
        if not feasible:
            return ScheduleResult(
                None, Status(Code.UNSCHEDULABLE, (diagnosis.message(),)), diagnosis, examined
            )
        node = self.select(state, pod, feasible, snapshot)
        return ScheduleResult(node, SUCCESS, diagnosis, examined)
