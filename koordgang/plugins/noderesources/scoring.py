from __future__ import annotations

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import MAX_NODE_SCORE, Scope
from koordgang.model.pod import PodInfo
from koordgang.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from koordgang.settings import ScoreStrategy
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

#: What a pod that requests nothing is assumed to use when scoring, so that such pods are not
#: all stacked on one node (kube-scheduler uses the same figures).
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
_SKIPPED = frozenset({PODS, EPHEMERAL_STORAGE})


class ResourceScore:
    """LeastAllocated (spread) or MostAllocated (binpack) over cpu, memory and any extended
    resource the pod asks for, equally weighted, after placing the pod."""

    name = "NodeResourcesScore"
    scope = Scope.NODE

    def __init__(self, strategy: ScoreStrategy, weight: int = 1) -> None:
        self.strategy = strategy
        self.weight = weight
        self._most = strategy is ScoreStrategy.MOST_ALLOCATED

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        info = node.info
        if info is None:
            return 0
        requests = pod.requests
        total = 0
        count = 0
        names = [CPU, MEMORY]
        names.extend(n for n in requests.names() if n not in _SKIPPED and n not in (CPU, MEMORY))
        for name in names:
            allocatable = info.allocatable.get(name)
            if allocatable <= 0:
                continue
            request = requests.get(name)
            if request == 0 and name == CPU:
                request = DEFAULT_MILLI_CPU
            elif request == 0 and name == MEMORY:
                request = DEFAULT_MEMORY
            used = min(allocatable, snapshot.used(node, name) + request)
            if self._most:
                total += used * MAX_NODE_SCORE // allocatable
            else:
                total += (allocatable - used) * MAX_NODE_SCORE // allocatable
            count += 1
        return total // count if count else 0
