"""Reading the collector's share out of ``go tool pprof -top -cum`` (the text of a profile of
kube-apiserver taken in a contention window)."""

from __future__ import annotations

from bench.apiserver_profile import gc_share

TOP = """File: kube-apiserver-75cba2a85974
Type: cpu
Time: 2026-11-26 16:51:30 UTC
Duration: 2s, Total samples = 2.33s (116.38%)
Showing nodes accounting for 2.33s, 100% of 2.33s total
      flat  flat%   sum%        cum   cum%
     0.01s  0.43%  0.43%      1.20s 51.50%  runtime.goexit
         0     0%  1.72%      0.50s 21.46%  runtime.gcBgMarkWorker
     0.33s 14.16% 15.88%      0.33s 14.16%  runtime.spanClass.sizeclass (inline)
         0     0% 22.32%      180ms  7.73%  runtime.gcAssistAlloc
         0     0% 22.32%      0.05s  2.15%  runtime.gcAssistAlloc1
"""


def test_the_collector_is_its_marking_workers_and_assists() -> None:
    sampled, collector = gc_share(TOP) or (0.0, 0.0)
    assert sampled == 2.33
    assert round(collector, 2) == 0.68  # 0.50 s + 180 ms; gcAssistAlloc1 is inside the latter


def test_a_window_without_a_collection_has_none() -> None:
    quiet = "\n".join(line for line in TOP.splitlines() if "runtime.gc" not in line)
    assert gc_share(quiet) == (2.33, 0.0)


def test_milliseconds_in_the_total_are_read_as_such() -> None:
    top = TOP.replace("Total samples = 2.33s", "Total samples = 1800ms")
    assert (gc_share(top) or (0.0, 0.0))[0] == 1.8


def test_text_without_a_total_gives_no_figure() -> None:
    assert gc_share("failed to fetch any source profiles") is None
