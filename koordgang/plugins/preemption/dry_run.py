"""The dry run: on a fork of the cycle's snapshot, find the cheapest set of victims that makes
room for the members a job needs, and where each member would go.

1. Pods already terminating on the candidate nodes count as gone (they are, soon), and so do
   pods merely nominated there with a lower priority (their nominations are given up).
2. Members one by one: where one fits without evicting anything, it goes there; otherwise, for
   every candidate node, the cheapest victims of that node that let it pass every filter
   (the shortest prefix in eviction order, or one victim alone if that costs less); the node
   whose set costs least wins, its victims leave the fork.
3. Reprieve: every victim, most expensive first, comes back if all members on its node
   still pass their filters with it there.

A node's answer for a pod shape is remembered (in a heap, by cost) until the node changes in
the fork, so a job of n members over N nodes costs about N + n filter runs, not n * N.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from koordgang.framework.diagnosis import counted
from koordgang.framework.group import Placer
from koordgang.model.pod import PodInfo
from koordgang.plugins.preemption.victims import NO_COST, Cost, CostModel
from koordgang.state.node_state import NodeState
from koordgang.state.snapshot import Placement, Snapshot


@dataclass(slots=True)
class DryRun:
    #: member uid -> the node it would go to.
    nominations: dict[str, str] = field(default_factory=dict)
    #: Pods to evict, with their node.
    victims: list[Placement] = field(default_factory=list)
    #: Pods counted as gone without evicting them (terminating, or lower-priority pods only
    #: nominated there).
    freed: list[Placement] = field(default_factory=list)
    cost: Cost = NO_COST
    #: Why no room can be made (empty when it can).
    failure: str = ""


def plan_room(
    members: Sequence[PodInfo],
    snapshot: Snapshot,
    placer: Placer,
    model: CostModel,
    candidates: Iterable[str],
    eligible: dict[str, list[PodInfo]],
    gone: Callable[[PodInfo], bool],
    within: frozenset[str] | None = None,
) -> DryRun:
    """``eligible``: per candidate node, the pods that may be evicted there, in eviction order
    (see ``CostModel.eviction_order``); ``gone``: pods that count as gone already."""
    work = snapshot.fork()
    # What pods that are gone still hold (victims deleted, their claims not given back yet)
    # counts as free: room on its way is not made again by evicting more.
    work.release_left_behind()
    names = [n for n in candidates if snapshot.node(n) is not None]
    result = DryRun()
    for name in names:
        node = work.node(name)
        assert node is not None
        for pod in [p for p in work.pods_on(node) if gone(p)]:
            work.remove(pod)
            result.freed.append(Placement(pod, name))

    chosen: dict[str, Placement] = {}
    search = _NodeSearch(work, placer, model, names, eligible, chosen)
    for member in members:
        # Why not: asked below, if it comes to that.
        placed = placer.place(member, work, within=within, diagnose=False)
        if placed.node is not None:
            result.nominations[member.uid] = placed.node
            continue
        best = search.cheapest(member)
        if best is None:
            result.failure = _why_not(member, work, placer, names, eligible, chosen, within)
            return result
        name, needed = best
        node = work.node(name)
        assert node is not None
        for victim in needed:
            work.remove(victim)
            chosen[victim.uid] = Placement(victim, name)
        status = placer.put(member, node, work)
        if not status.is_success:
            result.failure = status.message() or f"{member.key} does not fit on {name}"
            return result
        result.nominations[member.uid] = name

    _reprieve(work, placer, model, chosen, result.nominations, members)
    result.victims = list(chosen.values())
    result.cost = model.cost(p.pod for p in result.victims)
    return result


class _NodeSearch:
    """The node where room for a member costs least. For a member whose filters look at its
    node alone, each node's answer is kept in a heap per pod shape, with the node's version:
    only the node just used (whose version changed) is asked again, so n members over N
    nodes cost N + n filter runs. A member with pod affinity or spreading is asked about
    every node each time (its answer depends on the other nodes)."""

    def __init__(
        self,
        work: Snapshot,
        placer: Placer,
        model: CostModel,
        names: list[str],
        eligible: dict[str, list[PodInfo]],
        chosen: dict[str, Placement],
    ) -> None:
        self._work = work
        self._placer = placer
        self._model = model
        self._names = names
        self._eligible = eligible
        self._chosen = chosen
        self._heaps: dict[object, list[tuple[Cost, int, str, int, list[PodInfo]]]] = {}

    def _ask(self, member: PodInfo, index: int) -> tuple[Cost, int, str, int, list[PodInfo]] | None:
        name = self._names[index]
        node = self._work.node(name)
        assert node is not None
        version = self._work.version_of(node)
        left = [p for p in self._eligible.get(name, ()) if p.uid not in self._chosen]
        needed = _victims_to_fit(member, node, self._work, left, self._placer, self._model)
        if needed is None:
            return None
        return (self._model.cost(needed), index, name, version, needed)

    def cheapest(self, member: PodInfo) -> tuple[str, list[PodInfo]] | None:
        # What a member's claims ask for is not in its shape: a member with claims is asked
        # about every node too.
        if member.pod_affinity is not None or member.spread_constraints or member.resource_claims:
            answers = [a for i in range(len(self._names)) if (a := self._ask(member, i))]
            if not answers:
                return None
            best = min(answers, key=lambda a: (a[0], a[1]))
            return best[2], best[4]
        heap = self._heaps.get(member.shape)
        if heap is None:
            heap = [a for i in range(len(self._names)) if (a := self._ask(member, i))]
            heapq.heapify(heap)
            self._heaps[member.shape] = heap
        while heap:
            top = heap[0]
            node = self._work.node(top[2])
            if node is not None and self._work.version_of(node) == top[3]:
                return top[2], top[4]
            fresh = self._ask(member, top[1]) if node is not None else None
            if fresh is None:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, fresh)
        return None


def _victims_to_fit(
    member: PodInfo,
    node: NodeState,
    view: Snapshot,
    victims: list[PodInfo],
    placer: Placer,
    model: CostModel,
) -> list[PodInfo] | None:
    """The cheapest victims on ``node`` found for ``member``: the shortest prefix of
    ``victims`` (in eviction order) whose removal lets it pass, or one victim that does it
    alone, whichever costs less. A prefix can overshoot: among pods of one priority, most
    recently started first, two small ones may come before a larger one that alone makes the
    room with one victim fewer (and which of them came first would decide the node)."""
    prefix = _shortest_prefix(member, node, view, victims, placer)
    if prefix is None or len(prefix) == 1:
        return prefix
    best, cost = prefix, model.cost(prefix)
    # Only a victim the prefix would have reached by its class (lone or gang member, budgets,
    # priority, marked), not by its start time: a node's set is costed alone, so a gang's
    # members or a budget's pods taken one per node would add up to a broken gang or budget
    # that no single node's cost shows. The order keeps those last; so does this.
    reach = model.eviction_order(prefix[-1])[:-1]
    for victim in victims:
        if model.eviction_order(victim)[:-1] > reach:
            break  # in eviction order: every victim after it is of a later class too
        if model.job(victim).whole:
            continue  # it goes with every running member of its job: not alone, nor cheaply
        alone = [victim]
        if model.cost(alone) >= cost:
            continue
        trial = view.fork()
        trial.remove(victim)
        if trial.insufficient(node, member.requests):
            continue
        if placer.check(member, node, trial).is_success:
            best, cost = alone, model.cost(alone)
    return best


def _shortest_prefix(
    member: PodInfo, node: NodeState, view: Snapshot, victims: list[PodInfo], placer: Placer
) -> list[PodInfo] | None:
    """The shortest prefix of ``victims`` whose removal lets ``member`` pass on ``node``."""
    if not victims:
        return None
    trial = view.fork()
    removed: list[PodInfo] = []
    for victim in victims:
        trial.remove(victim)
        removed.append(victim)
        if trial.insufficient(node, member.requests):
            continue  # not enough room yet: no need to run the filters
        if placer.check(member, node, trial).is_success:
            return removed
    return None


def _reprieve(
    work: Snapshot,
    placer: Placer,
    model: CostModel,
    chosen: dict[str, Placement],
    nominations: dict[str, str],
    members: Sequence[PodInfo],
) -> None:
    by_uid = {m.uid: m for m in members}
    on_node: dict[str, list[PodInfo]] = {}
    for uid, name in nominations.items():
        on_node.setdefault(name, []).append(by_uid[uid])
    order = sorted(chosen.values(), key=lambda p: model.eviction_order(p.pod), reverse=True)
    for placement in order:
        node = work.node(placement.node_name)
        assert node is not None
        work.add(placement.pod, node)
        if _all_pass(on_node.get(placement.node_name, ()), node, work, placer):
            del chosen[placement.pod.uid]
        else:
            work.remove(placement.pod)


def _all_pass(members: Iterable[PodInfo], node: NodeState, view: Snapshot, placer: Placer) -> bool:
    """Whether every member still passes on ``node`` with a victim back. Each is tried again
    on a fork: one that passes goes back with what it takes now (its devices may differ from
    before, the victim's being in use again); one that does not stays as it was."""
    for member in members:
        trial = view.fork()
        trial.remove(member)
        if (
            placer.check(member, node, trial).is_success
            and placer.put(member, node, trial).is_success
        ):
            trial.commit()
            continue
        return False
    return True


def _why_not(
    member: PodInfo,
    work: Snapshot,
    placer: Placer,
    names: list[str],
    eligible: dict[str, list[PodInfo]],
    chosen: dict[str, Placement],
    within: frozenset[str] | None,
) -> str:
    """What still stops ``member`` with every eligible victim gone."""
    empty = work.fork()
    for name in names:
        for pod in eligible.get(name, ()):
            if pod.uid not in chosen:
                empty.remove(pod)
    found = placer.find(member, empty, within=within)
    if found.diagnosis is not None and found.diagnosis.reasons:
        return counted(found.diagnosis.reasons.items())
    return found.message or "no node has room even without lower-priority pods"
