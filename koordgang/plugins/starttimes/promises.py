"""Start times told, and whether jobs kept to them: a job that starts later than it was first
told is counted, with why its start slipped.

Why is found when a plan moves a job's start past what it was told (or can give it none): a
job of higher priority that arrived since it was told now comes first (``higher_priority``),
or a node the plan had for it went away (``node_gone``), or a pod it waited for is still
there past its bound (``outlived_bound``: the kubelet, the Job controller or a deletion took
longer than allowed), or else the room was taken some other way, by another scheduler or by
pods that came first (``room_taken``). A job late without a plan having seen it slip (it
started before the next plan) counts as ``room_taken``: nothing says a pod outlived its bound.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from koordgang.plugins.starttimes.inputs import WaitingJob
from koordgang.plugins.starttimes.messages import by_minute
from koordgang.state.start_plan import Estimate

__all__ = ["Promises"]


@dataclass(slots=True)
class _Told:
    #: The start it was first told (wall clock), and when.
    start: float
    since: float
    priority: int
    nodes: frozenset[str]
    #: The pods whose end it waited for.
    waits_for: frozenset[str]
    #: Why its start slipped past ``start``, once a plan said so ("" until then).
    slipped: str = ""


class Promises:
    def __init__(self) -> None:
        self._told: dict[str, _Told] = {}

    def told(self, job: WaitingJob, estimate: Estimate, now: float) -> None:
        """``job``'s pods are told ``estimate`` at ``now`` (wall clock); the first start told
        (to the minute, as shown) is the one it is held to."""
        if job.key not in self._told and estimate.start is not None:
            self._told[job.key] = _Told(
                by_minute(estimate.start),
                now,
                job.priority,
                frozenset(estimate.nodes),
                frozenset(estimate.waits_for),
            )

    def planned(
        self,
        queue: Sequence[WaitingJob],
        estimates: dict[str, Estimate],
        nodes: Collection[str],
        overdue: Collection[str] = (),
    ) -> None:
        """A new plan: note why the jobs whose start it moves past what they were told slip."""
        ahead: list[WaitingJob] = []
        for job in queue:
            told = self._told.get(job.key)
            estimate = estimates.get(job.key)
            if told is not None and not told.slipped and estimate is not None:
                late = estimate.start is None or estimate.start > told.start
                if late and not estimate.unplanned:
                    told.slipped = _why(told, ahead, nodes, overdue)
            ahead.append(job)

    def started(self, key: str, now: float) -> str | None:
        """Job ``key`` started at ``now``: why later than first told, or None (it kept to it,
        or was told no time)."""
        told = self._told.pop(key, None)
        if told is None or now <= told.start:
            return None
        return told.slipped or "room_taken"

    def forget(self, key: str) -> None:
        """A job no longer waiting that did not start (deleted, or not seen for long)."""
        self._told.pop(key, None)


def _why(
    told: _Told, ahead: Sequence[WaitingJob], nodes: Collection[str], overdue: Collection[str]
) -> str:
    if any(j.priority > told.priority and j.created > told.since for j in ahead):
        return "higher_priority"
    if not told.nodes <= set(nodes):
        return "node_gone"
    if any(pod in overdue for pod in told.waits_for):
        return "outlived_bound"  # a pod it waited for is still here, past its bound
    return "room_taken"
