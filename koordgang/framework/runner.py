"""Runs the plugins of one profile for one pod: prefilter, filter, score, select.

Static filter verdicts (labels, taints, readiness) are cached per pod shape and node generation,
so that a thousand identical pods pay for them once. The best node comes from a heap per pod
shape (``node_index``); only when no node fits are all nodes filtered, to say why.
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
    #: Nodes whose usage was examined to explain a failure (for profiling).
    evaluated: int = 0


class Framework:
    def __init__(
        self,
        queue_sort: QueueSortPlugin,
        pre_filters: Sequence[PreFilterPlugin] = (),
        filters: Sequence[FilterPlugin] = (),
        scores: Sequence[ScorePlugin] = (),
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.queue_sort = queue_sort
        self.pre_filters = tuple(pre_filters)
        self.static_filters = tuple(f for f in filters if f.static)
        self.dynamic_filters = tuple(f for f in filters if not f.static)
        self.scores = tuple(scores)
        self._rng = rng or random.Random()
        self._static_cache: OrderedDict[Hashable, _StaticVerdict] = OrderedDict()
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

    def explain(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, diagnosis: Diagnosis
    ) -> list[NodeState]:
        """Runs the usage filters on every statically feasible node, counting why each one
        rejects the pod; returns the nodes that accept it (normally none: this runs when the
        index found no node)."""
        verdict = self.static_feasible(state, pod, snapshot)
        diagnosis.total_nodes = len(snapshot.nodes)
        feasible: list[NodeState] = []
        for node in verdict.feasible:
            for plugin in self.dynamic_filters:
                status = plugin.filter(state, pod, node, snapshot)
                if not status.is_success:
                    diagnosis.add(status.reasons)
                    break
            else:
                feasible.append(node)
        diagnosis.merge(verdict.rejected)
        return feasible

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
        # Nothing fits: a pass over all nodes says why, node by node.
        feasible = self.explain(state, pod, snapshot, diagnosis)
        evaluated = len(self.static_feasible(state, pod, snapshot).feasible)
        if feasible:
            # Cannot happen while the index is exact; if it ever is not, the pod still goes
            # to a node that fits rather than waiting.
            return ScheduleResult(self._rng.choice(feasible), SUCCESS, diagnosis, evaluated)
        status = Status(Code.UNSCHEDULABLE, (diagnosis.message(),))
        return ScheduleResult(None, status, diagnosis, evaluated)
