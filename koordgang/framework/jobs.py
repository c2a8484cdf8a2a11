"""What preemption asks about pods that run: the job each belongs to, and the disruption
budgets that cover it. The plugins that know (coscheduling; the budgets in the cache) answer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JobRef:
    """The job a running pod belongs to, as far as breaking it is concerned."""

    key: str
    #: Members that must keep running for the job to keep working (a gang's minimum; 0 for a
    #: pod whose siblings do not depend on it).
    minimum: int = 0
    #: Members running now.
    running: int = 1
    #: Disrupted whole or not at all (upstream's ``disruptionMode: {all: {}}``): evicting one
    #: member means evicting every running one.
    whole: bool = False


@dataclass(frozen=True, slots=True)
class Budget:
    """A PodDisruptionBudget as preemption sees it: which one, and how many it allows."""

    key: str
    allowed: int
