"""What a soak shows: a JSON record, a plot of memory and pending pods over time, and the
verdict (no violation; the daemon's RSS flat: the median of the last quarter of its life at
most 10% above the first quarter's, after a two-minute warm-up)."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict
from pathlib import Path
from typing import Any

from soak.run import Sample, SoakRecord

WARM_UP = 120.0
#: How much the last quarter's median RSS may exceed the first quarter's.
RSS_GROWTH_ALLOWED = 0.10


def rss_quarters(samples: list[Sample], since: float) -> tuple[float, float] | None:
    """Median RSS of the first and the last quarter of the samples taken from ``since`` plus
    the warm-up (the daemon that ran to the end); None with too few samples."""
    kept = [s for s in samples if s.at >= since + WARM_UP and s.rss_mb is not None]
    if len(kept) < 8:
        return None
    start, end = kept[0].at, kept[-1].at
    quarter = (end - start) / 4
    first = [s.rss_mb for s in kept if s.at <= start + quarter and s.rss_mb is not None]
    last = [s.rss_mb for s in kept if s.at >= end - quarter and s.rss_mb is not None]
    if not first or not last:
        return None
    return statistics.median(first), statistics.median(last)


def verdict(record: SoakRecord) -> tuple[bool, list[str]]:
    lines = []
    ok = not record.violations
    lines.append(f"violations: {len(record.violations)}")
    quarters = rss_quarters(record.samples, record.last_daemon_start)
    if quarters is None:
        lines.append("RSS: too few samples to judge")
    else:
        first, last = quarters
        growth = (last - first) / first if first else 0.0
        flat = growth <= RSS_GROWTH_ALLOWED
        ok = ok and flat
        lines.append(
            f"RSS of the last daemon: first-quarter median {first:.1f} MB, last-quarter "
            f"median {last:.1f} MB ({growth:+.1%}; allowed +{RSS_GROWTH_ALLOWED:.0%}): "
            f"{'flat' if flat else 'GROWS'}"
        )
    grown = record.memory_at_end.get("grown") or []
    if grown:
        lines.append("allocation sites that grew most since the first minute (tracemalloc):")
        for site in grown[:5]:
            lines.append(
                f"  {site['growth'] / 1024:+.0f} KiB ({site['countGrowth']:+d} blocks) "
                f"{site['site']}"
            )
    return ok, lines


def save(record: SoakRecord, out_dir: Path, stamp: str) -> tuple[Path, Path | None]:
    out_dir.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = asdict(record)
    ok, lines = verdict(record)
    data["verdict"] = {"ok": ok, "lines": lines}
    path = out_dir / f"soak-{stamp}.json"
    path.write_text(json.dumps(data, indent=1))
    return path, plot(record, out_dir / f"soak-{stamp}.png")


def plot(record: SoakRecord, path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    minutes = [s.at / 60 for s in record.samples]
    figure, (memory, pods) = plt.subplots(2, 1, sharex=True, figsize=(10, 6))
    memory.plot(minutes, [s.rss_mb or float("nan") for s in record.samples], color="tab:blue")
    memory.set_ylabel("daemon RSS (MB)")
    pods.plot(minutes, [s.pending for s in record.samples], label="pending", color="tab:red")
    pods.plot(minutes, [s.bound for s in record.samples], label="bound", color="tab:green")
    pods.set_ylabel("pods of ours")
    pods.set_xlabel("minutes")
    pods.legend(loc="upper left")
    for fault in record.faults:
        for axis in (memory, pods):
            axis.axvline(fault.at / 60, color="grey", alpha=0.4, linewidth=0.8)
    memory.set_title(
        f"soak: {record.jobs_created} jobs, {record.pods_created} pods, "
        f"{len(record.faults)} faults (grey), {len(record.violations)} violations"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
