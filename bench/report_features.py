"""koordgang and the peers that have job-level preemption and network-topology placement
(koord-scheduler), on the preemption and topology scenarios: what each did to the pods it
preempted and how it placed the jobs, beside its speed."""

from __future__ import annotations

from collections.abc import Sequence

from bench import targets
from bench.report import _num, scheduler_cpu_ms, table
from bench.results import KOORDGANG, ScenarioResult, is_koordgang

#: The scenarios compared here, and the notes each one's figures come from.
PREEMPTION = "preemption"
TOPOLOGY = ("topology", "topology-plain")


def feature_lines(results: Sequence[ScenarioResult]) -> list[str]:
    """A table of the runs of these scenarios, then the targets: at least 2x the best peer's
    pods/s, no more victims, no more running gangs broken, no fewer jobs inside one block."""
    runs = [r for r in results if not r.skipped and (r.name == PREEMPTION or r.name in TOPOLOGY)]
    if not any(not is_koordgang(r.scheduler) for r in runs):
        return []
    header = [
        "scenario",
        "scheduler",
        "bound",
        "pods/s",
        "victims",
        "in running gangs",
        "gangs broken",
        "jobs in 1 block %",
        "in 1 spine %",
        "CPU ms/pod",
    ]
    rows = [
        [
            r.name,
            r.scheduler,
            f"{r.bound}/{r.expected}",
            _num(r.pods_per_s, 0),
            str(r.notes.get("victims_evicted", "-")),
            str(r.notes.get("victims_in_running_gangs", "-")),
            str(r.notes.get("running_gangs_broken", "-")),
            _num(r.notes.get("jobs_in_one_block_pct"), 0),
            _num(r.notes.get("jobs_in_one_spine_pct"), 0),
            _num(scheduler_cpu_ms(r), 2),
        ]
        for r in runs
    ]
    return [*table(header, rows), *_targets(runs)]


def _targets(runs: Sequence[ScenarioResult]) -> list[str]:
    lines: list[str] = []
    for name in dict.fromkeys(r.name for r in runs):
        mine = next((r for r in runs if r.name == name and r.scheduler == KOORDGANG), None)
        peers = [r for r in runs if r.name == name and not is_koordgang(r.scheduler)]
        if mine is None or not peers:
            continue
        for peer in peers:
            checks = [_speed(mine, peer)]
            if name == PREEMPTION:
                checks += [
                    _no_more(mine, peer, "victims_evicted", "victims"),
                    _no_more(mine, peer, "running_gangs_broken", "running gangs broken"),
                ]
            elif name == "topology":
                checks.append(_gathering(mine, peer))
            for ok, text in checks:
                lines.append(f"{'met   ' if ok else 'MISSED'} {name} vs {peer.scheduler}: {text}")
    return lines


def _speed(mine: ScenarioResult, peer: ScenarioResult) -> tuple[bool, str]:
    ours, theirs = mine.pods_per_s or 0.0, peer.pods_per_s or 0.0
    ratio = f"{ours / theirs:.1f}x" if theirs else "the peer bound nothing"
    ok = ours >= targets.GANGS_VS_BEST_PEER.limit * theirs and not mine.problems
    return ok, (
        f"pods/s >= {targets.GANGS_VS_BEST_PEER.limit:g}x: {ours:.0f} vs {theirs:.0f} ({ratio})"
        + (f"; koordgang problems: {len(mine.problems)}" if mine.problems else "")
    )


def _no_more(mine: ScenarioResult, peer: ScenarioResult, key: str, what: str) -> tuple[bool, str]:
    ours, theirs = mine.notes.get(key), peer.notes.get(key)
    if ours is None or theirs is None:
        return False, f"{what}: not counted ({ours} vs {theirs})"
    # A peer that bound less of the jobs needed fewer victims: said, not excused.
    whole = peer.bound >= peer.expected
    tail = "" if whole else f" (the peer bound only {peer.bound}/{peer.expected})"
    return ours <= theirs, f"no more {what}: {ours} vs {theirs}{tail}"


def _gathering(mine: ScenarioResult, peer: ScenarioResult) -> tuple[bool, str]:
    ours = mine.notes.get("jobs_in_one_block_pct")
    theirs = peer.notes.get("jobs_in_one_block_pct")
    if ours is None or theirs is None:
        return False, f"jobs inside one block: not counted ({ours} vs {theirs})"
    return ours >= theirs, f"no fewer jobs inside one block: {ours:.0f}% vs {theirs:.0f}%"
