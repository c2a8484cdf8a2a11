"""A what-if on a fork of the scheduler's state: what would one scheduling cycle do with these
pods if they were created now?

A framework of its own with fresh plugins, from the same profile the daemon runs
(``default_framework``), fed what the daemon knows:

- the cache (nodes, every pod, the assumed ones), read and never changed: the cycles run on a
  ``Snapshot`` of it that is never committed (each cycle's fork commits into that root
  snapshot only, so a later group of the same file sees the earlier ones placed);
- the group objects and other watched objects the daemon's plugins were fed (``objects``),
  replayed as ADDED events, then the file's own gang objects;
- the daemon's pods of ours, replayed into the fresh plugins (gang membership, the satisfied
  and timed-out latches are derived from them as after a restart), and its held placements
  and nominations, copied;
- the file's pods, as if they had just arrived.

The fresh plugins are served by ``ReadOnly``: reports are collected (the file's pods'
warnings are shown, nothing is written), metrics and queue moves go nowhere. Everything is
synchronous: on the daemon's event loop the what-if is atomic with respect to informer events,
like a cycle. ``--from-cluster`` uses the same code with a cache filled from listed objects.

Why not the daemon's own framework: docs/decisions/whatif-fork.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from koordgang.engine.pending import PendingRule
from koordgang.framework.cycle import CycleOutcome, run_cycle
from koordgang.framework.framework import Framework
from koordgang.framework.group import SchedulingGroup
from koordgang.framework.handle import Services
from koordgang.framework.report import Report
from koordgang.framework.status import Code
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.model.gang import GangMode
from koordgang.model.pod import PodInfo
from koordgang.model.resources import format_amount
from koordgang.plugins.preemption.victims import CostModel
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.nominations import Nominations
from koordgang.state.snapshot import Placement, Snapshot
from koordgang.state.stores import Stores
from koordgang.state.waiting import WaitingPods
from koordgang.whatif.claims import devices, podgroup_claims
from koordgang.whatif.inputs import WhatIfError, WhatIfInput, make_claims, make_pods
from koordgang.whatif.ties import NodeKind, node_kinds, node_ties, victim_ties

#: What a group's cycle would lead to.
BIND = "bind"  # placed now, bound at once
HOLD = "hold"  # placed now, held for members still missing (NonStrict)
PREEMPT = "preempt"  # room made by evicting lower-priority pods; members nominated
RESERVE = "reserve"  # nodes nominated and held without evicting (a PostFilter's reservation)
PENDING = "pending"  # stays pending, told why
GATED = "gated"  # kept out of the queue (scheduling gates, a timed-out gang)


@dataclass(slots=True)
class DaemonState:
    """What the what-if forks: the scheduler's cache and stores, and what its plugins were
    fed."""

    cache: SchedulerCache
    stores: Stores
    #: Watched objects as the plugins last heard of them: (resource id, object).
    objects: Iterable[tuple[str, Mapping[str, Any]]] = ()
    waiting: WaitingPods = field(default_factory=WaitingPods)
    nominations: Nominations = field(default_factory=Nominations)
    #: What the daemon's plugins give a what-if's fresh ones (``Framework.carried()``): the
    #: jobs waiting for room, that a file's job starts behind.
    carried: Mapping[str, object] = field(default_factory=dict)


class ReadOnly:
    """What the what-if's fresh plugins may change: nothing that reaches the cluster or the
    daemon's queue. What they would have told users is kept (to show the file's own
    warnings)."""

    def __init__(
        self,
        cache: SchedulerCache,
        stores: Stores,
        scheduler_names: Iterable[str],
        nominations: Nominations,
    ) -> None:
        self.cache = cache
        self.stores = stores
        self._pending = PendingRule(scheduler_names, cache, nominations)
        #: What the plugins would have told users.
        self.reports: list[Report] = []
        #: Pods placed by an earlier cycle of this what-if (no longer pending).
        self.placed: Snapshot | None = None

    def is_pending(self, pod: PodInfo) -> bool:
        # The daemon's rule, plus: not placed by this what-if already.
        if not self._pending.is_pending(pod):
            return False
        return self.placed is None or self.placed.node_of(pod.uid) is None

    def services(self, clock: Callable[[], float], wall: Callable[[], float]) -> Services:
        return Services(
            cache=self.cache,
            stores=self.stores,
            now=clock,
            wall=wall,
            report=self.reports.append,
            record=lambda metric, value, label: None,
            activate=lambda pods: None,
            request_move=lambda: None,
            is_pending=self.is_pending,
        )


@dataclass(slots=True)
class Fork:
    framework: Framework
    gangs: GangRegistry
    services: ReadOnly


def fork(
    settings: Settings,
    state: DaemonState,
    *,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], float] = time.time,
) -> Fork:
    """A framework of fresh plugins that knows what the daemon knows, and changes none of it."""
    waiting = WaitingPods()
    for held in state.waiting:
        deadline = state.waiting.deadline(held.group)
        waiting.add(
            held.pod,
            held.node,
            group=held.group,
            part=held.part,
            since=held.since,
            deadline=math.inf if deadline is None else deadline,
        )
    gangs = GangRegistry(
        settings.default_gang_waiting_time, waiting=waiting, resolve=Resolve(GANG_APIS)
    )
    framework = default_framework(settings, gangs)
    for nomination in state.nominations:
        framework.nominations.add(nomination.pod, nomination.node, nomination.group)
    services = ReadOnly(state.cache, state.stores, settings.scheduler_names, framework.nominations)
    framework.serve(services.services(clock, wall))
    framework.carry(state.carried)
    for kind, obj in state.objects:
        framework.on_object(kind, "ADDED", obj)
    for pod in state.cache.pods():
        if pod.scheduler_name in settings.scheduler_names:
            framework.on_pod(None, pod)
    # What the daemon's own pods were told is the daemon's business; from here on, only what
    # the file's pods hear is kept.
    services.reports.clear()
    return Fork(framework, gangs, services)


def what_if(
    settings: Settings,
    state: DaemonState,
    file: WhatIfInput,
    priorities: Mapping[str, int] | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], float] = time.time,
    held_known: bool = True,
) -> dict[str, Any]:
    """The answer (JSON-ready) for the file read (``read_input``): its pods as created now,
    spec.priority from ``priorities`` (``make_pods``), its gang objects, and the claims it
    makes (taken to exist); raises :class:`WhatIfError` when the file declares its gang
    wrongly or a claim cannot be made. ``held_known`` False (a state listed from the API
    server): the placements the daemon holds are not in it, and the answer says so where they
    may be."""
    forked = fork(settings, state, clock=clock, wall=wall)
    framework, services = forked.framework, forked.services
    for obj in file.gang_objects:
        framework.on_object(obj.resource_id, "ADDED", obj.obj)
    # Which claims of the pods are an upstream PodGroup's, and which claim the controller
    # made for it, is what the plugins were told (the cluster's PodGroups, the file's).
    podgroups = framework.podgroup_claims
    pods = make_pods(file.pods, priorities or {}, wall(), podgroups)
    claims = make_claims(file, pods, podgroups)
    for pod in pods:
        framework.on_pod(None, pod)
    _check_gangs(forked.gangs, pods)
    ours = {pod.uid for pod in pods}
    base = Snapshot(state.cache)
    services.placed = base
    # The file's claims exist in this what-if alone.
    state.stores.dra.view(base).add_provisional(claims)
    groups: list[dict[str, Any]] = []
    done: set[str] = set()
    kinds: dict[str, NodeKind] | None = None
    for pod in sorted(pods, key=framework.sort_key):
        if pod.uid in done:
            continue
        gate = framework.run_pre_enqueue(pod)
        if not gate.is_success:
            done.add(pod.uid)
            groups.append(_gated(pod, gate.message()))
            continue
        group = framework.build_group(pod, framework.group_members(pod))
        # Before the cycle: its placements, committed into ``base``, would set apart the
        # nodes it chose from their alike ones. Kept while cycles commit nothing.
        if kinds is None:
            kinds = node_kinds(base)
        outcome = run_cycle(framework, group, base.fork(), clock())
        done.update(member.uid for member in group.members())
        # One weighing of victims for the answer's list and its ties.
        model = _cost_model(forked, group)
        answer = _group_answer(forked, group, outcome, model, ours, clock())
        view = state.stores.dra.view(base)
        answer["devices"] = devices(view, outcome)
        answer["podGroupClaims"] = podgroup_claims(
            view, state.stores.dra, podgroups, [p for p in group.members() if p.uid in ours]
        )
        answer["ties"] = _ties(outcome, model, kinds, base)
        if answer["outcome"] != PENDING:
            kinds = None
        if answer["outcome"] == PENDING and outcome.plan is not None:
            answer["reservation"] = _would_reserve(forked, group, outcome, base, wall())
        groups.append(answer)
    warnings = sorted(
        {
            f"{r.obj.namespace}/{r.obj.name}: {r.message}"
            for r in services.reports
            if r.event_type == "Warning"
        }
    )
    if not held_known:
        warnings += _unknown_holds(forked.gangs, ours)
    fits = all(g["outcome"] == BIND for g in groups)
    return {
        "fits": fits,
        "pods": len(pods),
        "groups": groups,
        "warnings": warnings,
    }


def _unknown_holds(gangs: GangRegistry, ours: set[str]) -> list[str]:
    """What a state listed from the API server cannot know: the daemon holds placements for
    NonStrict gangs still short of their minimum, and no object shows them."""
    short = sorted(
        gang.key
        for gang in gangs.gangs()
        if gang.is_gang()
        and gang.spec.mode is GangMode.NON_STRICT
        and not gang.satisfied
        and any(pod.uid not in ours for pod in gang.pending_members())
    )
    if not short:
        return []
    return [
        f"not known from the API server: the daemon may hold room for the pending members of "
        f"{', '.join(short)} (NonStrict, short of their minimum); this answer counts it as free "
        f"(ask the daemon, `--server`, for what it holds)"
    ]


def _check_gangs(gangs: GangRegistry, pods: Sequence[PodInfo]) -> None:
    """A gang of the file declared wrongly is refused, naming the key (the daemon would fall
    back to a default, or never start it)."""
    for pod in pods:
        gang = gangs.gang_of(pod.uid)
        if gang is None or gang.needs_podgroup():
            continue
        issues = gang.spec.issues
        if issues:
            text = "; ".join(issue.message() for issue in issues)
            raise WhatIfError(f"pod {pod.key} (gang {gang.key}): {text}")


def _gated(pod: PodInfo, message: str) -> dict[str, Any]:
    return {
        "gangs": [],
        "pods": [pod.key],
        "others": [],
        "outcome": GATED,
        "placements": {},
        "domain": "",
        "unplaced": {pod.key: message},
        "short": {},
        "evict": [],
        "evictionCost": "",
        "nominated": {},
        "reservation": None,
        "notes": [],
        "devices": {},
        "podGroupClaims": [],
        "ties": [],
    }


def _group_answer(
    forked: Fork,
    group: SchedulingGroup,
    outcome: CycleOutcome,
    model: CostModel,
    ours: set[str],
    now: float,
) -> dict[str, Any]:
    members = list(group.members())
    by_uid = {pod.uid: pod for pod in members}
    gang_keys = [part.key for part in group.parts if part.key]
    answer = _gated(group.trigger, "")
    answer["gangs"] = gang_keys
    answer["pods"] = [pod.key for pod in members if pod.uid in ours]
    answer["others"] = [pod.key for pod in members if pod.uid not in ours]
    answer["unplaced"] = {}

    def name(uid: str) -> str:
        pod = by_uid.get(uid)
        return pod.key if pod is not None else uid

    if outcome.bind or outcome.hold:
        answer["outcome"] = BIND if outcome.bind else HOLD
        placed = outcome.bind or outcome.hold
        answer["placements"] = {p.pod.key: p.node_name for p in placed}
        if outcome.hold and outcome.deadline is not None:
            answer["holdSeconds"] = max(0.0, round(outcome.deadline - now, 1))
    elif outcome.nominated:
        answer["outcome"] = PREEMPT if outcome.evict else RESERVE
        answer["nominated"] = {name(uid): node for uid, node in outcome.nominated.items()}
        if outcome.evict:
            answer["evict"], answer["evictionCost"] = _victims(model, outcome.evict)
        else:
            # A reservation: nodes held for the group without evicting anybody (pods there
            # finish on their own); what the plugin says about it is the note.
            answer["reservation"] = {
                "nominated": dict(answer["nominated"]),
                "notes": sorted({outcome.unplaced.get(p.uid, "") for p in members} - {""}),
            }
    elif outcome.allow_waiting:
        answer["outcome"] = BIND
    else:
        answer["outcome"] = PENDING if outcome.status.code is not Code.WAIT else HOLD
    if answer["outcome"] in (PENDING, PREEMPT, RESERVE):
        answer["unplaced"] = {name(uid): text for uid, text in outcome.unplaced.items() if text}
        answer["short"] = _short(outcome)
    notes = sorted(set(answer["unplaced"].values()))
    if answer["outcome"] in (PREEMPT, RESERVE):
        # What the PostFilter says replaces the diagnosis for the pods; the answer keeps both.
        notes = _failures(outcome) + [n for n in notes if n not in _failures(outcome)]
    answer["notes"] = notes
    answer["domain"] = _domain(forked, gang_keys, answer["outcome"])
    return answer


def _would_reserve(
    forked: Fork, group: SchedulingGroup, outcome: CycleOutcome, snapshot: Snapshot, now: float
) -> dict[str, Any] | None:
    """A job that stays pending, nothing to evict for it: which nodes the starvation guard
    would hold for it once it has waited ``reserveAfter``, and the pods there it would wait
    for (with how long each has run)."""
    if outcome.plan is None:
        return None
    reservation = forked.framework.hold_preview(group, outcome.plan, snapshot)
    if reservation is None:
        return None
    names = {pod.uid: pod.key for pod in group.members()}
    cache = forked.services.cache
    blockers = []
    for uid, node in sorted(reservation.blockers.items(), key=lambda kv: kv[1]):
        pod = cache.pod(uid)
        if pod is None:
            continue
        started = pod.start_time if pod.start_time is not None else pod.creation_timestamp
        blockers.append(
            {"pod": pod.key, "node": node, "runningSeconds": max(0, round(now - started))}
        )
    ready = len(reservation.nodes - set(reservation.blockers.values()))
    return {
        "afterSeconds": reservation.after_seconds,
        "nominated": {names.get(uid, uid): node for uid, node in reservation.nominations.items()},
        "waitingFor": blockers,
        "notes": [
            f"after waiting {reservation.after_seconds:g}s it would hold "
            f"{len(reservation.nodes)} node(s) ({ready} with room now) and wait for "
            f"{len(blockers)} pod(s) there to finish; nothing is evicted"
        ],
    }


def _cost_model(forked: Fork, group: SchedulingGroup) -> CostModel:
    """Preemption's weighing of victims for ``group``, with the fork's jobs and disruption
    budgets (pods already marked for the group's job go first, as in the daemon)."""
    return CostModel(forked.framework.job_of, forked.framework.handle.budgets_of, group.job_name())


def _ties(
    outcome: CycleOutcome,
    model: CostModel,
    kinds: Mapping[str, NodeKind],
    snapshot: Snapshot,
) -> list[str]:
    """Where the daemon may choose otherwise, the choices being equal: among alike nodes for
    placements, among alike pods for victims (``ties.py``). ``kinds`` are the nodes before the
    cycle; ``snapshot`` is the state the cycle saw, which a preemption leaves unchanged."""
    placed = outcome.bind or outcome.hold
    if placed:
        return node_ties(kinds, placed)
    if outcome.nominated and outcome.evict:
        return victim_ties(
            outcome.evict, lambda pod: model.job(pod).key, model.eviction_order, snapshot
        )
    return []


def _victims(model: CostModel, evict: Sequence[Placement]) -> tuple[list[dict[str, Any]], str]:
    """The victims in the order preemption weighs them (``victims.py``), and their cost."""
    ordered = sorted(evict, key=lambda p: (model.eviction_order(p.pod), p.pod.key))
    rows = []
    for placement in ordered:
        pod = placement.pod
        job = model.job(pod)
        rows.append(
            {
                "pod": pod.key,
                "node": placement.node_name,
                "priority": pod.priority,
                "job": job.key,
                "gang": job.minimum > 0,
            }
        )
    return rows, model.cost(p.pod for p in evict).describe()


def _short(outcome: CycleOutcome) -> dict[str, str]:
    """What the members that found no node ask for, of each resource some node was short of
    (``{"nvidia.com/gpu": "8"}``); the diagnoses say which nodes lacked what."""
    plan = outcome.plan
    if plan is None:
        return {}
    short: set[str] = set()
    left: list[PodInfo] = []
    for part in plan.parts:
        left.extend(part.skipped)
        for result in part.failed:
            left.append(result.pod)
            if result.diagnosis is None:
                continue
            for reason in result.diagnosis.reasons:
                if reason.startswith("Insufficient "):
                    short.add(reason.removeprefix("Insufficient "))
    totals = {r: sum(pod.requests.get(r, 0) for pod in left) for r in sorted(short)}
    return {r: format_amount(r, amount) for r, amount in totals.items() if amount}


def _failures(outcome: CycleOutcome) -> list[str]:
    """Why members found no node, in the cycle's words (the diagnoses), before any PostFilter
    note."""
    plan = outcome.plan
    if plan is None:
        return []
    return sorted({result.message for part in plan.parts for result in part.failed} - {""})


def _domain(forked: Fork, gang_keys: Sequence[str], outcome: str) -> str:
    """The network-topology domain the group was gathered in, when a rule applied."""
    if outcome not in (BIND, HOLD):
        return ""
    facts = forked.framework.gang_facts
    return next((str(d) for key in gang_keys if (d := facts(key).get("domain"))), "")
