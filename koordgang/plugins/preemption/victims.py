"""Which pods may be evicted for a preemptor, and what evicting a set of them costs.

The cost is compared as a tuple, in this order (smaller is better):

1. running gangs broken: evicting a member of a gang whose running members would fall below
   its minimum breaks that whole gang;
2. PodDisruptionBudget violations (evictions beyond what a budget allows);
3. the highest victim priority;
4. the sum of victim priorities;
5. distinct jobs touched;
6. pods evicted;
7. victims not marked for this job already: a scheduler that restarted between marking its
   victims (their ``DisruptionTarget`` condition) and deleting them picks the same ones again
   where they cost the same, rather than marking another pod;
8. the most recently started first: the earliest start among the victims, latest preferred.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from koordgang.framework.jobs import Budget, JobRef
from koordgang.model.pod import PodInfo

#: Pods with this label set to "true" are never evicted by preemption.
DISABLE_PREEMPTIBLE_LABEL = "scheduling.koordinator.sh/disable-preemptible"


def not_a_victim(pod: PodInfo, below: int) -> str:
    """Why ``pod`` cannot be evicted for a preemptor whose lowest priority is ``below``; ""
    when it can."""
    if pod.priority >= below:
        return "priority not lower"
    if pod.labels.get(DISABLE_PREEMPTIBLE_LABEL) == "true":
        return "preemption disabled by label"
    if pod.is_terminating:
        return "already terminating"
    if pod.owner_kind == "DaemonSet" or pod.mirror:
        # Its replacement would come back to the same node.
        return "daemon or static pod"
    return ""


def running_members(
    pods: Iterable[PodInfo], job_of: Callable[[PodInfo], JobRef | None], keys: Collection[str]
) -> dict[str, list[PodInfo]]:
    """The bound pods of each job of ``keys``, found among ``pods`` (the cache's): what a job
    disrupted whole loses with any one of them."""
    members: dict[str, list[PodInfo]] = {key: [] for key in keys}
    for pod in pods:
        if not pod.node_name:
            continue
        job = job_of(pod)
        if job is not None and job.key in members:
            members[job.key].append(pod)
    return members


@dataclass(frozen=True, slots=True, order=True)
class Cost:
    gangs_broken: int = 0
    budget_violations: int = 0
    top_priority: int = 0
    priority_sum: int = 0
    jobs: int = 0
    pods: int = 0
    #: Victims not already marked for this job (by an earlier attempt).
    unmarked: int = 0
    #: The negated earliest start time: later starts are cheaper to evict.
    started: float = 0.0

    def describe(self) -> str:
        parts = [f"{self.pods} pod(s)", f"{self.jobs} job(s)"]
        if self.gangs_broken:
            parts.append(f"{self.gangs_broken} running gang(s) broken")
        if self.budget_violations:
            parts.append(f"{self.budget_violations} disruption budget violation(s)")
        return ", ".join(parts)


NO_COST = Cost(started=float("-inf"))


class CostModel:
    """Costs sets of victims; ``job_of`` and ``budgets_of`` come from the scheduler."""

    def __init__(
        self,
        job_of: Callable[[PodInfo], JobRef | None],
        budgets_of: Callable[[PodInfo], Sequence[Budget]] = lambda pod: (),
        preemptor: str = "",
    ) -> None:
        self._job_of = job_of
        self._budgets_of = budgets_of
        #: The job victims are chosen for (``default/hello-job``): pods already marked for it
        #: come first among equals.
        self._preemptor = preemptor
        self._jobs: dict[str, JobRef] = {}

    def job(self, pod: PodInfo) -> JobRef:
        known = self._jobs.get(pod.uid)
        if known is None:
            known = self._job_of(pod) or JobRef(pod.owner or pod.key)
            self._jobs[pod.uid] = known
        return known

    def cost(self, victims: Iterable[PodInfo]) -> Cost:
        pods = list(victims)
        if not pods:
            return NO_COST
        per_job: Counter[str] = Counter()
        jobs: dict[str, JobRef] = {}
        per_budget: Counter[str] = Counter()
        allowed: dict[str, int] = {}
        for pod in pods:
            job = self.job(pod)
            per_job[job.key] += 1
            jobs[job.key] = job
            for budget in self._budgets_of(pod):
                per_budget[budget.key] += 1
                allowed[budget.key] = budget.allowed
        broken = sum(
            1
            for key, evicted in per_job.items()
            if jobs[key].minimum > 0 and jobs[key].running - evicted < jobs[key].minimum
        )
        violations = sum(max(0, n - max(0, allowed[key])) for key, n in per_budget.items())
        starts = [p.start_time if p.start_time is not None else p.creation_timestamp for p in pods]
        return Cost(
            gangs_broken=broken,
            budget_violations=violations,
            top_priority=max(p.priority for p in pods),
            priority_sum=sum(p.priority for p in pods),
            jobs=len(per_job),
            pods=len(pods),
            unmarked=sum(1 for p in pods if not self._marked(p)),
            started=-min(starts),
        )

    def _marked(self, pod: PodInfo) -> bool:
        return bool(self._preemptor) and pod.preempted_by == self._preemptor

    def eviction_order(self, pod: PodInfo) -> tuple[int, int, int, int, float]:
        """Sort key: the pods to evict first come first (a lone pod before a gang member,
        lower priority first, one marked for this job already first, the most recently
        started first)."""
        job = self.job(pod)
        in_gang = 1 if job.minimum > 0 else 0
        started = pod.start_time if pod.start_time is not None else pod.creation_timestamp
        marked = 0 if self._marked(pod) else 1
        return (in_gang, len(self._budgets_of(pod)), pod.priority, marked, -started)
