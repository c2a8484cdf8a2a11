"""Runs the plugins of one profile for one pod: PreFilter, Filter, PreScore, Score, select.

Filters and scores are run according to their scope (see ``Scope``):
- STATIC verdicts and scores (labels, taints, readiness, preferences) are computed once per pod
  shape and node set, and shared by every pod of that shape;
- NODE filters and scores feed the heaps of ``NodeIndex``, so a pod costs O(log nodes);
- when a CLUSTER plugin is active for a pod (it has pod affinity or spreading constraints, or
  another pod's anti-affinity concerns it), every feasible node is filtered and scored.
Only when no node fits are all nodes filtered, to say why, node by node.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from koordgang.framework.cycle_state import FILTER_ERROR, POD_NOTES, SHAPE_DETAIL, CycleState
from koordgang.framework.diagnosis import Diagnosis
from koordgang.framework.group import PodResult
from koordgang.framework.interfaces import (
    AssignPlugin,
    ClusterScorePlugin,
    FilterPlugin,
    NormalizeScorePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    Scope,
    ScorePlugin,
)
from koordgang.framework.node_index import NodeIndex
from koordgang.framework.status import SUCCESS, Code, Status
from koordgang.model.pod import PodInfo
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

_STATIC_CACHE_SIZE = 512


@dataclass(slots=True)
class StaticVerdict:
    """What the pod's spec and the nodes' specs decide, shared by every pod of one shape."""

    generation: int
    feasible: list[NodeState]
    #: node -> the status that rejected it.
    rejected: dict[str, Status]
    #: node -> the weighted sum of the STATIC scores (normalized over ``feasible``).
    scores: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class _Active:
    """The plugins that take part for one pod (PreFilter and PreScore may leave some out).
    One instance per combination, so that it can key the index by identity."""

    node_filters: tuple[FilterPlugin, ...]
    cluster_filters: tuple[FilterPlugin, ...]
    node_scores: tuple[ScorePlugin, ...]
    cluster_scores: tuple[ClusterScorePlugin, ...]

    @property
    def cluster(self) -> bool:
        return bool(self.cluster_filters or self.cluster_scores)

    @property
    def lazy(self) -> bool:
        """No score of these rises as a node fills (see NodeIndex)."""
        return not any(s.rises_with_usage for s in self.node_scores)


class PodRunner:
    """The per-pod extension points, and the ``Placer`` that group placements build on."""

    def __init__(
        self,
        *,
        pre_filters: Sequence[PreFilterPlugin] = (),
        filters: Sequence[FilterPlugin] = (),
        assigners: Sequence[AssignPlugin] = (),
        pre_scores: Sequence[PreScorePlugin] = (),
        scores: Sequence[ScorePlugin] = (),
        cluster_scores: Sequence[ClusterScorePlugin] = (),
        rng: random.Random | None = None,
    ) -> None:
        self.pre_filters = tuple(pre_filters)
        self.static_filters = tuple(f for f in filters if f.scope is Scope.STATIC)
        self.node_filters = tuple(f for f in filters if f.scope is Scope.NODE)
        self.cluster_filters = tuple(f for f in filters if f.scope is Scope.CLUSTER)
        self.assigners = tuple(assigners)
        self.static_scores = tuple(s for s in scores if s.scope is Scope.STATIC)
        static_names = {s.name for s in self.static_scores}
        # PreScore of STATIC plugins runs once per shape (with the static verdict); the others
        # for every pod.
        self.static_pre_scores = tuple(p for p in pre_scores if p.name in static_names)
        self.pre_scores = tuple(p for p in pre_scores if p.name not in static_names)
        self.node_scores = tuple(s for s in scores if s.scope is not Scope.STATIC)
        self.cluster_scores = tuple(cluster_scores)
        self._rng = rng or random.Random()
        self._static_cache: OrderedDict[Hashable, StaticVerdict] = OrderedDict()
        self._actives: dict[tuple[tuple[str, ...], tuple[str, ...]], _Active] = {}
        self.index = NodeIndex(self._rng)

    # -- phases --------------------------------------------------------------------------------

    def run_pre_filters(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[Status, tuple[str, ...]]:
        """The first rejection, or SUCCESS and the names of the plugins that said SKIP (in
        the plugins' order)."""
        skipped: list[str] = []
        for plugin in self.pre_filters:
            status = plugin.pre_filter(state, pod, snapshot)
            if status.code is Code.SKIP:
                skipped.append(plugin.name)
            elif not status.is_success:
                return status, tuple(skipped)
        return SUCCESS, tuple(skipped)

    def _pre_scores(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        plugins: Sequence[PreScorePlugin],
    ) -> tuple[str, ...]:
        return tuple(
            [
                plugin.name
                for plugin in plugins
                if plugin.pre_score(state, pod, snapshot).code is Code.SKIP
            ]
        )

    def _active(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, skipped: tuple[str, ...]
    ) -> _Active:
        no_score = self._pre_scores(state, pod, snapshot, self.pre_scores)
        active = self._actives.get((skipped, no_score))
        if active is None:
            active = self._actives[(skipped, no_score)] = _Active(
                tuple(f for f in self.node_filters if f.name not in skipped),
                tuple(f for f in self.cluster_filters if f.name not in skipped),
                tuple(s for s in self.node_scores if s.name not in no_score),
                tuple(s for s in self.cluster_scores if s.name not in no_score),
            )
        return active

    def static_verdict(self, pod: PodInfo, snapshot: Snapshot) -> StaticVerdict:
        generation = snapshot.cache.node_generation
        cached = self._static_cache.get(pod.shape)
        if cached is not None and cached.generation == generation:
            self._static_cache.move_to_end(pod.shape)
            return cached
        # Static plugins read only the pod's shape and the node's spec: a fresh state, shared
        # by every pod of the shape.
        state = CycleState()
        feasible: list[NodeState] = []
        rejected: dict[str, Status] = {}
        for node in snapshot.nodes:
            for plugin in self.static_filters:
                status = plugin.filter(state, pod, node, snapshot)
                if not status.is_success:
                    rejected[node.name] = status
                    break
            else:
                feasible.append(node)
        verdict = StaticVerdict(generation, feasible, rejected)
        self._static_scores(state, pod, snapshot, verdict)
        self._static_cache[pod.shape] = verdict
        if len(self._static_cache) > _STATIC_CACHE_SIZE:
            self._static_cache.popitem(last=False)
        return verdict

    def _static_scores(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, verdict: StaticVerdict
    ) -> None:
        no_score = self._pre_scores(state, pod, snapshot, self.static_pre_scores)
        totals: dict[str, int] = {}
        for plugin in self.static_scores:
            if plugin.name in no_score:
                continue
            raw = {n.name: plugin.score(state, pod, n, snapshot) for n in verdict.feasible}
            if isinstance(plugin, NormalizeScorePlugin):
                plugin.normalize(state, pod, raw)
            for name, value in raw.items():
                totals[name] = totals.get(name, 0) + plugin.weight * value
        verdict.scores = totals

    # -- one pod -------------------------------------------------------------------------------

    def place(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        *,
        within: frozenset[str] | None = None,
        diagnose: bool = True,
    ) -> PodResult:
        """Finds the best node for ``pod`` in ``snapshot`` (among ``within``, if given) and adds
        the pod there; says why not otherwise (node by node, unless ``diagnose`` is False)."""
        result, state = self._find(pod, snapshot, within, diagnose)
        if result.node is not None:
            node = snapshot.node(result.node)
            assert node is not None
            status = self._add(state, pod, node, snapshot)
            if not status.is_success:
                return PodResult(pod, None, status, monotone=False)
        return result

    def put(self, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> Status:
        """Adds ``pod`` to ``node`` (where it passed the filters) with what it takes there
        besides its requests (the Assign plugins record it)."""
        if not self.assigners:
            snapshot.add(pod, node)
            return SUCCESS
        # A fresh state: an Assign plugin finds what its PreFilter would have left there.
        return self._add(CycleState(), pod, node, snapshot)

    def _add(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> Status:
        snapshot.add(pod, node)
        for plugin in self.assigners:
            status = plugin.assign(state, pod, node, snapshot)
            if status.code is not Code.SUCCESS and status.code is not Code.SKIP:
                snapshot.remove(pod)
                return status
        return SUCCESS

    def find(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        *,
        within: frozenset[str] | None = None,
        diagnose: bool = True,
    ) -> PodResult:
        """Like ``place``, without adding the pod."""
        return self._find(pod, snapshot, within, diagnose)[0]

    def _find(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        within: frozenset[str] | None,
        diagnose: bool,
    ) -> tuple[PodResult, CycleState]:
        snapshot.check()  # before anything is cached against the cache's current node set
        state = CycleState()
        status, skipped = self.run_pre_filters(state, pod, snapshot)
        if not status.is_success:
            # Not monotone: a PreFilter may look at what the shape leaves out (claims, say),
            # so another pod of the shape is asked again.
            diagnosis = Diagnosis(total_nodes=len(snapshot.nodes), pod_reason=status.message())
            return PodResult(pod, None, status, diagnosis, monotone=False), state
        active = self._active(state, pod, snapshot, skipped)
        verdict = self.static_verdict(pod, snapshot)
        if active.cluster:
            return self._scan(state, pod, snapshot, verdict, active, within), state
        # What a PreFilter found the pod's verdicts depend on beyond its shape (the claims
        # it asks for, say) keys the heaps too.
        key = (pod.shape, active, state.read(SHAPE_DETAIL, object))
        best = self.index.best(
            key,
            snapshot,
            verdict.feasible,
            self._evaluator(state, pod, verdict, active),
            within,
            lazy=active.lazy,
        )
        failed = state.read(FILTER_ERROR, Status)
        if failed is not None:
            return _failed(pod, failed, snapshot), state
        if best is not None:
            return PodResult(pod, best.name), state
        if not diagnose:
            return PodResult(pod, None, Status(Code.UNSCHEDULABLE), None, monotone=False), state
        diagnosis = self.explain(state, pod, snapshot, verdict, active, within)
        failed = state.read(FILTER_ERROR, Status)
        if failed is not None:
            return _failed(pod, failed, snapshot), state
        status = Status(Code.UNSCHEDULABLE, (diagnosis.message(),))
        # A pod whose verdicts depend on more than its shape tells nothing about others.
        monotone = state.read(SHAPE_DETAIL, object) is None
        return PodResult(pod, None, status, diagnosis, monotone=monotone), state

    def check(self, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> Status:
        """Would ``pod`` pass every filter on ``node`` in ``snapshot``? (A what-if asks this
        node by node: preemption, after taking victims away.)"""
        state = CycleState()
        status, skipped = self.run_pre_filters(state, pod, snapshot)
        if not status.is_success:
            return status
        verdict = self.static_verdict(pod, snapshot)
        rejected = verdict.rejected.get(node.name)
        if rejected is not None:
            return rejected
        active = self._active(state, pod, snapshot, skipped)
        for check in active.node_filters + active.cluster_filters:
            status = check.filter(state, pod, node, snapshot)
            if not status.is_success:
                return state.read(FILTER_ERROR, Status) or status
        return SUCCESS

    def _evaluator(
        self, state: CycleState, pod: PodInfo, verdict: StaticVerdict, active: _Active
    ) -> Callable[[NodeState, Snapshot], int | None]:
        filters = active.node_filters
        scores = active.node_scores
        static_scores = verdict.scores

        def evaluate(node: NodeState, view: Snapshot) -> int | None:
            for check in filters:
                if check.filter(state, pod, node, view).code is not Code.SUCCESS:
                    return None
            total = static_scores.get(node.name, 0)
            for scorer in scores:
                total += scorer.weight * scorer.score(state, pod, node, view)
            return total

        return evaluate

    def _scan(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        verdict: StaticVerdict,
        active: _Active,
        within: frozenset[str] | None,
    ) -> PodResult:
        """Filters and scores every statically feasible node (a CLUSTER plugin is active)."""
        diagnosis = Diagnosis(total_nodes=len(snapshot.nodes))
        filters = active.node_filters + active.cluster_filters
        feasible: list[NodeState] = []
        for node in verdict.feasible:
            if within is not None and node.name not in within:
                continue
            for check in filters:
                status = check.filter(state, pod, node, snapshot)
                if not status.is_success:
                    diagnosis.reject(node.name, status)
                    break
            else:
                feasible.append(node)
        failed = state.read(FILTER_ERROR, Status)
        if failed is not None:
            return _failed(pod, failed, snapshot)
        if not feasible:
            self._reject_outside(diagnosis, verdict, snapshot, within)
            diagnosis.notes.extend(state.read(POD_NOTES, list) or ())
            status = Status(Code.UNSCHEDULABLE, (diagnosis.message(),))
            return PodResult(pod, None, status, diagnosis, monotone=False)
        totals = {n.name: verdict.scores.get(n.name, 0) for n in feasible}
        for scorer in active.node_scores:
            weight = scorer.weight
            for node in feasible:
                totals[node.name] += weight * scorer.score(state, pod, node, snapshot)
        for plugin in active.cluster_scores:
            weight = plugin.weight
            for name, value in plugin.score_nodes(state, pod, feasible, snapshot).items():
                totals[name] += weight * value
        top = max(totals.values())
        best = [name for name, value in totals.items() if value == top]
        return PodResult(pod, self._rng.choice(best), monotone=False)

    def explain(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        verdict: StaticVerdict,
        active: _Active,
        within: frozenset[str] | None = None,
    ) -> Diagnosis:
        """Why no node fits, node by node (runs when the index found none)."""
        diagnosis = Diagnosis(total_nodes=len(snapshot.nodes))
        for node in verdict.feasible:
            if within is not None and node.name not in within:
                continue
            for check in active.node_filters:
                status = check.filter(state, pod, node, snapshot)
                if not status.is_success:
                    diagnosis.reject(node.name, status)
                    break
        self._reject_outside(diagnosis, verdict, snapshot, within)
        # What filters noted about the pod as a whole while going over the nodes (how far
        # the best node was from fitting its devices, say).
        diagnosis.notes.extend(state.read(POD_NOTES, list) or ())
        return diagnosis

    @staticmethod
    def _reject_outside(
        diagnosis: Diagnosis,
        verdict: StaticVerdict,
        snapshot: Snapshot,
        within: frozenset[str] | None,
    ) -> None:
        diagnosis.reject_all(verdict.rejected)
        if within is None:
            return
        outside = Status.unresolvable("", "node(s) were outside the chosen domain")
        for node in verdict.feasible:
            if node.name not in within:
                diagnosis.reject(node.name, outside)


def _failed(pod: PodInfo, status: Status, snapshot: Snapshot) -> PodResult:
    """The pod's attempt failed with a filter's error (``FILTER_ERROR``): no node, whatever
    the others said; the error is what the pod is told."""
    diagnosis = Diagnosis(total_nodes=len(snapshot.nodes), pod_reason=status.message())
    return PodResult(pod, None, status, diagnosis, monotone=False)
