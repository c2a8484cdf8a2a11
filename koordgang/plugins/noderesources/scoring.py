from __future__ import annotations

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import MAX_NODE_SCORE, Scope
from koordgang.model.pod import PodInfo
from koordgang.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resources
from koordgang.settings import ScoreStrategy
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

#: What a pod that requests nothing is assumed to use when scoring, so that such pods are not
#: all stacked on one node (kube-scheduler uses the same figures).
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
_SKIPPED = frozenset({PODS, EPHEMERAL_STORAGE})
_PAIRS_REMEMBERED = 4096


class ResourceScore:
    """LeastAllocated (spread) or MostAllocated (binpack) over cpu, memory and any extended
    resource the pod asks for, equally weighted, after placing the pod."""

    name = "NodeResourcesScore"
    scope = Scope.NODE

    def __init__(self, strategy: ScoreStrategy, weight: int = 1) -> None:
        self.strategy = strategy
        self.weight = weight
        self._most = strategy is ScoreStrategy.MOST_ALLOCATED
        self.rises_with_usage = self._most
        self._pairs: dict[Resources, tuple[tuple[str, int], ...]] = {}

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        info = node.info
        if info is None:
            return 0
        allocatable = info.allocatable
        total = 0
        count = 0
        for name, request in self._scored(pod.requests):
            capacity = allocatable.get(name)
            if capacity <= 0:
                continue
            used = min(capacity, snapshot.used(node, name) + request)
            if self._most:
                total += used * MAX_NODE_SCORE // capacity
            else:
                total += (capacity - used) * MAX_NODE_SCORE // capacity
            count += 1
        return total // count if count else 0

    def _scored(self, requests: Resources) -> tuple[tuple[str, int], ...]:
        """(resource, amount) pairs that the score looks at for a pod with ``requests``: cpu
        and memory (with the defaults for a pod that asks for none) and every extended
        resource asked for. Worked out once per request vector: this runs per node."""
        pairs = self._pairs.get(requests)
        if pairs is None:
            names = [CPU, MEMORY]
            names.extend(n for n in requests.names() if n not in _SKIPPED and n not in names)
            found = []
            for name in names:
                request = requests.get(name)
                if request == 0 and name == CPU:
                    request = DEFAULT_MILLI_CPU
                elif request == 0 and name == MEMORY:
                    request = DEFAULT_MEMORY
                found.append((name, request))
            pairs = tuple(found)
            if len(self._pairs) > _PAIRS_REMEMBERED:
                self._pairs.clear()
            self._pairs[requests] = pairs
        return pairs
