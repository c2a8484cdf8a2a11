"""``python -m bench.medians RUN_DIR...``: the side-by-side table and the targets against
the peers on the median of several runs (each scenario and scheduler taken from every run that
measured it). A run's problems carry over: a median is "ok" only if every run of it was."""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from bench import report, report_features
from bench.ledger import RESULTS_JSON
from bench.results import CeilingResult, ScenarioResult, cpu_ms_per_pod

#: Where the API server's CPU per bound pod of each run goes in a median's notes.
APISERVER_MS = "apiserver_ms_per_pod"

#: The figures a median is taken of; the rest comes from the first run.
MEDIAN_FIELDS = (
    "pods_per_s",
    "pct_of_ceiling",
    "gang_p50_s",
    "gang_p99_s",
    "gang_latency_p50_s",
    "gang_latency_p99_s",
    "first_bind_after_start_s",
    "daemon_peak_rss_mb",
    "daemon_cpu_s",
    "window_s",
    "binds_seen",
)
#: Figures kept in a result's notes that a median is taken of too.
MEDIAN_NOTES = (
    "victims_evicted",
    "victims_in_running_gangs",
    "running_gangs_broken",
    "running_gangs_evicted_whole",
    "jobs_in_one_block_pct",
    "jobs_in_one_spine_pct",
)


def load(folder: Path) -> list[ScenarioResult]:
    document = json.loads((folder / RESULTS_JSON).read_text())
    return [ScenarioResult(**r) for r in document.get("scenarios", [])]


def load_ceilings(folder: Path) -> list[CeilingResult]:
    document = json.loads((folder / RESULTS_JSON).read_text())
    return [CeilingResult(**c) for c in document.get("ceilings", [])]


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def medians(runs: Sequence[Sequence[ScenarioResult]]) -> list[ScenarioResult]:
    """One result per (scenario, scheduler), in first-seen order, holding the medians."""
    groups: dict[tuple[str, str], list[ScenarioResult]] = {}
    for run in runs:
        for result in run:
            groups.setdefault((result.name, result.scheduler), []).append(result)
    combined: list[ScenarioResult] = []
    for results in groups.values():
        merged = copy.deepcopy(results[0])
        for field_name in MEDIAN_FIELDS:
            values = [getattr(r, field_name) for r in results if getattr(r, field_name) is not None]
            setattr(merged, field_name, _median(values))
        if merged.binds_seen is not None:
            merged.binds_seen = round(merged.binds_seen)
        # CPU per pod from the medians: cores over the window, as the report computes it.
        cores = [c for r in results if (c := r.cores.get("scheduler"))]
        merged.cores = {"scheduler": statistics.median(cores)} if cores else {}
        merged.problems = [p for r in results for p in r.problems]
        merged.bound = min(r.bound for r in results)
        notes: dict[str, float | int | None] = {"runs": len(results)}
        for key in MEDIAN_NOTES:
            values = [r.notes[key] for r in results if r.notes.get(key) is not None]
            if values:
                notes[key] = _median(values)
        # The API server's CPU per bound pod: each run's own figure (cores over that run's
        # window), then their median; cores and windows of different runs do not mix.
        api = [cost for r in results if (cost := _apiserver_ms(r)) is not None]
        if api:
            notes[APISERVER_MS] = _median(api)
        merged.notes = {**merged.notes, **notes, f"{APISERVER_MS}_runs": api}
        combined.append(merged)
    return combined


def _apiserver_ms(result: ScenarioResult) -> float | None:
    costs = cpu_ms_per_pod(result.cores, result.window_s or 0.0, result.binds_seen or 0)
    return costs.get("kube-apiserver")


def apiserver_cost_lines(combined: Sequence[ScenarioResult]) -> list[str]:
    """Per scenario, each scheduler's median API server CPU per bound pod (and its runs'),
    lowest first."""
    by_scenario: dict[str, list[ScenarioResult]] = {}
    for result in combined:
        if result.notes.get(APISERVER_MS) is not None:
            by_scenario.setdefault(result.name, []).append(result)
    lines = []
    for name, results in by_scenario.items():
        ranked = sorted(results, key=lambda r: r.notes[APISERVER_MS])
        parts = [
            f"{r.scheduler} {r.notes[APISERVER_MS]:.2f} ("
            + ", ".join(f"{v:.2f}" for v in r.notes[f"{APISERVER_MS}_runs"])
            + ")"
            for r in ranked
        ]
        lines.append(f"{name}: " + "; ".join(parts))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.medians", description=__doc__)
    parser.add_argument("runs", nargs="+", type=Path, help="bench-results/<time> folders")
    parser.add_argument("--plot", type=Path, help="also draw the medians to this PNG")
    args = parser.parse_args(argv)
    combined = medians([load(folder) for folder in args.runs])
    counts = sorted({r.notes["runs"] for r in combined})
    print(f"medians of {len(args.runs)} runs ({'/'.join(map(str, counts))} per row)\n")
    print("\n".join(report.side_by_side(combined)))
    targets = report.peer_target_lines(combined)
    if targets:
        print("\ntargets against the peers (medians):")
        print("\n".join(targets))
    features = report_features.feature_lines(combined)
    if features:
        print("\njob-level preemption and topology, against koord-scheduler (medians):")
        print("\n".join(features))
    by_api = report.gang_api_lines(combined)
    if by_api:
        print("\nkoordgang by gang API (medians):")
        print("\n".join(by_api))
    costs = apiserver_cost_lines(combined)
    if costs:
        print("\nAPI server CPU ms per bound pod, lowest first (medians; the runs'):")
        print("\n".join(costs))
    same_api = report.same_api_lines(combined)
    if same_api:
        print("\nkoordgang and the peers on the same gang API (medians):")
        print("\n".join(same_api))
    if args.plot is not None:
        ceilings = [c for folder in args.runs for c in load_ceilings(folder)]
        title = f"medians of {len(args.runs)} runs: " + ", ".join(f.name for f in args.runs)
        if not report.plot(args.plot, ceilings, combined, title):
            print("matplotlib is not installed: no plot (pip install -e '.[bench]')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
