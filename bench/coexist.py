"""The coexist scenario: koordgang and kube-scheduler filling the same nodes at once, as on every
real cluster, with koordgang's safeguards beside other schedulers on and off (and variants of
its own settings), round by round in one run (``coexist_run.py`` drives it).

Each round, both schedulers running, the pods of both are created interleaved as fast as the
API server takes them (plain pods of kube-scheduler, koordgang's in gangs), more than the nodes
hold, so that both race for the last room. Once no binding has come for a few seconds the API
server's final state is read and checked with a checker of its own (harness/invariants.py: it
shares no code with koordgang): over-committed nodes (bound non-terminal pods requesting more
than the node's allocatable) and gangs bound below their minimum. The figure is over-committed
nodes per 1,000 pods created (of both schedulers).

"on" is koordgang as it ships; "off" is the daemon as it was before it looked out for other
schedulers: other schedulers' nominations count nowhere and Fit's re-check of a gang's nodes
just before its bindings passes every gang (``coexist_off.py``), and their pods not tried yet
count nowhere until bound (``othersInFlightFor: 0``); "no-guess" is "on" with only the last of
these. Rounds rotate which goes first. Each round also records where the
window between the two schedulers is (``coexist_window.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.checks import bound_per_gang, partial_gangs
from bench.coexist_window import summary, window_lines
from bench.results import ScenarioResult
from bench.workload import SCHEDULER, GangRef, PodPlan, Requests, Workload, node_specs
from harness.invariants import overcommitted

#: kube-scheduler's default profile: its pods name it.
KUBE_SCHEDULER_NAME = "default-scheduler"
ON = "on"
OFF = "off"
#: "on" with ``othersInFlightFor: 0`` (a setting users have): kube-scheduler's pods it has not
#: tried yet count nowhere until bound, as before they were counted where they are likely to go.
NO_GUESS = "no-guess"
VARIANTS = (ON, OFF, NO_GUESS)
#: The daemon flags of a variant (settings users have; "off" also has switches of the bench's).
FLAGS = {
    OFF: ("--others-in-flight-for", "0"),
    NO_GUESS: ("--others-in-flight-for", "0"),
}


@dataclass(frozen=True)
class CoexistPlan:
    """Sizes at full scale (``--scale`` multiplies nodes and pods, not rounds)."""

    nodes: int = 40
    node_cpu: int = 8
    #: Pods of each scheduler a round, 1 cpu each.
    pods_each: int = 240
    gang_size: int = 8
    #: Rounds of each variant.
    rounds: int = 10
    #: A round ends once no binding has come for this long.
    quiet_s: float = 3.0
    #: ... or after this long.
    round_limit_s: float = 120.0


def coexist_workload(plan: CoexistPlan, scale: float) -> Workload:
    """The nodes, and the pods of one round: kube-scheduler's and koordgang's alternating."""
    nodes = max(1, round(plan.nodes * scale))
    gangs = max(1, round(plan.pods_each * scale / plan.gang_size))
    each = gangs * plan.gang_size
    requests = Requests("1", "1Gi")
    pods: list[PodPlan] = []
    for i in range(each):
        pods.append(PodPlan(f"ks-{i:05d}", requests, scheduler=KUBE_SCHEDULER_NAME))
        gang = GangRef(f"kg-{i // plan.gang_size:04d}", plan.gang_size)
        pods.append(PodPlan(f"{gang.name}-{i % plan.gang_size:02d}", requests, gang=gang))
    capacity = {"cpu": str(plan.node_cpu), "memory": f"{8 * plan.node_cpu}Gi", "pods": "110"}
    return Workload(
        nodes=node_specs("bench-coexist", nodes, capacity),
        pods=pods,
        notes={"coexist_cpu": nodes * plan.node_cpu},
    )


@dataclass(frozen=True)
class RoundFigures:
    variant: str
    pods: int
    overcommitted: tuple[str, ...]
    partial: Mapping[str, str]
    bound_koordgang: int
    bound_kube_scheduler: int
    seconds: float
    #: koordgang's members whose binding the re-check gave up (the gang placed again).
    refused: int = 0
    #: Where the window between the schedulers was: samples (seconds) by measure
    #: (``coexist_window.py``).
    window: Mapping[str, Sequence[float]] = field(default_factory=dict)
    #: koordgang's pods bound a second, from its first binding to its last (as the bench's
    #: watch saw them).
    binds_per_s: float = 0.0
    #: The API server's own seconds over the round's Bindings (both schedulers'), and how
    #: many.
    apiserver_binding: tuple[float, float] = (0.0, 0.0)

    def line(self) -> str:
        return (
            f"{self.variant}: {len(self.overcommitted)} over-committed nodes, "
            f"{len(self.partial)} gangs below their minimum, bound {self.bound_koordgang} "
            f"(koordgang) + {self.bound_kube_scheduler} (kube-scheduler) of {self.pods} "
            f"in {self.seconds:.1f} s; {self.refused} members refused at the re-check"
        )


def round_figures(
    variant: str,
    workload: Workload,
    nodes: Iterable[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    seconds: float,
    refused: int = 0,
    window: Mapping[str, Sequence[float]] | None = None,
    binds_per_s: float = 0.0,
    apiserver_binding: tuple[float, float] = (0.0, 0.0),
) -> RoundFigures:
    """What the API server's final state of one round shows."""
    over = overcommitted(nodes, pods)
    bound = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
    ours = sum(1 for p in bound if (p.get("spec") or {}).get("schedulerName") == SCHEDULER)
    return RoundFigures(
        variant=variant,
        pods=len(workload.pods),
        overcommitted=tuple(sorted(over)),
        partial=partial_gangs(bound_per_gang(pods, workload.members), workload.gangs),
        bound_koordgang=ours,
        bound_kube_scheduler=len(bound) - ours,
        seconds=seconds,
        refused=refused,
        window=window or {},
        binds_per_s=binds_per_s,
        apiserver_binding=apiserver_binding,
    )


def sum_up(rounds: Sequence[RoundFigures], result: ScenarioResult) -> None:
    """Per variant, into the result's notes (``<variant>_...``); a gang below its minimum is a
    problem of the run, an over-committed node is the figure."""
    for variant in VARIANTS:
        mine = [r for r in rounds if r.variant == variant]
        if not mine:
            continue
        pods = sum(r.pods for r in mine)
        over = sum(len(r.overcommitted) for r in mine)
        result.notes[f"{variant}_rounds"] = len(mine)
        result.notes[f"{variant}_pods"] = pods
        result.notes[f"{variant}_overcommitted_nodes"] = over
        result.notes[f"{variant}_per_1000_pods"] = round(1000 * over / pods, 2) if pods else None
        result.notes[f"{variant}_per_round"] = [len(r.overcommitted) for r in mine]
        result.notes[f"{variant}_partial_gangs"] = sum(len(r.partial) for r in mine)
        result.notes[f"{variant}_refused_members"] = sum(r.refused for r in mine)
        result.notes[f"{variant}_bound_koordgang_mean"] = round(
            sum(r.bound_koordgang for r in mine) / len(mine), 1
        )
        result.notes[f"{variant}_bound_kube_scheduler_mean"] = round(
            sum(r.bound_kube_scheduler for r in mine) / len(mine), 1
        )
        result.notes[f"{variant}_window"] = summary(r.window for r in mine)
        result.notes[f"{variant}_koordgang_binds_per_s"] = round(
            sum(r.binds_per_s for r in mine) / len(mine), 1
        )
        spent = sum(r.apiserver_binding[0] for r in mine)
        count = sum(r.apiserver_binding[1] for r in mine)
        result.notes[f"{variant}_apiserver_binding_ms"] = (
            round(1000 * spent / count, 1) if count else None
        )
        for r in mine:
            if r.partial:
                result.problems.append(
                    f"coexist ({variant}): gangs below their minimum {r.partial}"
                )
    result.pods = sum(r.pods for r in rounds)
    result.expected = sum(min(r.pods, int(result.notes.get("coexist_cpu", 0))) for r in rounds)
    result.bound = sum(r.bound_koordgang + r.bound_kube_scheduler for r in rounds)
    result.binds_seen = result.bound


def coexist_lines(results: Sequence[ScenarioResult]) -> list[str]:
    """The table of the coexist scenario: on and off side by side."""
    runs = [r for r in results if r.name == "coexist" and not r.skipped]
    lines: list[str] = []
    for run in runs:
        notes = run.notes
        lines += [
            f"{run.summary}",
            "| variant | rounds | pods | over-committed nodes "
            "| per 1,000 pods | per round | gangs below minimum | members refused at the "
            "re-check | bound a round (koordgang + kube-scheduler) | koordgang's binds/s |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for variant in VARIANTS:
            if f"{variant}_rounds" not in notes:
                continue
            per_round = ", ".join(str(n) for n in notes.get(f"{variant}_per_round") or [])
            lines.append(
                f"| {variant} | {notes[f'{variant}_rounds']} | {notes[f'{variant}_pods']:,} "
                f"| {notes[f'{variant}_overcommitted_nodes']} "
                f"| {_num(notes.get(f'{variant}_per_1000_pods'))} | {per_round} "
                f"| {notes[f'{variant}_partial_gangs']} "
                f"| {notes.get(f'{variant}_refused_members', '-')} "
                f"| {notes[f'{variant}_bound_koordgang_mean']} + "
                f"{notes[f'{variant}_bound_kube_scheduler_mean']} "
                f"| {_num(notes.get(f'{variant}_koordgang_binds_per_s'), 0)} |"
            )
        window = window_lines(notes, VARIANTS)
        if window:
            lines += ["", *window]
        own = [
            f"{variant} {_num(notes.get(f'{variant}_apiserver_binding_ms'), 0)}"
            for variant in VARIANTS
            if notes.get(f"{variant}_apiserver_binding_ms") is not None
        ]
        if own:
            lines += [
                "",
                "the API server's own time per Binding (apiserver_request_duration_seconds, "
                "pods/binding, both schedulers'; mean ms): " + ", ".join(own),
            ]
    return lines


def _num(value: object, digits: int = 2) -> str:
    if isinstance(value, int | float) and math.isfinite(value):
        return f"{value:.{digits}f}"
    return "-"
