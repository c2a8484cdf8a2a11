"""``python -m e2e.bench``: the ceiling, the throughput scenarios, the ceiling again, the
start-up scenario; then the table, JSON and plot."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import shlex
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

from e2e.bench import report
from e2e.bench.ceiling import CONCURRENCY, measure_ceiling
from e2e.bench.cluster import BenchCluster
from e2e.bench.console import say
from e2e.bench.measure import run_scenario
from e2e.bench.results import (
    CeilingResult,
    ScenarioResult,
    reference_rate,
    set_share_of_ceiling,
)
from e2e.bench.scenarios import SCENARIOS, Finish, select
from e2e.bench.stage import RunContext
from e2e.controlplane import LocalControlPlane
from e2e.controlplane.cluster import START_ORDER, ControlPlaneError
from e2e.controlplane.processes import ProcessRecord

REPO = Path(__file__).resolve().parents[2]
DEFAULT_STATE_DIR = REPO / ".cluster" / "bench"
DEFAULT_OUT_DIR = REPO / "bench-results"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    names = ", ".join(s.name for s in SCENARIOS)
    parser = argparse.ArgumentParser(
        prog="python -m e2e.bench",
        description="Benchmarks koordgang on a local control plane of its own: the bind ceiling "
        f"before and after the throughput scenarios, then start-up ({names}).",
    )
    parser.add_argument(
        "--scenarios", default="all", help="comma-separated names, or 'all' (default: all)"
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiplies pod and node counts; 0.05 for a quick try (default: 1)",
    )
    parser.add_argument(
        "--keep-cluster",
        action="store_true",
        help="leave the control plane (and the last scenario's pods) running at the end",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(os.environ.get("KOORDGANG_BENCH_STATE_DIR", DEFAULT_STATE_DIR)),
        help="the benchmark's own control plane [KOORDGANG_BENCH_STATE_DIR] "
        "(default: .cluster/bench)",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT_DIR, help="results go to OUT/<UTC time>/"
    )
    parser.add_argument(
        "--skip-ceiling",
        action="store_true",
        help="do not measure the ceiling, at the start and at the end (no %% of ceiling then)",
    )
    parser.add_argument(
        "--ceiling-concurrency", type=int, default=CONCURRENCY, help="(default: %(default)s)"
    )
    parser.add_argument(
        "--daemon-args",
        default="",
        help="extra flags for every daemon, e.g. '--bind-concurrency 64'",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the daemon with py-spy in every scenario and print its top functions",
    )
    args = parser.parse_args(argv)
    if args.scale <= 0:
        parser.error("--scale must be positive")
    try:
        args.selected = select(args.scenarios)
    except ValueError as error:
        parser.error(str(error))
    return args


def control_plane_pids(plane: LocalControlPlane) -> dict[str, int]:
    pids = {}
    for name in START_ORDER:
        record = ProcessRecord.load(plane.state.pid_file(name))
        if record is not None:
            pids[name] = record.pid
    return pids


async def run(
    args: argparse.Namespace, kubeconfig: Path, pids: dict[str, int], out: Path
) -> tuple[list[CeilingResult], list[ScenarioResult]]:
    cluster = BenchCluster(kubeconfig)
    ctx = RunContext(
        cluster=cluster,
        kubeconfig=kubeconfig,
        control_plane=pids,
        out_dir=out,
        run_id=uuid.uuid4().hex[:5],
        scale=args.scale,
        daemon_args=tuple(shlex.split(args.daemon_args)),
        profile=args.profile,
    )
    results: list[ScenarioResult] = []
    try:
        await cluster.install_crds()
        if not args.skip_ceiling:
            ctx.ceilings.append(await measure_ceiling(ctx, "start", args.ceiling_concurrency))
        # Throughput scenarios between two ceilings; start-up ones (which leave a cluster
        # full of pods that keeps kwok busy for minutes) after the second.
        rated = [s for s in args.selected if s.finish is not Finish.FIRST_BIND]
        for scenario in rated:
            results.append(await run_scenario(ctx, scenario))
        if not args.skip_ceiling and rated:
            # Once more: the machine's other load may have changed meanwhile.
            ctx.ceilings.append(await measure_ceiling(ctx, "end", args.ceiling_concurrency))
        for scenario in args.selected:
            if scenario not in rated:
                results.append(await run_scenario(ctx, scenario))
        for result in results:
            set_share_of_ceiling(result, reference_rate(ctx.ceilings))
    finally:
        await cluster.close()
    return ctx.ceilings, results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out.resolve() / stamp
    out.mkdir(parents=True, exist_ok=True)
    say(
        f"koordgang benchmark: scale {args.scale}, scenarios "
        f"{', '.join(s.name for s in args.selected)}; results in {out}"
    )
    plane = LocalControlPlane(
        state_dir=args.state_dir,
        controllers=any(s.controllers for s in args.selected),
        audit=False,  # an audit log would cost the API server time the bench measures
    )
    try:
        kubeconfig = plane.up(nodes_file=None)
    except ControlPlaneError as error:
        say(f"cannot start the control plane in {args.state_dir}: {error}")
        return 2
    try:
        ceilings, results = asyncio.run(run(args, kubeconfig, control_plane_pids(plane), out))
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    finally:
        if args.keep_cluster:
            say(f"control plane left running: KUBECONFIG={kubeconfig}")
        else:
            for line in plane.down():
                say(line)

    title = (
        f"koordgang benchmark {stamp}, scale {args.scale} "
        f"({platform.node()}, {os.cpu_count()} cores)"
    )
    lines = [title, "", *report.results_table(ceilings, results)]
    lines += [*report.ceiling_lines(ceilings), ""]
    lines += [*report.cores_table(ceilings, results), ""]
    lines += [*report.cost_table(ceilings, results), ""]
    counters = report.counters_lines(results)
    if counters:
        lines += ["daemon counters:", *counters, ""]
    targets = report.target_lines(ceilings, results)
    if targets:
        lines += ["targets (issue 4):", *targets, ""]
    lines += report.profile_lines(results)
    failures = report.failure_lines(ceilings, results)
    lines += failures or ["no correctness failures"]
    text = "\n".join(lines)
    print("\n" + text)
    (out / "results.txt").write_text(text + "\n")
    meta = {
        "stamp": stamp,
        "scale": args.scale,
        "argv": sys.argv[1:],
        "host": platform.node(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
    }
    report.write_json(out / "results.json", meta, ceilings, results)
    png = out / "results.png"
    if not report.plot(png, ceilings, results, title):
        say("matplotlib is not installed: no plot (pip install -e '.[bench]')")
    latest = out.parent / "latest"
    if latest.is_symlink() or not latest.exists():
        latest.unlink(missing_ok=True)
        latest.symlink_to(out.name)
    say(
        f"results: {out / 'results.txt'}, {out / 'results.json'}"
        + (f", {png}" if png.exists() else "")
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
