"""One small protocol per extension point, as in kube-scheduler's framework.

Every method is synchronous: a scheduling cycle runs without awaiting, which is what makes it
atomic with respect to informer events on a single event loop.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.status import Status
from koordgang.model.pod import PodInfo
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Snapshot

SortKey = tuple[Any, ...]


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def sort_key(self, pod: PodInfo) -> SortKey:
        """Smaller keys are tried first."""


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        """Checks that need no node; may compute values for Filter and Score."""


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    #: True when the verdict depends only on the pod's shape and the node's spec (labels,
    #: taints, readiness), not on what runs there: such verdicts are cached per pod shape.
    static: bool

    def filter(
        self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot
    ) -> Status:
        """Can ``pod`` run on ``node``?"""


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    weight: int

    def score(self, state: CycleState, pod: PodInfo, node: NodeState, snapshot: Snapshot) -> int:
        """0 (worst) to 100 (best) for placing ``pod`` on a feasible ``node``."""


MAX_NODE_SCORE = 100
