"""``python -m bench``: per scheduler (koordgang, koordgang on each other gang API chosen
with ``--gang-apis``, then the peers chosen with ``--peers``): its CRDs, the ceiling, the
throughput scenarios, the start-up scenario; the ceiling once more at the end; then the table,
JSON and plot. Results are saved after every scenario, so that ``--resume`` continues a broken
run."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

from bench import coexist, report, report_features, simulate
from bench.ceiling import SWEEP, measure_ceiling
from bench.cluster import CRDS, BenchCluster
from bench.console import say
from bench.gang_api import BY_KEY, GangApi, parse_gang_apis
from bench.ledger import RESULTS_JSON, Progress
from bench.measure import run_scenario
from bench.peers.build import KOORD_SCHEDULER, PeerFiles
from bench.peers.build import prepare as prepare_peers
from bench.results import KOORDGANG
from bench.scenarios import (
    COEXIST_SCENARIOS,
    COMPOSITE_SCENARIOS,
    DRA_SCENARIOS,
    GROUPS,
    LARGE_SCENARIOS,
    SCENARIOS,
    SIMULATED_SCENARIOS,
    Finish,
    Scenario,
    select,
)
from bench.schedulers import PEERS, RAISED_QPS, parse_qps, select_schedulers
from bench.simulate import SMALL_FACTOR
from bench.stage import RunContext
from controlplane import LocalControlPlane
from controlplane.build import BuildError
from controlplane.cluster import START_ORDER, ControlPlaneError
from controlplane.processes import ProcessRecord
from controlplane.progress import Reporter

REPO = Path(__file__).resolve().parents[1]
DEFAULT_STATE_DIR = REPO / ".cluster" / "bench"
DEFAULT_OUT_DIR = REPO / "bench-results"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    names = ", ".join(s.name for s in SCENARIOS)
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmarks koordgang on a local control plane of its own: the bind ceiling "
        f"before and after the throughput scenarios, then start-up ({names}).",
    )
    parser.add_argument(
        "--scenarios",
        default="all",
        help="comma-separated names, 'all', or 'large' for the 5,000-node ones "
        f"({', '.join(s.name for s in LARGE_SCENARIOS)}); 'starvation' runs "
        f"{' and '.join(GROUPS['starvation'])}; "
        f"{', '.join(s.name for s in SIMULATED_SCENARIOS)} runs the engine in process, "
        "without a control plane; "
        f"{', '.join(s.name for s in DRA_SCENARIOS)}: devices and a ResourceClaim per pod, "
        "beside kube-scheduler; "
        f"{', '.join(s.name for s in COMPOSITE_SCENARIOS)}: gangs of gangs (Kubernetes 1.37), "
        "beside kube-scheduler; "
        f"{', '.join(s.name for s in COEXIST_SCENARIOS)}: koordgang and kube-scheduler filling "
        "the same nodes at once, over-committed nodes with koordgang's safeguards on and off "
        "(these only by name; default: all)",
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
        "--ceiling-sweep",
        type=lambda text: tuple(int(level) for level in text.split(",")),
        default=SWEEP,
        help="requests in flight, level by level; the best level is the ceiling "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--daemon-args",
        default="",
        help="extra flags for every daemon, e.g. '--bind-concurrency 64'",
    )
    parser.add_argument(
        "--peers",
        default="none",
        help=f"schedulers to compare with, built from their Go modules: 'all', 'none' or some "
        f"of {', '.join(PEERS)} (make bench PEERS=...; default: none)",
    )
    parser.add_argument(
        "--peer-qps",
        default=f"default,{RAISED_QPS}",
        help="client QPS/burst settings each peer runs with; 'default' is as shipped "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--gang-apis",
        default="koordinator",
        help="gang APIs koordgang's gang scenarios are run with, once each: 'all' or some of "
        f"{', '.join(BY_KEY)}; Koordinator's annotations always run, as the baseline "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        help="a results folder of a broken run: runs only what it lacks, and writes there",
    )
    parser.add_argument(
        "--run-id",
        default="",
        help="name the run's filler pods with this id: with --keep-cluster, a later run with "
        "the same id reuses them (100,000 fillers take kwok 15 minutes to mark Running)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the daemon with py-spy in every scenario and print its top functions",
    )
    parser.add_argument(
        "--apiserver-profile",
        action="store_true",
        help="CPU profiles of kube-apiserver over every window (profiles/apiserver-*.pb.gz) "
        "and how much of them its garbage collector took (needs go on PATH)",
    )
    args = parser.parse_args(argv)
    if args.scale <= 0:
        parser.error("--scale must be positive")
    if args.run_id and not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?", args.run_id):
        parser.error("--run-id: up to 16 lower-case letters, digits and inner dashes")
    try:
        args.selected = select(args.scenarios)
        args.gang_api_list = parse_gang_apis(args.gang_apis)
        args.schedulers = select_schedulers(
            args.peers, parse_qps(args.peer_qps), args.gang_api_list
        )
    except ValueError as error:
        parser.error(str(error))
    if args.resume is not None and not (args.resume / RESULTS_JSON).is_file():
        parser.error(f"--resume: no {RESULTS_JSON} in {args.resume}")
    return args


def control_plane_pids(plane: LocalControlPlane) -> dict[str, int]:
    pids = {}
    for name in START_ORDER:
        record = ProcessRecord.load(plane.state.pid_file(name))
        if record is not None:
            pids[name] = record.pid
    return pids


async def run(
    args: argparse.Namespace,
    kubeconfig: Path,
    pids: dict[str, int],
    out: Path,
    peers: PeerFiles,
    done: Progress,
) -> None:
    """Throughput scenarios scheduler by scheduler, each after a ceiling; a last ceiling; then
    the start-up scenarios of every scheduler back to back, sharing their filler pods."""
    cluster = BenchCluster(kubeconfig)
    run_id = str(done.meta.setdefault("run_id", args.run_id or uuid.uuid4().hex[:5]))
    contexts = [
        RunContext(
            cluster=cluster,
            kubeconfig=kubeconfig,
            control_plane=pids,
            out_dir=out,
            run_id=run_id,
            scale=args.scale,
            daemon_args=tuple(shlex.split(args.daemon_args)),
            profile=args.profile,
            apiserver_profile=args.apiserver_profile,
            ceilings=done.ceilings,
            scheduler=scheduler,
            tag=f"s{index}",
            binaries=peers.binaries,
            sources=peers.sources,
        )
        for index, scheduler in enumerate(args.schedulers)
    ]
    rated = [s for s in args.selected if s.finish is not Finish.FIRST_BIND]
    startup = [s for s in args.selected if s.finish is Finish.FIRST_BIND]
    try:
        for ctx in contexts:
            await _run_scheduler(args, ctx, done, rated, ceiling=not args.skip_ceiling)
        if rated and not args.skip_ceiling and not done.has_ceiling("end"):
            done.add_ceiling(await measure_ceiling(contexts[-1], "end", args.ceiling_sweep))
        for ctx in contexts:
            await _run_scheduler(args, ctx, done, startup, ceiling=False)
    finally:
        await cluster.close()


async def _run_scheduler(
    args: argparse.Namespace,
    ctx: RunContext,
    done: Progress,
    scenarios: Sequence[Scenario],
    *,
    ceiling: bool,
) -> None:
    """Some of one scheduler's scenarios, on its own CRDs, after a ceiling if asked."""
    scheduler = ctx.scheduler
    todo = [
        s
        for s in scenarios
        if scheduler.covers(s, args.scale) and not done.has(s.name, scheduler.label)
    ]
    if not todo:
        return
    label = scheduler.ceiling_label
    if any(scheduler.skip_reason(s) is None for s in todo):
        say(f"##### {scheduler.label}: {scheduler.version()}")
        ctx.crds = await ctx.cluster.install_crds(
            scheduler.crd_paths(koordgang_crds(), ctx.sources)
        )
        say(f"{scheduler.label}: CRDs installed: {', '.join(ctx.crds) or 'none'}")
        if scheduler.name == KOORD_SCHEDULER.name:
            # Its shipped profile's ElasticQuota plugin keeps quota groups there.
            await ctx.cluster.ensure_namespace("koordinator-system")
        # After its CRDs: the upstream PodGroup is no CRD but may not be served. A scenario
        # may give a peer its gangs in another API than its own (Scenario.peer_gang_apis).
        apis = [scheduler.gang_api_for(s) if s.gangs else scheduler.gang_api for s in todo]
        unserved = {api: await _unserved_api(ctx.cluster, api) for api in set(apis)}
        runnable: list[Scenario] = []
        for scenario, api in zip(todo, apis, strict=True):
            if not unserved[api]:
                runnable.append(scenario)
                continue
            say(f"{scheduler.label}: {scenario.name} not run: {unserved[api]}")
            done.add(await run_scenario(ctx, scenario, skip=unserved[api]))
        todo = runnable
        if not todo:
            return
        # A koordgang variant shares koordgang's ceiling (it is measured just before it).
        if ceiling and not scheduler.variant and not done.has_ceiling(label):
            done.add_ceiling(await measure_ceiling(ctx, label, args.ceiling_sweep))
    for scenario in todo:
        result = await run_scenario(ctx, scenario)
        if not result.skipped and ceiling and done.has_ceiling(label):
            result.notes["ceiling_before"] = label
        done.add(result)


async def _unserved_api(cluster: BenchCluster, api: GangApi) -> str:
    """Why ``api``'s group objects cannot be made here ("" when they can): the upstream
    PodGroup is served only when kube-apiserver runs with its alpha gang API switched on."""
    version = api.api_version
    if not version or await cluster.served(f"/apis/{version}"):
        return ""
    return f"{version} is not served by this kube-apiserver (GenericWorkload off?)"


def koordgang_crds() -> list[Path]:
    return sorted(CRDS.glob("*.yaml"))


def run_simulations(scenarios: Sequence[Scenario], scale: float, out: Path, done: Progress) -> None:
    """Each simulation in a Python process of its own: its peak RSS is then its own, and the
    gigabytes it builds are given back before anything else runs."""
    for scenario in scenarios:
        if done.has(scenario.name, KOORDGANG) or scenario.simulated_nodes is None:
            continue
        nodes = max(SMALL_FACTOR, round(scenario.simulated_nodes * scale))
        say(f"##### {scenario.name}: {scenario.summary} ({nodes:,} nodes)")
        command = [sys.executable, "-m", "bench.simulate", "--nodes", str(nodes)]
        command += ["--out", str(out), "--name", scenario.name]
        code = subprocess.call(command, cwd=REPO)
        result = simulate.bench_result(scenario.name, scenario.summary, out, code)
        result.scheduler = KOORDGANG
        done.add(result)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    if args.resume is not None:
        out = args.resume.resolve()
        done = Progress.load(out)
        stamp = str(done.meta.get("stamp", stamp))
    else:
        out = args.out.resolve() / stamp
        out.mkdir(parents=True, exist_ok=True)
        done = Progress(out / RESULTS_JSON)
    say(
        f"koordgang benchmark: scale {args.scale}, scenarios "
        f"{', '.join(s.name for s in args.selected)}, schedulers "
        f"{', '.join(s.label for s in args.schedulers)}; results in {out}"
        + (f" (resuming: {len(done.results)} measured already)" if args.resume else "")
    )
    simulated = [s for s in args.selected if s.simulated_nodes is not None]
    if simulated:
        done.update_meta(
            {
                "stamp": stamp,
                "scale": args.scale,
                "argv": done.meta.get("argv", sys.argv[1:]),
                "host": platform.node(),
                "cores": os.cpu_count(),
                "python": platform.python_version(),
            }
        )
    run_simulations(simulated, args.scale, out, done)
    args.selected = [s for s in args.selected if s.simulated_nodes is None]
    if not args.selected:
        # Only simulations: no control plane, no peers, no daemon.
        return _write_simulations_only(out, stamp, done)
    peer_names = {s.name for s in args.schedulers if s.binary is not None}
    try:
        peers = prepare_peers(peer_names, Reporter())
    except BuildError as error:
        say(f"cannot build the peers: {error}")
        return 2
    versions = {s.label: s.version() for s in args.schedulers}
    if args.resume is not None:
        # What the first invocation measured keeps its versions; the resuming one adds its own.
        earlier = dict(done.meta.get("versions", {}))
        versions = {**earlier, **{k: v for k, v in versions.items() if k not in earlier}}
        done.meta.setdefault("resumed_with", []).append(sys.argv[1:])
    done.update_meta(
        {
            "stamp": stamp,
            "scale": args.scale,
            "argv": done.meta.get("argv", sys.argv[1:]),
            "host": platform.node(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "versions": versions,
        }
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
        asyncio.run(run(args, kubeconfig, control_plane_pids(plane), out, peers, done))
    except KeyboardInterrupt:
        say(f"interrupted; continue with --resume {out}")
        return 130
    finally:
        if args.keep_cluster:
            say(f"control plane left running: KUBECONFIG={kubeconfig}")
        else:
            for line in plane.down():
                say(line)
    ceilings = done.ceilings
    results = [r for r in done.results if not report.is_simulated(r)]

    title = (
        f"koordgang benchmark {stamp}, scale {args.scale} "
        f"({platform.node()}, {os.cpu_count()} cores)"
    )
    lines = [title, "", *report.versions_lines(done.meta.get("versions", {})), ""]
    lines += [*report.side_by_side(results), ""]
    lines += [*report.crd_lines(results), ""]
    lines += [*report.results_table(ceilings, results)]
    lines += [*report.ceiling_lines(ceilings), ""]
    lines += [*report.cores_table(ceilings, results), ""]
    lines += [*report.cost_table(ceilings, results), ""]
    counters = report.counters_lines(results)
    if counters:
        lines += ["daemon counters:", *counters, ""]
    in_window = report.apiserver_lines(results)
    if in_window:
        lines += ["the API server in each window (requests from every client):", *in_window, ""]
    targets = report.target_lines(ceilings, results)
    if targets:
        lines += ["targets (issue 4):", *targets, ""]
    peer_targets = report.peer_target_lines(results)
    if peer_targets:
        lines += ["targets against the peers (issue 10):", *peer_targets, ""]
    features = report_features.feature_lines(results)
    if features:
        lines += ["job-level preemption and topology, against koord-scheduler:", *features, ""]
    starvation = report.starvation_lines(results)
    if starvation:
        lines += ["starvation guard (with and without --reserve-after):", *starvation, ""]
    beside = coexist.coexist_lines(results)
    if beside:
        lines += ["koordgang beside kube-scheduler (scenario coexist):", *beside, ""]
    dra = report.dra_lines(results)
    if dra:
        lines += ["Dynamic Resource Allocation (scenario dra):", *dra, ""]
    by_api = report.gang_api_lines(results)
    if by_api:
        lines += ["koordgang by gang API (--gang-apis):", *by_api, ""]
    same_api = report.same_api_lines(results)
    if same_api:
        lines += ["koordgang and the peers on the same gang API:", *same_api, ""]
    lines += report.profile_lines(results)
    peer_problems = report.peer_problem_lines(results)
    if peer_problems:
        lines += ["the peers' runs (not failures of this bench):", *peer_problems, ""]
    lines += report.simulation_lines(done.results)
    failures = report.failure_lines(ceilings, results)
    lines += failures or ["no correctness failures"]
    text = "\n".join(lines)
    print("\n" + text)
    (out / "results.txt").write_text(text + "\n")
    done.save()
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


def _write_simulations_only(out: Path, stamp: str, done: Progress) -> int:
    title = f"koordgang simulations {stamp} ({platform.node()}, {os.cpu_count()} cores)"
    text = "\n".join([title, "", *report.simulation_lines(done.results)])
    print("\n" + text)
    (out / "results.txt").write_text(text + "\n")
    done.save()
    say(f"results: {out / 'results.txt'}, {out / RESULTS_JSON}")
    failed = [r for r in done.results if r.problems]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
