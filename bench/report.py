"""The run's results for people (a table, the issue's targets, a PNG) and for tools (JSON)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import apiserver_stats, plot_peers, targets
from bench.apiserver_profile import GC_KEY, SAMPLED_KEY
from bench.results import (
    EVERY_EVENT,
    KOORDGANG,
    CeilingResult,
    ScenarioResult,
    cpu_ms_per_pod,
    is_koordgang,
    reference_rate,
)
from bench.starvation import throughput_ratio

PROCESSES = ("scheduler", "kube-apiserver", "etcd", "kwok", "bench", "others")


def _num(value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    lines = [
        "  ".join(
            h.rjust(w) if i else h.ljust(w)
            for i, (h, w) in enumerate(zip(header, widths, strict=True))
        )
    ]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    return lines


def results_table(
    ceilings: Sequence[CeilingResult], results: Sequence[ScenarioResult]
) -> list[str]:
    header = [
        "scenario",
        "scheduler",
        "nodes",
        "pods",
        "bound",
        "ready s",
        "1st bind s",
        "done s",
        "pods/s",
        "% ceiling",
        "gang P50 s",
        "gang P99 s",
        "CPU s",
        "peak RSS MB",
        "result",
    ]
    rows: list[list[str]] = []
    reference = reference_rate(ceilings)
    for ceiling in ceilings:
        share = 100 * ceiling.binds_per_s / reference if reference else None
        rows.append(
            [
                f"ceiling ({ceiling.label})",
                "-",
                str(ceiling.nodes),
                str(ceiling.pods),
                str(ceiling.pods - ceiling.errors),
                "-",
                "-",
                _num(ceiling.seconds, 2),
                _num(ceiling.binds_per_s, 0),
                _num(share, 0),
                "-",
                "-",
                "-",
                "-",
                "ok" if not ceiling.errors else f"{ceiling.errors} errors",
            ]
        )
    for r in results:
        if r.skipped:
            continue
        rows.append(
            [
                r.name,
                r.scheduler,
                str(r.nodes),
                str(r.pods),
                f"{r.bound}/{r.expected}",
                _num(r.ready_after_s, 2),
                _num(r.first_bind_after_start_s, 2),
                _num(r.time_to_done_s, 1),
                _num(r.pods_per_s, 0),
                _num(r.pct_of_ceiling, 0),
                _num(r.gang_p50_s, 1),
                _num(r.gang_p99_s, 1),
                _num(r.daemon_cpu_s, 1),
                _num(r.daemon_peak_rss_mb, 0),
                _verdict(r),
            ]
        )
    return table(header, rows)


def cores_table(ceilings: Sequence[CeilingResult], results: Sequence[ScenarioResult]) -> list[str]:
    header = ["cores used (of 2)", *PROCESSES, "total"]
    rows: list[list[str]] = []
    measured: list[tuple[str, Mapping[str, float]]] = [
        (f"ceiling ({c.label})", c.cores) for c in ceilings
    ]
    measured += [(_run_name(r), r.cores) for r in results if not r.skipped]
    for name, cores in measured:
        rows.append(
            [name, *(_num(cores.get(p), 2) for p in PROCESSES), _num(sum(cores.values()), 2)]
        )
    return table(header, rows)


def cost_table(ceilings: Sequence[CeilingResult], results: Sequence[ScenarioResult]) -> list[str]:
    """CPU milliseconds per bound pod: what each process pays for one pod, scheduler or not."""
    header = ["CPU ms per bound pod", *PROCESSES[:-1], "total"]
    rows: list[list[str]] = []
    measured: list[tuple[str, dict[str, float]]] = [
        (f"ceiling ({c.label})", cpu_ms_per_pod(c.cores, c.window_s, c.pods - c.errors))
        for c in ceilings
    ]
    measured += [
        (_run_name(r), cpu_ms_per_pod(r.cores, r.window_s, r.binds_seen))
        for r in results
        if r.finish != "first bind" and not r.skipped and not is_withheld(r)
    ]
    for name, costs in measured:
        ours = [costs.get(p) for p in PROCESSES[:-1]]
        rows.append([name, *(_num(v, 2) for v in ours), _num(sum(v or 0.0 for v in ours), 2)])
    return table(header, rows)


def counters_lines(results: Sequence[ScenarioResult]) -> list[str]:
    lines = []
    for r in results:
        if not r.counters:
            continue
        parts = [
            f"{key.removeprefix('koordgang_')}={value:g}"
            for key, value in sorted(r.counters.items())
            if value
        ]
        lines.append(f"{_run_name(r)}: " + " ".join(parts))
    return lines


def apiserver_lines(results: Sequence[ScenarioResult]) -> list[str]:
    """What the API server did in each window (``bench.apiserver_stats``)."""
    lines = []
    for r in results:
        stats = r.notes.get("apiserver")
        if stats:
            line = f"{_run_name(r)}: {apiserver_stats.summary(stats, r.binds_seen or 0)}"
            sampled, collector = r.notes.get(SAMPLED_KEY), r.notes.get(GC_KEY)
            if sampled is not None and collector is not None:
                line += f"; profiled {sampled:.2f} CPU s, {collector:.2f} s collecting"
            lines.append(line)
    return lines


#: The note a DRA scenario's results carry (``scenarios._dra``).
DRA_NOTE = "devices_wanted"
#: Requests per bound pod below this are left out of the DRA lines.
DRA_MIN_REQUESTS_PER_POD = 0.005


def dra_lines(results: Sequence[ScenarioResult]) -> list[str]:
    """The DRA scenario side by side: pods/s, share of the ceiling, the scheduler's and the API
    server's CPU per bound pod, and every kind of request the API server answered in the
    window per bound pod (from every client: the scheduler, kwok, the bench's watch). A run
    that failed the DRA check (``dra_check``) is shown as failed, without figures."""
    runs = [r for r in results if DRA_NOTE in r.notes and not r.skipped]
    if not runs:
        return []
    header = [
        "scenario",
        "scheduler",
        "gangs as",
        "bound",
        "gangs done",
        "pods/s",
        "% ceiling",
        "scheduler CPU ms/pod",
        "apiserver CPU ms/pod",
        "etcd CPU ms/pod",
        "result",
    ]
    rows: list[list[str]] = []
    details: list[str] = []
    for r in runs:
        failed = bool(r.problems)
        costs = {} if failed else cpu_ms_per_pod(r.cores, r.window_s, r.binds_seen)
        rows.append(
            [
                r.name,
                r.scheduler,
                r.gang_api or "-",
                f"{r.bound}/{r.expected}",
                f"{r.gangs_complete}/{r.gangs}",
                _num(r.pods_per_s, 0),
                _num(r.pct_of_ceiling, 0),
                _num(costs.get("scheduler"), 2),
                _num(costs.get("kube-apiserver"), 2),
                _num(costs.get("etcd"), 2),
                "FAILED the check: not measured" if failed else "ok",
            ]
        )
        if failed:
            details += [f"{_run_name(r)}: {p}" for p in r.problems]
            continue
        stats = r.notes.get("apiserver") or {}
        bound = r.binds_seen or 0
        per_pod = sorted(
            (
                (key, count / bound)
                for key, count in stats.items()
                if key not in (apiserver_stats.GC_CPU_KEY, apiserver_stats.GC_CYCLES_KEY)
                and bound
                and count / bound >= DRA_MIN_REQUESTS_PER_POD
            ),
            key=lambda kv: -kv[1],
        )
        if per_pod:
            details.append(
                f"{_run_name(r)}: API requests per bound pod: "
                + ", ".join(f"{key} {value:.2f}" for key, value in per_pod)
                + f" (total {sum(v for _, v in per_pod):.2f})"
            )
    return [*table(header, rows), *details]


def target_lines(ceilings: Sequence[CeilingResult], results: Sequence[ScenarioResult]) -> list[str]:
    """koordgang against the targets of ``bench/targets.py`` that one run measures."""
    by_name = {r.name: r for r in results if r.scheduler == KOORDGANG}
    reference = reference_rate(ceilings)
    lines: list[str] = []

    gang = by_name.get("gang-1k")
    if gang is not None and gang.pods_per_s is not None:
        published = targets.KOORDINATOR_GANG_1K
        times = gang.pods_per_s / published.value
        goal = targets.TIMES_KOORDINATOR
        lines.append(
            f"{goal.verdict(times)} gang-1k {goal.wording} koord-scheduler's "
            f"{published.value:g} {published.unit} ({published.source}): "
            f"{gang.pods_per_s:.0f} pods/s, {times:.1f}x"
        )
    if reference is not None:
        lines += _under_ceiling_lines(reference, results)
        share = targets.SHARE_OF_CEILING
        for r in by_name.values():
            if r.pct_of_ceiling is None:
                continue
            lines.append(
                f"{share.verdict(r.pct_of_ceiling)} {r.name} {share.wording} of the ceiling: "
                f"{r.pct_of_ceiling:.0f}% ({r.pods_per_s:.0f} of {reference:.0f} pods/s)"
            )
    startup = by_name.get("startup")
    if startup is not None:
        fillers = startup.notes.get("fillers", 0)
        rss, seconds = targets.STARTUP_RSS_MB, targets.STARTUP_SECONDS
        if startup.daemon_peak_rss_mb is not None:
            lines.append(
                f"{rss.verdict(startup.daemon_peak_rss_mb)} peak RSS {rss.wording} "
                f"(set at 100,000 pods) with {startup.nodes} nodes and {fillers} pods: "
                f"{startup.daemon_peak_rss_mb:.0f} MB"
            )
        if startup.first_bind_after_start_s is not None:
            lines.append(
                f"{seconds.verdict(startup.first_bind_after_start_s)} start-up to first bind "
                f"{seconds.wording} (set at 100,000 pods) with {fillers} pods: "
                f"{startup.first_bind_after_start_s:.1f} s"
            )
    return lines


def _under_ceiling_lines(reference: float, results: Sequence[ScenarioResult]) -> list[str]:
    """Whether the ceiling is one: no scheduler, ours or a peer, bound faster."""
    rated = [r for r in results if r.pct_of_ceiling is not None and r.pods_per_s is not None]
    if not rated:
        return []
    fastest = max(rated, key=lambda r: r.pct_of_ceiling or 0.0)
    goal = targets.UNDER_CEILING
    share = fastest.pct_of_ceiling or 0.0
    verdict = (
        "" if goal.met(share) else "; the ceiling is not one: its client or its sweep is short"
    )
    return [
        f"{goal.verdict(share)} no scheduler above the ceiling ({goal.wording}): the fastest, "
        f"{fastest.scheduler} in {fastest.name}, {share:.0f}% ({fastest.pods_per_s:.0f} of "
        f"{reference:.0f} pods/s){verdict}"
    ]


def peer_problem_lines(results: Sequence[ScenarioResult]) -> list[str]:
    """What went wrong in the peers' runs, with the peer's own words from its log."""
    lines: list[str] = []
    for r in results:
        if is_koordgang(r.scheduler):
            continue
        for problem in r.problems:
            lines.append(f"{_run_name(r)}: {problem}")
            lines += [f"    it says: {w}" for w in r.notes.get("scheduler_says", [])]
    return lines


def is_withheld(r: ScenarioResult) -> bool:
    """A run whose figures were dropped because it failed its check (``dra_check``)."""
    return "withheld" in r.notes


def _run_name(r: ScenarioResult) -> str:
    return r.name if r.scheduler == KOORDGANG else f"{r.name} / {r.scheduler}"


def _verdict(r: ScenarioResult) -> str:
    if not r.problems:
        return "ok"
    first = r.problems[0]
    if first.startswith(("stalled", "time limit")):
        return "stalled" if first.startswith("stalled") else "time limit"
    return "FAIL"


def versions_lines(versions: Mapping[str, str]) -> list[str]:
    return [f"{label}: {text}" for label, text in versions.items()]


def crd_lines(results: Sequence[ScenarioResult]) -> list[str]:
    """Which CRDs each scheduler ran on (each installs its own release's), and the gang API
    its gangs were declared in (which it read)."""
    seen: dict[str, list[str]] = {}
    apis: dict[str, list[str]] = {}
    for r in results:
        if r.skipped:
            continue
        seen.setdefault(r.scheduler, r.crds)
        if r.gang_api and r.gang_api not in apis.setdefault(r.scheduler, []):
            apis[r.scheduler].append(r.gang_api)
    return [
        f"{label} ran on CRDs: {', '.join(crds) or 'none'}"
        + (f"; its gangs declared as {', '.join(apis[label])}" if apis.get(label) else "")
        for label, crds in seen.items()
    ]


def scheduler_cpu_ms(r: ScenarioResult) -> float | None:
    """CPU ms the scheduler spent per pod it bound, from readiness to the end of the run."""
    return cpu_ms_per_pod(r.cores, r.window_s, r.binds_seen).get("scheduler")


def side_by_side(results: Sequence[ScenarioResult]) -> list[str]:
    """One row per scenario and scheduler, what a user comparing schedulers looks at: pods/s,
    share of the ceiling, gang P50/P99 (streamed: latency from a gang's last member created),
    CPU ms per bound pod, first bind after start, peak RSS, and correctness (partial gangs and
    over-committed nodes fail a run). Schedulers that did not run a scenario share one row."""
    # The gang API column only when the run declared gangs in more than one API.
    with_api = len({r.gang_api for r in results if r.gang_api and not r.skipped}) > 1
    header = [
        "scenario",
        "scheduler",
        *(["gang API"] if with_api else []),
        "submit",
        "bound",
        "gangs done",
        "pods/s",
        "% ceiling",
        "gang P50 s",
        "gang P99 s",
        "CPU ms/pod",
        "1st bind s",
        "peak RSS MB",
        "result",
    ]
    rows: list[list[str]] = []
    not_run: dict[tuple[str, str], list[str]] = {}
    for r in results:
        if r.skipped:
            names = not_run.setdefault((r.name, r.skipped), [])
            base = r.scheduler.split(" qps ")[0]
            if base not in names:
                names.append(base)
            continue
        streamed = r.submit.startswith("streamed")
        rows.append(
            [
                r.name,
                r.scheduler,
                *([r.gang_api or "-"] if with_api else []),
                "streamed" if streamed else "prebuilt",
                f"{r.bound}/{r.expected}",
                f"{r.gangs_complete}/{r.gangs}" if r.gangs else "-",
                _num(r.pods_per_s, 0) if r.finish != "first bind" else "-",
                _num(r.pct_of_ceiling, 0) if r.finish != "first bind" else "-",
                _num(r.gang_latency_p50_s if streamed else r.gang_p50_s, 2),
                _num(r.gang_latency_p99_s if streamed else r.gang_p99_s, 2),
                _num(scheduler_cpu_ms(r), 2)
                if r.finish != "first bind" and not is_withheld(r)
                else "-",
                _num(r.first_bind_after_start_s, 2),
                _num(r.daemon_peak_rss_mb, 0),
                _verdict(r),
            ]
        )
    reasons = list(dict.fromkeys(reason for _, reason in not_run))
    for (name, reason), names in not_run.items():
        mark = f"not run ({reasons.index(reason) + 1})"
        api = ["-"] if with_api else []
        rows.append([name, ", ".join(names), *api, "-", "n/a", *["-"] * 8, mark])
    order = {name: i for i, name in enumerate(dict.fromkeys(r.name for r in results))}
    # Schedulers in the order they first ran (a resumed run appends its results at the end).
    labels = {label: i for i, label in enumerate(dict.fromkeys(r.scheduler for r in results))}
    rows.sort(key=lambda row: (order[row[0]], labels.get(row[1], len(labels))))
    notes = [f"({i}) {reason}" for i, reason in enumerate(reasons, 1)]
    return [*table(header, rows), *notes]


def peer_target_lines(results: Sequence[ScenarioResult]) -> list[str]:
    """koordgang against the fastest peer run of the same scenario (pods/s), in this run; and
    again with every Scheduled Event written, as the peers write them, where that was run."""
    lines: list[str] = []
    for name in dict.fromkeys(r.name for r in results):
        peers = [
            r for r in results if r.name == name and not is_koordgang(r.scheduler) and not r.skipped
        ]
        for label in (KOORDGANG, EVERY_EVENT):
            ours = [r for r in results if r.name == name and r.scheduler == label]
            if not ours or not peers or ours[0].finish == "first bind":
                continue
            mine = ours[0]
            if mine.submit.startswith("streamed"):
                lines.append(_latency_line(name, mine, peers))
                continue
            best = max(peers, key=lambda r: r.pods_per_s or 0.0)
            goal = targets.GANGS_VS_BEST_PEER if mine.gangs else targets.PLAIN_VS_BEST_PEER
            factor = goal.limit
            rate, theirs = mine.pods_per_s or 0.0, best.pods_per_s or 0.0
            ok = rate >= factor * theirs and not mine.problems
            ratio = f"{rate / theirs:.1f}x" if theirs else "peers bound nothing"
            lines.append(
                f"{'met   ' if ok else 'MISSED'} {name}: {label} >= {factor:g}x the best peer: "
                f"{rate:.0f} pods/s vs {best.scheduler} {theirs:.0f} ({ratio})"
                + ("" if not mine.problems else f"; {label} problems: {len(mine.problems)}")
            )
    return lines


def api_writes(r: ScenarioResult) -> float | None:
    """koordgang's API writes that were made in the run (status, conditions, events; not
    the binds, not the events it dropped), None for a peer."""
    values = [
        v
        for k, v in r.counters.items()
        if k.startswith("koordgang_api_writes") and "result=ok" in k
    ]
    return sum(values) if values else None


def gang_api_lines(results: Sequence[ScenarioResult]) -> list[str]:
    """koordgang's gang scenarios on each gang API of ``--gang-apis``: CPU ms per bound pod and
    pods/s, each as a ratio to the same scenario with Koordinator's annotations. Empty when
    only one API was run."""
    ours = [
        r for r in results if is_koordgang(r.scheduler) and r.gang_api and r.finish != "first bind"
    ]
    if len({r.gang_api for r in ours}) < 2:
        return []
    header = [
        "scenario",
        "gang API",
        "bound",
        "pods/s",
        "x pods/s",
        "CPU ms/pod",
        "x CPU ms/pod",
        "API writes",
        "result",
    ]
    rows: list[list[str]] = []
    flagged: list[str] = []
    for name in dict.fromkeys(r.name for r in ours):
        runs = [r for r in ours if r.name == name]
        base = next((r for r in runs if r.scheduler == KOORDGANG and not r.skipped), None)
        base_cpu = scheduler_cpu_ms(base) if base is not None else None
        base_rate = base.pods_per_s if base is not None else None
        for r in runs:
            if r.skipped:
                rows.append([name, r.gang_api, "n/a", *["-"] * 5, f"not run: {r.skipped}"])
                continue
            cpu = scheduler_cpu_ms(r)
            cpu_ratio = cpu / base_cpu if cpu is not None and base_cpu else None
            rate_ratio = r.pods_per_s / base_rate if r.pods_per_s and base_rate else None
            if cpu_ratio is not None and cpu_ratio > targets.GANG_API_TOLERANCE:
                flagged.append(
                    f"{name}: {r.gang_api} costs koordgang {cpu_ratio:.2f}x the CPU per bound "
                    f"pod of Koordinator's annotations ({cpu:.2f} vs {base_cpu:.2f} ms)"
                )
            rows.append(
                [
                    name,
                    r.gang_api,
                    f"{r.bound}/{r.expected}",
                    _num(r.pods_per_s, 0),
                    "-" if rate_ratio is None else f"{rate_ratio:.2f}x",
                    _num(cpu, 2),
                    "-" if cpu_ratio is None else f"{cpu_ratio:.2f}x",
                    _num(api_writes(r), 0),
                    _verdict(r),
                ]
            )
    notes = [
        "x: the ratio to Koordinator's annotations; more than "
        f"{targets.GANG_API_TOLERANCE:.2f}x the CPU is flagged below"
    ]
    return [*table(header, rows), *notes, *(f"WORSE {line}" for line in flagged)]


def same_api_lines(results: Sequence[ScenarioResult]) -> list[str]:
    """koordgang and a peer on the very same workload: its gangs declared in the API the peer
    reads (``koordgang via scheduler-plugins`` against Coscheduling, koordgang against
    koord-scheduler)."""
    lines: list[str] = []
    for peer in results:
        if is_koordgang(peer.scheduler) or peer.skipped or not peer.gang_api:
            continue
        ours = next(
            (
                r
                for r in results
                if r.name == peer.name
                and is_koordgang(r.scheduler)
                and r.gang_api == peer.gang_api
                and not r.skipped
            ),
            None,
        )
        if ours is None or peer.finish == "first bind":
            continue
        cpu, theirs = scheduler_cpu_ms(ours), scheduler_cpu_ms(peer)
        rate = (
            f" ({ours.pods_per_s / peer.pods_per_s:.1f}x)"
            if ours.pods_per_s and peer.pods_per_s
            else ""
        )
        cost = f" ({cpu / theirs:.2f}x)" if cpu is not None and theirs else ""
        lines.append(
            f"{peer.name}, gangs as {peer.gang_api}: {ours.scheduler} "
            f"{_num(ours.pods_per_s, 0)} pods/s, {_num(cpu, 2)} CPU ms/pod; {peer.scheduler} "
            f"{_num(peer.pods_per_s, 0)} pods/s, {_num(theirs, 2)} CPU ms/pod; koordgang "
            f"pods/s{rate}, CPU{cost}"
        )
    return lines


def _latency_line(name: str, mine: ScenarioResult, peers: Sequence[ScenarioResult]) -> str:
    """Streamed pods arrive at a fixed rate, so pods/s says nothing: gang latency does."""
    timed = [r for r in peers if r.gang_latency_p99_s is not None]
    if mine.gang_latency_p99_s is None or not timed:
        return f"-      {name}: no gang latency to compare"
    best = min(timed, key=lambda r: r.gang_latency_p99_s or 0.0)
    ok = mine.gang_latency_p99_s <= (best.gang_latency_p99_s or 0.0) and not mine.problems
    return (
        f"{'met   ' if ok else 'MISSED'} {name}: {mine.scheduler}'s gang latency P99 <= the best "
        f"peer's (pods created at a fixed rate): {mine.gang_latency_p99_s:.3f} s vs "
        f"{best.scheduler} {best.gang_latency_p99_s:.3f} s (P50 {mine.gang_latency_p50_s} s vs "
        f"{best.gang_latency_p50_s} s)"
    )


def starvation_lines(results: Sequence[ScenarioResult]) -> list[str]:
    """The starvation scenario, with the guard and without, per scheduler label: the gang's
    wait, the small pods' throughput and latency from the gang's arrival to its start (or the
    cap), the daemon's CPU per bound pod, and the throughput with the guard over without."""
    runs = [r for r in results if r.finish == "gang started" and not r.skipped]
    lines: list[str] = []
    for label in dict.fromkeys(r.scheduler for r in runs):
        mine = [r for r in runs if r.scheduler == label]
        lines += [_starvation_run_line(r) for r in mine]
        guarded = next((r for r in mine if r.notes.get("reserve_after_s") != 0), None)
        unguarded = next((r for r in mine if r.notes.get("reserve_after_s") == 0), None)
        if guarded is None or unguarded is None:
            continue
        waited = throughput_ratio(guarded.notes, unguarded.notes, "window")
        if waited is not None:
            lines.append(
                f"-      {label}: small-pod throughput while the gang waited, with the guard "
                f"over without: {100 * waited:.0f}% "
                f"({guarded.notes.get('window_small_pods_per_s')} vs "
                f"{unguarded.notes.get('window_small_pods_per_s')} pods/s)"
            )
        ratio = throughput_ratio(guarded.notes, unguarded.notes, "cap")
        if ratio is None:
            lines.append(f"-      {label}: no small-pod throughput to compare")
            continue
        ok = ratio >= targets.STARVATION_THROUGHPUT.limit
        lines.append(
            f"{'met   ' if ok else 'MISSED'} {label}: small-pod throughput with the guard >= "
            f"{100 * targets.STARVATION_THROUGHPUT.limit:.0f}% of without, over the same "
            f"{_num(guarded.notes.get('cap_window_s'), 0)} s after the gang arrived: "
            f"{100 * ratio:.0f}% ({guarded.notes.get('cap_small_pods_per_s')} vs "
            f"{unguarded.notes.get('cap_small_pods_per_s')} pods/s)"
        )
    if lines:
        lines.append(
            "while the gang waited: its arrival (last member created) -> all its members bound, "
            "or the cap; over the cap: the same stretch after its arrival in both runs, in "
            "which a gang that started ran 30 s and finished; small pods/s: those bound in the "
            "window; latency: create -> bound of those created in it"
        )
    return lines


def _starvation_run_line(r: ScenarioResult) -> str:
    notes = r.notes
    after = notes.get("reserve_after_s")
    flag = "default --reserve-after" if after is None else f"--reserve-after {after:g}"
    wait = notes.get("gang_wait_s")
    if wait is not None:
        gang = f"the gang waited {wait:.1f} s"
    else:
        gang = f"the gang not started after {notes.get('window_window_s', 0.0):.0f} s"
    nominated = notes.get("gang_nominated_after_s")
    if nominated is not None:
        gang += f" (nominated after {nominated:.1f} s)"
    return (
        f"{_run_name(r)} ({flag}): {gang}; small pods in the window "
        f"{_num(notes.get('window_small_pods_per_s'), 2)}/s "
        f"({notes.get('window_small_bound', 0)} in {_num(notes.get('window_window_s'), 1)} s), "
        f"mean create->bound {_num(notes.get('window_small_latency_mean_s'), 2)} s "
        f"(P99 {_num(notes.get('window_small_latency_p99_s'), 2)} s), "
        f"{notes.get('window_small_pending_at_end', 0)} pending at its end"
        + (
            f" ({unbound} still unbound at the run's end, counted as waiting until then)"
            if (unbound := notes.get("window_small_unbound_at_run_end"))
            else ""
        )
        + f"; over the cap {_num(notes.get('cap_small_pods_per_s'), 2)}/s "
        f"(mean create->bound {_num(notes.get('cap_small_latency_mean_s'), 2)} s)"
        + "; before the gang "
        f"{_num(notes.get('warm_small_pods_per_s'), 2)}/s, "
        f"{_num(notes.get('warm_small_latency_mean_s'), 2)} s; koordgang "
        f"{_num(scheduler_cpu_ms(r), 2)} CPU ms per bound pod; {_verdict(r)}"
    )


def failure_lines(
    ceilings: Sequence[CeilingResult], results: Sequence[ScenarioResult]
) -> list[str]:
    lines = [
        f"FAIL {_run_name(r)}: {p}"
        for r in results
        if is_koordgang(r.scheduler)
        for p in r.problems
    ]
    lines += [f"FAIL ceiling ({c.label}): {c.errors} bind errors" for c in ceilings if c.errors]
    return lines


def ceiling_lines(ceilings: Sequence[CeilingResult]) -> list[str]:
    reference = reference_rate(ceilings)
    if reference is None:
        return ["no ceiling measured: no % of ceiling"]
    measured = ", ".join(f"{c.label} {c.binds_per_s:.0f}" for c in ceilings)
    lines = [
        f"% ceiling is of {reference:.0f} binds/s, the best ceiling of this run ({measured}); "
        "it moves with the machine's other load (column 'others' below)"
    ]
    for c in ceilings:
        if c.sweep:
            levels = ", ".join(f"{level}: {rate:.0f}" for level, rate in c.sweep.items())
            lines.append(
                f"ceiling ({c.label}), binds/s by requests in flight: {levels}; "
                f"best at {c.concurrency}"
                + ("" if c.saturated else "; not saturated: more in flight may bind faster")
            )
    return lines


#: A simulation's ``finish`` (``simulate.py``: in process, no cluster), and the note holding
#: its table.
SIMULATED_FINISH = "simulated in process"
SIMULATION_LINES = "simulation_lines"


def is_simulated(r: ScenarioResult) -> bool:
    """Run in process: none of the cluster's tables has a column for it."""
    return r.finish == SIMULATED_FINISH


def simulation_lines(results: Sequence[ScenarioResult]) -> list[str]:
    lines: list[str] = []
    for r in results:
        if is_simulated(r):
            lines += [f"--- {r.name} ---", *r.notes.get(SIMULATION_LINES, r.problems), ""]
    return lines


def profile_lines(results: Sequence[ScenarioResult]) -> list[str]:
    lines: list[str] = []
    for r in results:
        if r.profile_top:
            lines += [f"--- profile of {r.scheduler} in {r.name} ---", *r.profile_top]
    return lines


def write_json(
    path: Path,
    meta: Mapping[str, Any],
    ceilings: Sequence[CeilingResult],
    results: Sequence[ScenarioResult],
) -> None:
    document = {
        "meta": dict(meta),
        "ceiling_reference_binds_per_s": reference_rate(ceilings),
        "ceilings": [asdict(c) for c in ceilings],
        "scenarios": [asdict(r) for r in results],
    }
    path.write_text(json.dumps(document, indent=2) + "\n")


def plot(
    path: Path, ceilings: Sequence[CeilingResult], results: Sequence[ScenarioResult], title: str
) -> bool:
    """Left: pods bound over time per scenario, against the ceiling's slope. Right: pods/s per
    scenario as a share of the ceiling. False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False

    if len({r.scheduler for r in results if not r.skipped}) > 1:
        plot_peers.plot(plt, path, ceilings, results, title)
        return True
    figure, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5))
    figure.suptitle(title, fontsize=11)
    longest = 0.0
    for r in results:
        if len(r.timeline) < 3:
            continue
        times = [t for t, _ in r.timeline]
        counts = [n for _, n in r.timeline]
        longest = max(longest, times[-1])
        left.step(times, counts, where="post", label=_run_name(r))
    reference = reference_rate(ceilings)
    if reference is not None and longest > 0:
        top = max((n for r in results for _, n in r.timeline), default=0)
        span = min(longest, top / reference)
        left.plot(
            [0, span],
            [0, span * reference],
            linestyle=":",
            color="black",
            label=f"ceiling rate ({reference:.0f}/s)",
        )
    left.set_xlabel("seconds since the daemon was ready")
    left.set_ylabel("pods bound")
    left.set_title("pods bound over time")
    left.grid(alpha=0.3)
    if left.get_legend_handles_labels()[0]:
        left.legend(fontsize=8)

    rated = [r for r in results if r.pods_per_s is not None and r.finish != "first bind"]
    rated.sort(key=lambda r: r.name)  # a scenario's schedulers side by side
    palette = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    schedulers = list(dict.fromkeys(r.scheduler for r in rated))
    colour_of = {name: palette[i % len(palette)] for i, name in enumerate(schedulers)}
    names = [f"ceiling\n({c.label})" for c in ceilings] + [
        r.name if len(schedulers) == 1 else f"{r.name}\n{r.scheduler}" for r in rated
    ]
    values = [c.binds_per_s for c in ceilings] + [float(r.pods_per_s or 0.0) for r in rated]
    colours = ["grey"] * len(ceilings) + [colour_of[r.scheduler] for r in rated]
    bars = right.bar(names, values, color=colours)
    if len(schedulers) > 1:
        right.tick_params(axis="x", labelrotation=70, labelsize=7)
    for bar, r_value in zip(bars, values, strict=True):
        label = f"{r_value:.0f}"
        if reference:
            label += f"\n{100 * r_value / reference:.0f}%"
        right.annotate(
            label,
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    if reference is not None:
        right.axhline(
            reference * targets.SHARE_OF_CEILING.limit / 100,
            linestyle="--",
            color="tab:red",
            linewidth=1,
            label=f"target: {targets.SHARE_OF_CEILING.limit:.0f}% of ceiling",
        )
    for r in rated:
        if r.reference_pods_per_s and r.scheduler == KOORDGANG:
            right.scatter(
                [r.name if len(schedulers) == 1 else f"{r.name}\n{r.scheduler}"],
                [r.reference_pods_per_s],
                marker="_",
                s=400,
                color="tab:orange",
                label=f"published: {r.reference}",
                zorder=3,
            )
    right.set_ylim(0, max(values, default=1.0) * 1.18)
    right.set_ylabel("pods bound per second")
    right.set_title("throughput, and share of the ceiling measured in the same run")
    right.grid(axis="y", alpha=0.3)
    if right.get_legend_handles_labels()[0]:
        right.legend(fontsize=8, loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True
