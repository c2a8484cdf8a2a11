"""Preemption as a PostFilter: when a group (a gang group, or a pod alone) does not fit, find
the cheapest victims on a fork of the snapshot and nominate nodes for the members it needs.

What it answers, and what the engine then does:
- SUCCESS with ``evict`` and ``nominated``: victims get a ``DisruptionTarget`` condition and
  are deleted; members are nominated (the room is held for them) and bind, all together, once
  the victims are gone;
- SUCCESS with ``nominated`` only: victims of an earlier attempt are still terminating: keep
  waiting for them (nothing more is evicted);
- UNSCHEDULABLE with a note: why no preemption (policy Never, not helpful, cooling down).

Only the members a gang needs to reach its minimum (less those already running or held) cause
evictions; members beyond it never do.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.diagnosis import counted, plural
from koordgang.framework.group import GroupPlan, SchedulingGroup
from koordgang.framework.handle import Handle
from koordgang.framework.jobs import JobRef
from koordgang.framework.results import PostFilterResult
from koordgang.framework.status import SKIP, SUCCESS, Code, Status
from koordgang.model.pod import PodInfo
from koordgang.plugins.preemption.dry_run import DryRun, plan_room
from koordgang.plugins.preemption.victims import (
    DISABLE_PREEMPTIBLE_LABEL,
    CostModel,
    not_a_victim,
    running_members,
)
from koordgang.state.snapshot import Placement, Snapshot

NAME = "Preemption"
#: After evicting, a job evicts nothing more for this long unless its victims are gone.
COOLDOWN_SECONDS = 60.0
#: Above this many candidate nodes a dry run first looks at a share of them only, as
#: kube-scheduler does (it looks at 10% of the nodes, at least 100): its cost grows with the
#: candidates (each node's pods ordered by eviction cost, each node asked once per pod shape),
#: and on 50,000 full nodes looking at all took 9 s for a job of 256. Only if that share cannot
#: make room are all looked at. Below it the choice is exact.
SAMPLE_ABOVE = 5_000
SAMPLE_SHARE = 0.10


@dataclass(slots=True)
class _Attempt:
    """A preemption carried out for one job: whom it evicted, and where its members go."""

    victims: dict[str, str]
    nominations: dict[str, str]
    at: float
    evicted: int = 0


class Preemption:
    name = NAME

    def __init__(
        self,
        handle: Handle,
        *,
        enabled: bool = True,
        cooldown: float = COOLDOWN_SECONDS,
        sample_above: int = SAMPLE_ABOVE,
    ) -> None:
        self.enabled = enabled
        self._cooldown = cooldown
        self._sample_above = sample_above
        #: Where the next share of candidates starts (it moves on, so that successive dry runs
        #: look at different nodes, as kube-scheduler's random offset does).
        self._offset = 0
        self._attempts: dict[str, _Attempt] = {}
        self.handle = handle

    # -- events --------------------------------------------------------------------------------

    def on_pod_left_pending(self, pod: PodInfo, gone: bool) -> None:
        # A nominated member bound or gone: the attempt is over once none is left waiting.
        for key, attempt in list(self._attempts.items()):
            if attempt.nominations.pop(pod.uid, None) is not None and not attempt.nominations:
                del self._attempts[key]

    def on_pod_gone(self, pod: PodInfo) -> None:
        """When the last victim of an attempt is gone, its members are tried at once (not
        after their backoff): the room is theirs now."""
        for attempt in self._attempts.values():
            if attempt.victims.pop(pod.uid, None) is not None and not attempt.victims:
                cache = self.handle.cache
                members = [p for uid in attempt.nominations if (p := cache.pod(uid)) is not None]
                self.handle.activate(members)

    # -- Reclaim: what preemption could free (so that minResources does not refuse early) -------

    def reclaimable(self, group: SchedulingGroup, snapshot: Snapshot) -> Mapping[str, int]:
        members = list(group.members())
        if not self.enabled or not members or _never(members) or group.preempt_never:
            return {}
        below = group.lowest_priority()
        return snapshot.requested_by(
            lambda pod: pod.is_terminating or bool(pod.node_name and not not_a_victim(pod, below))
        )

    # -- PostFilter ----------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, group: SchedulingGroup, plan: GroupPlan, snapshot: Snapshot
    ) -> PostFilterResult:
        if not self.enabled or plan.satisfied:
            return PostFilterResult(SKIP)
        needed = plan.needed()
        if not needed or not snapshot.nodes:
            return PostFilterResult(SKIP)  # nothing to make room for, or nowhere to make it
        members = list(group.members())
        job = group.job_name()
        if _never(members) or group.preempt_never:
            return self._refuse(members, "preemptionPolicy is Never")
        key = str(group.key) or group.trigger.uid
        now = self.handle.now()
        attempt = self._attempts.get(key)
        if attempt is not None:
            alive = self._alive_victims(attempt)
            if alive:
                return self._wait_for(members, attempt, alive, job)
            if now - attempt.at < self._cooldown:
                ago = now - attempt.at
                return self._refuse(
                    members,
                    f"preempted {plural(attempt.evicted, 'pod')} {ago:.0f}s ago and still does "
                    "not fit; "
                    f"no more preemption for {self._cooldown - ago:.0f}s",
                )
            del self._attempts[key]

        started = time.perf_counter()
        dry_run, reason = self._dry_run(group, plan, needed, snapshot)
        seconds = time.perf_counter() - started
        if dry_run is None or dry_run.failure:
            note = f"preemption is not helpful: {reason or (dry_run.failure if dry_run else '')}"
            result = self._refuse(members, note)
            result.dry_run_seconds = seconds
            return result

        nominated = dict(dry_run.nominations)
        # Nominations of lower-priority pods give way only where this job goes (the dry run
        # counted every one on its candidate nodes as gone, whether it needed the room or not).
        nodes = set(nominated.values())
        if dry_run.victims:
            count = len(dry_run.victims)
            on = len({p.node_name for p in dry_run.victims})
            note = f"preempting {plural(count, 'pod')} on {plural(on, 'node')} for {job}"
        elif any(p.pod.node_name for p in dry_run.freed):
            # Running pods that count as gone: terminating, or being evicted already.
            note = _terminating_note([p for p in dry_run.freed if p.pod.node_name])
        else:
            # Room only lower-priority nominations held: it is taken over, nothing evicted.
            where = ", ".join(sorted(set(nominated.values())))
            note = f"nominated to {where}, where lower-priority pods held room"
        self._attempts[key] = _Attempt(
            victims={
                p.pod.uid: p.node_name
                for p in dry_run.victims + dry_run.freed
                if p.pod.node_name  # running pods: the nominated ones are not waited for
            },
            nominations=nominated,
            at=now,
            evicted=len(dry_run.victims),
        )
        lowest = group.lowest_priority()
        dropped = [
            n.pod.uid
            for n in self.handle.nominations.on_nodes(nodes)
            if n.pod.priority < lowest and n.pod.uid not in nominated
        ]
        return PostFilterResult(
            SUCCESS,
            nominated=nominated,
            notes={p.uid: note for p in members},
            evict=list(dry_run.victims),
            preemptor=job,
            drop_nominations=dropped,
            dry_run_seconds=seconds,
        )

    def _dry_run(
        self, group: SchedulingGroup, plan: GroupPlan, needed: list[PodInfo], snapshot: Snapshot
    ) -> tuple[DryRun | None, str]:
        """Runs the dry run over the nodes where removing pods could help; (None, why) when
        there is no such node. A group that must stay inside one domain (a MustGather rule)
        makes room inside one domain only: the one whose victims cost least."""
        scopes = self.handle.placement_scopes(group, snapshot)
        if scopes is None:
            candidates, unresolvable = _candidates(plan)
            if not candidates:
                return None, counted(unresolvable.items()) or "no node could make room"
            share = self._share(candidates)
            if share is not None:
                # Members go only where the share makes room: every other node failed them
                # already, and asking all of them again is the cost being avoided.
                run, reason = self._dry_run_in(group, needed, snapshot, share, frozenset(share))
                if run is not None and not run.failure:
                    return run, reason
            return self._dry_run_in(group, needed, snapshot, candidates, None)
        best: DryRun | None = None
        reasons: list[str] = []
        for scope in scopes:
            run, reason = self._dry_run_in(group, needed, snapshot, set(scope), scope)
            if run is None or run.failure:
                reasons.append(reason)
            elif best is None or run.cost < best.cost:
                best = run
        if best is not None:
            return best, ""
        if not scopes:
            return None, "no domain of the MustGather rule exists"
        return None, f"no single domain can make room ({reasons[0]})" if reasons else ""

    def _share(self, candidates: set[str]) -> set[str] | None:
        """The share of ``candidates`` to look at first (None: all of them at once)."""
        if len(candidates) <= self._sample_above:
            return None
        names = sorted(candidates)
        size = max(self._sample_above, math.ceil(len(names) * SAMPLE_SHARE))
        start = self._offset % len(names)
        self._offset = start + size
        share = names[start : start + size]
        share += names[: size - len(share)]
        return set(share)

    def _dry_run_in(
        self,
        group: SchedulingGroup,
        needed: list[PodInfo],
        snapshot: Snapshot,
        candidates: set[str],
        within: frozenset[str] | None,
    ) -> tuple[DryRun | None, str]:
        below = group.lowest_priority()
        nominations = self.handle.nominations
        evicting = {uid for attempt in self._attempts.values() for uid in attempt.victims}
        lowest = self.handle.cache.lowest_priority()
        if (lowest is None or lowest >= below) and not evicting:
            # Nothing runs below this job: no node needs a look (many pending jobs of one
            # priority would otherwise scan the cluster on every attempt).
            return None, "no pod of lower priority to evict"

        def gone(pod: PodInfo) -> bool:
            return (
                pod.is_terminating
                or pod.uid in evicting
                or (pod.uid in nominations and pod.priority < below)
            )

        model = CostModel(self.handle.job_of, self.handle.budgets_of, group.job_name())
        eligible: dict[str, list[PodInfo]] = {}
        anything = False
        protected = False
        for name in candidates:
            node = snapshot.node(name)
            if node is None:
                continue
            # Only running pods are evicted: pods of ours still binding, held or nominated
            # are not running anywhere yet.
            pods = []
            for pod in snapshot.pods_on(node):
                if gone(pod):
                    anything = True
                elif pod.node_name:
                    refusal = not_a_victim(pod, below)
                    if not refusal:
                        pods.append(pod)
                    elif refusal != "priority not lower":
                        protected = True
            if pods:
                eligible[name] = sorted(pods, key=model.eviction_order)
        whole = self._whole_jobs(eligible, below)
        if whole:
            # A job disrupted whole or not at all: its pods are victims only if every running
            # member of it may be evicted.
            for name in list(eligible):
                eligible[name] = [
                    p for p in eligible[name] if whole.get(_job_key(self.handle.job_of(p))) != []
                ]
                if not eligible[name]:
                    del eligible[name]
        if not eligible and not anything:
            if protected:
                return None, (
                    "the lower-priority pods there may not be evicted (label "
                    f"{DISABLE_PREEMPTIBLE_LABEL}=true, DaemonSet or static pods)"
                )
            return None, "no pod of lower priority to evict"
        run = plan_room(
            needed,
            snapshot,
            self.handle.placer,
            model,
            sorted(candidates),
            eligible,
            gone,
            within,
        )
        if whole and not run.failure:
            chosen = {p.pod.uid for p in run.victims}
            for placement in list(run.victims):
                for member in whole.get(_job_key(self.handle.job_of(placement.pod))) or ():
                    if member.pod.uid not in chosen:
                        chosen.add(member.pod.uid)
                        run.victims.append(member)
            run.cost = model.cost(p.pod for p in run.victims)
        return run, run.failure

    def _whole_jobs(
        self, eligible: Mapping[str, list[PodInfo]], below: int
    ) -> dict[str, list[Placement]]:
        """The jobs of eligible pods that are disrupted whole, with every running member (an
        empty list: a member may not be evicted, so none of them may)."""
        keys = set()
        for pods in eligible.values():
            for pod in pods:
                job = self.handle.job_of(pod)
                if job is not None and job.whole:
                    keys.add(job.key)
        if not keys:
            return {}
        running = running_members(self.handle.cache.pods(), self.handle.job_of, keys)
        return {
            key: []
            if any(not_a_victim(pod, below) for pod in pods)
            else [Placement(pod, pod.node_name) for pod in pods]
            for key, pods in running.items()
        }

    def _alive_victims(self, attempt: _Attempt) -> dict[str, list[str]]:
        """Victims of ``attempt`` still in the cache, by node."""
        alive: dict[str, list[str]] = {}
        cache = self.handle.cache
        for uid, node in attempt.victims.items():
            if cache.pod(uid) is not None and cache.node_of(uid) is not None:
                alive.setdefault(node, []).append(uid)
        return alive

    def _wait_for(
        self, members: list[PodInfo], attempt: _Attempt, alive: dict[str, list[str]], job: str
    ) -> PostFilterResult:
        count = sum(len(v) for v in alive.values())
        where = ", ".join(sorted(alive))
        note = f"waiting for {plural(count, 'victim')} to terminate on {where}"
        return PostFilterResult(
            SUCCESS,
            nominated=dict(attempt.nominations),
            notes={p.uid: note for p in members},
            preemptor=job,
        )

    @staticmethod
    def _refuse(members: list[PodInfo], note: str) -> PostFilterResult:
        return PostFilterResult(
            Status.unschedulable(NAME, note), notes={p.uid: note for p in members}
        )


def _job_key(job: JobRef | None) -> str:
    return job.key if job is not None else ""


def _never(members: list[PodInfo]) -> bool:
    return any(p.preemption_policy == "Never" for p in members)


def _candidates(plan: GroupPlan) -> tuple[set[str], dict[str, int]]:
    """Nodes where removing pods could help some unplaced member, and the reasons of the
    nodes where it could not (counted, for the explanation)."""
    resolvable: set[str] = set()
    unresolvable_reasons: dict[str, int] = {}
    unresolvable_nodes: set[str] = set()
    for part in plan.parts:
        for result in part.failed:
            diagnosis = result.diagnosis
            if diagnosis is None:
                continue
            for node, code in diagnosis.node_codes.items():
                if code is Code.UNSCHEDULABLE:
                    resolvable.add(node)
                else:
                    unresolvable_nodes.add(node)
            if not resolvable:
                for reason, count in diagnosis.reasons.items():
                    unresolvable_reasons[reason] = max(unresolvable_reasons.get(reason, 0), count)
    return resolvable, unresolvable_reasons


def _terminating_note(terminating: list[Placement]) -> str:
    nodes = sorted({p.node_name for p in terminating})
    count = plural(len(terminating), "victim")
    return f"waiting for {count} to terminate on {', '.join(nodes)}"
