"""The plot of a run with peers: per scenario, one bar per scheduler, for throughput (log
scale: the peers at their shipped QPS are 50x slower) and for CPU per bound pod."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.results import CeilingResult, ScenarioResult, cpu_ms_per_pod

PALETTE = (
    "tab:blue",
    "tab:orange",
    "tab:red",
    "tab:green",
    "tab:olive",
    "tab:purple",
    "tab:pink",
    "tab:brown",
)


def plot(
    plt: Any,
    path: Path,
    ceilings: Sequence[CeilingResult],
    results: Sequence[ScenarioResult],
    title: str,
) -> None:
    rated = [r for r in results if r.finish != "first bind" and not r.skipped]
    scenarios = list(dict.fromkeys(r.name for r in rated))
    schedulers = list(dict.fromkeys(r.scheduler for r in rated))
    by_key = {(r.name, r.scheduler): r for r in rated}
    figure, (left, right) = plt.subplots(1, 2, figsize=(16, 6.5))
    figure.suptitle(title, fontsize=11)
    width = 0.8 / max(1, len(schedulers))
    for index, scheduler in enumerate(schedulers):
        xs, rates, costs = [], [], []
        for position, scenario in enumerate(scenarios):
            r = by_key.get((scenario, scheduler))
            if r is None:
                continue
            xs.append(position - 0.4 + width * (index + 0.5))
            rates.append(float(r.pods_per_s or 0.0))
            cost = cpu_ms_per_pod(r.cores, r.window_s, r.binds_seen).get("scheduler")
            costs.append(float(cost or 0.0))
        colour = PALETTE[index % len(PALETTE)]
        left.bar(xs, rates, width, label=scheduler, color=colour)
        right.bar(xs, costs, width, label=scheduler, color=colour)
    rates_seen = [c.binds_per_s for c in ceilings if c.binds_per_s > 0]
    if rates_seen:
        left.axhspan(
            min(rates_seen),
            max(rates_seen),
            color="grey",
            alpha=0.2,
            label=f"bind ceiling, {min(rates_seen):.0f}-{max(rates_seen):.0f}/s",
        )
    for axis, label, heading in (
        (left, "pods bound per second (log)", "throughput: ready -> last bind"),
        (right, "scheduler CPU ms per bound pod", "what each scheduler pays per pod"),
    ):
        axis.set_xticks(range(len(scenarios)))
        axis.set_xticklabels(scenarios, rotation=20)
        axis.set_ylabel(label)
        axis.set_title(heading)
        axis.grid(axis="y", alpha=0.3)
    left.set_yscale("log")
    left.set_ylim(bottom=10)
    handles, labels = left.get_legend_handles_labels()
    figure.legend(
        handles, labels, loc="upper center", ncol=4, fontsize=8, bbox_to_anchor=(0.5, 0.95)
    )
    figure.tight_layout(rect=(0, 0, 1, 0.86))
    figure.savefig(path, dpi=110)
    plt.close(figure)
