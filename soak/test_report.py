"""The soak's memory verdict: flat passes, growth fails, the warm-up and earlier daemons are
not judged."""

from __future__ import annotations

from soak.report import rss_quarters, verdict
from soak.run import Sample, SoakRecord, Violation


def _samples(rss: list[float], start: float = 0.0) -> list[Sample]:
    return [Sample(start + 10.0 * i, value, 0, 0, 0, 1) for i, value in enumerate(rss)]


def test_flat_memory_passes_and_the_warm_up_is_not_judged() -> None:
    # 2 minutes of warm-up at 50 MB, then 100 MB flat.
    record = SoakRecord(minutes=10, samples=_samples([50.0] * 12 + [100.0] * 48))
    assert rss_quarters(record.samples, 0.0) == (100.0, 100.0)
    ok, lines = verdict(record)
    assert ok, lines


def test_growing_memory_fails() -> None:
    record = SoakRecord(minutes=10, samples=_samples([100.0 + i for i in range(60)]))
    ok, lines = verdict(record)
    assert not ok
    assert any("GROWS" in line for line in lines)


def test_only_the_last_daemon_is_judged_and_violations_fail() -> None:
    # An earlier daemon grew and was killed at 300 s; the last one is flat.
    samples = _samples([100.0 + 5 * i for i in range(30)]) + _samples([80.0] * 40, start=300.0)
    record = SoakRecord(minutes=12, samples=samples, last_daemon_start=300.0)
    assert verdict(record)[0]
    record.violations.append(Violation(10.0, "over-committed", "n1: cpu"))
    assert not verdict(record)[0]
