"""Where the window of the coexist scenario is: a round's samples from the daemon's record and
the bench's watch, their percentiles, and where the over-filling pods came from."""

from __future__ import annotations

import math

import pytest

from bench.coexist import NO_GUESS, ON
from bench.coexist_window import (
    binding_totals,
    overfills,
    percentile,
    summary,
    window,
    window_lines,
)


def test_a_round_sets_the_daemons_moments_beside_the_watchs() -> None:
    record = {
        # koordgang's pod: decided at 10.0, accepted at 10.3, its own informer at 10.5.
        "decided": {"kg-0000-00": 10.0},
        "sent": {"kg-0000-00": 10.01},
        "landed": {"kg-0000-00": 10.3},
        # kube-scheduler's pods as the daemon's informer applied them.
        "seen": {"kg-0000-00": 10.5, "ks-00000": 11.2, "ks-00001": 11.0},
    }
    watched = {"kg-0000-00": 10.32, "ks-00000": 11.0, "ks-00001": 11.05, "ks-00002": 12.0}
    samples = window(record, watched, lambda name: name.startswith("ks-"))
    assert samples["decided_to_landed"] == [pytest.approx(0.3)]
    assert samples["decided_to_sent"] == [pytest.approx(0.01)]
    assert samples["sent_to_landed"] == [pytest.approx(0.29)]
    assert samples["landed_to_watched"] == [pytest.approx(0.02)]
    assert samples["ours_landed_to_seen"] == [pytest.approx(0.2)]
    # ks-00002 never reached the daemon: no sample; ks-00001 reached it first.
    assert sorted(samples["theirs_to_seen"]) == [pytest.approx(-0.05), pytest.approx(0.2)]


def test_the_summary_gives_p50_and_p95_of_every_round_together_in_ms() -> None:
    assert math.isnan(percentile([], 0.5))
    assert percentile([0.3, 0.1, 0.2], 0.5) == 0.2
    values = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    found = summary([{"theirs_to_seen": values[:50]}, {"theirs_to_seen": values[50:]}])
    assert found == {"theirs_to_seen": [50.0, 95.0, 100]}
    table = window_lines({f"{ON}_window": found}, (ON, NO_GUESS))
    assert table[0].startswith("| where the window is")
    assert any(line.endswith("| 50 / 95 (100) |") for line in table), table


def test_each_pod_that_over_filled_a_node_is_told_by_what_let_it_in() -> None:
    record = {
        "decided": {"kg-a": 0.9, "kg-b": 2.1},
        "landed": {"kg-a": 1.05, "kg-b": 2.15},
        "seen": {"ks-1": 1.2, "ks-3": 2.3},
    }
    watched = {"ks-1": 1.0, "kg-a": 1.1, "ks-2": 1.3, "ks-3": 2.0, "kg-b": 2.2}
    node_of = {"ks-1": "n", "kg-a": "n", "ks-2": "n", "ks-3": "m", "kg-b": "m"}
    found = overfills(record, watched, lambda p: p.startswith("ks-"), node_of, {"n": 2, "m": 1})
    # n holds 2: ks-2 over-filled it, 0.25 s after koordgang's kg-a was accepted there.
    assert found["overfill_theirs"] == [pytest.approx(0.25)]
    # m holds 1: kg-b was decided 0.1 s after ks-3 could be watched, before the daemon saw it.
    assert found["overfill_ours_stale"] == [pytest.approx(0.1)]
    assert found["overfill_ours_concurrent"] == []
    # Had kg-b been decided before ks-3 landed, no view could have had it.
    early = {**record, "decided": {"kg-a": 0.9, "kg-b": 1.9}}
    found = overfills(early, watched, lambda p: p.startswith("ks-"), node_of, {"n": 2, "m": 1})
    assert found["overfill_ours_concurrent"] == [pytest.approx(0.1)]
    assert found["overfill_ours_stale"] == []


def test_the_api_servers_own_time_on_bindings_is_read_from_its_metrics() -> None:
    text = "\n".join(
        [
            "# HELP apiserver_request_duration_seconds ...",
            'apiserver_request_duration_seconds_bucket{component="apiserver",resource="pods",'
            'subresource="binding",verb="POST",le="0.05"} 3',
            'apiserver_request_duration_seconds_sum{component="apiserver",resource="pods",'
            'subresource="binding",verb="POST",version="v1"} 0.25',
            'apiserver_request_duration_seconds_count{component="apiserver",resource="pods",'
            'subresource="binding",verb="POST",version="v1"} 5',
            # Other requests, and other metrics of bindings, are not counted.
            'apiserver_request_duration_seconds_sum{resource="pods",subresource="status",'
            'verb="PATCH"} 9',
            'apiserver_request_duration_seconds_count{resource="pods",subresource="",'
            'verb="POST"} 7',
            'apiserver_request_sli_duration_seconds_sum{resource="pods",'
            'subresource="binding",verb="POST"} 4',
        ]
    )
    assert binding_totals(text) == (0.25, 5.0)
    assert binding_totals("") == (0.0, 0.0)
