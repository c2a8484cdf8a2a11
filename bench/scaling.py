"""``python -m bench.scaling SMALL_RUN LARGE_RUN``: how each scheduler's cost grows from
the 1,000-node scenarios to the 5,000-node ones (``--scenarios large``): CPU ms per bound pod
side by side, and the start-up figures with 100,000 pods, against the targets."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bench import report, targets
from bench.medians import load
from bench.results import KOORDGANG, ScenarioResult

#: 5,000-node scenario -> its 1,000-node counterpart.
COUNTERPARTS = {
    "plain-5k": "plain",
    "gangs-5k": "gang-1k",
    "big-gang-5k": "big-gang",
}
TARGET_GROWTH = targets.CPU_GROWTH.limit
TARGET_STARTUP_S = targets.STARTUP_SECONDS.limit
TARGET_RSS_MB = targets.STARTUP_RSS_MB.limit


def growth_lines(small: Sequence[ScenarioResult], large: Sequence[ScenarioResult]) -> list[str]:
    before = {(r.name, r.scheduler): r for r in small if not r.skipped}
    rows: list[list[str]] = []
    for r in large:
        counterpart = COUNTERPARTS.get(r.name)
        base = before.get((counterpart or "", r.scheduler))
        if base is None or r.skipped:
            continue
        cost, base_cost = report.scheduler_cpu_ms(r), report.scheduler_cpu_ms(base)
        ratio = cost / base_cost if cost and base_cost else None
        verdict = "-"
        if ratio is not None and r.scheduler == KOORDGANG:
            verdict = "met" if ratio < TARGET_GROWTH else "MISSED"
        rows.append(
            [
                f"{counterpart} -> {r.name}",
                r.scheduler,
                f"{base.nodes} -> {r.nodes}",
                f"{base.pods} -> {r.pods}",
                f"{_fmt(base_cost)} -> {_fmt(cost)}",
                "-" if ratio is None else f"{ratio:.2f}x",
                f"{_fmt(base.pods_per_s, 0)} -> {_fmt(r.pods_per_s, 0)}",
                "ok" if not r.problems else f"{len(r.problems)} problems",
                verdict,
            ]
        )
    header = [
        "scenario",
        "scheduler",
        "nodes",
        "pods",
        "CPU ms/pod",
        "growth",
        "pods/s",
        "result",
        f"< {TARGET_GROWTH}x",
    ]
    return report.table(header, rows) if rows else []


def startup_lines(large: Sequence[ScenarioResult]) -> list[str]:
    lines = _startup_each(large)
    runs = [r for r in large if r.name == "startup-5k" and not r.skipped]
    ours = [r.first_bind_after_start_s for r in runs if r.scheduler == KOORDGANG]
    peers = [
        r.first_bind_after_start_s
        for r in runs
        if r.scheduler != KOORDGANG and r.first_bind_after_start_s is not None
    ]
    if ours and ours[0] is not None and peers:
        goal = targets.STARTUP_VS_BEST_PEER
        ratio = min(peers) / ours[0] if ours[0] else None
        shown = "-" if ratio is None else f"{ratio:.2f}x as fast"
        lines.append(
            f"[{goal.verdict(ratio).strip()}: no slower than the best peer] koordgang "
            f"{ours[0]:.1f} s, the best peer {min(peers):.1f} s ({shown})"
        )
    return lines


def _startup_each(large: Sequence[ScenarioResult]) -> list[str]:
    lines = []
    for r in large:
        if r.name != "startup-5k" or r.skipped:
            continue
        first, rss = r.first_bind_after_start_s, r.daemon_peak_rss_mb
        verdict = ""
        if r.scheduler == KOORDGANG and first is not None and rss is not None:
            ok = first < TARGET_STARTUP_S and rss < TARGET_RSS_MB
            verdict = f" [{'met' if ok else 'MISSED'}: < {TARGET_STARTUP_S:.0f} s, "
            verdict += f"< {TARGET_RSS_MB:.0f} MB]"
        lines.append(
            f"{r.scheduler}: first bind {_fmt(first)} s after start with "
            f"{r.notes.get('fillers', 0)} pods on {r.nodes} nodes, peak RSS {_fmt(rss, 0)} MB"
            + verdict
        )
    return lines


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scaling", description=__doc__)
    parser.add_argument("small", type=Path, help="a bench-results/<time> of the usual scenarios")
    parser.add_argument("large", type=Path, help="a bench-results/<time> of --scenarios large")
    args = parser.parse_args(argv)
    small, large = load(args.small), load(args.large)
    print("\n".join(growth_lines(small, large)))
    print()
    print("\n".join(startup_lines(large)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
