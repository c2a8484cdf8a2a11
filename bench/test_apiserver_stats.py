"""The API server's own counters, read around a window: requests by kind, and its collector."""

from __future__ import annotations

from bench.apiserver_stats import GC_CPU_KEY, GC_CYCLES_KEY, parse, summary, window


def _request(verb: str, resource: str, subresource: str, code: str, count: float) -> str:
    labels = (
        f'code="{code}",component="apiserver",group="",resource="{resource}",'
        f'scope="resource",subresource="{subresource}",verb="{verb}",version="v1"'
    )
    return f"apiserver_request_total{{{labels}}} {count}"


def _metrics(
    binds: int, conflicts: int, patches: int, events: int, gc_cpu: float, cycles: int
) -> str:
    lines = [
        "# HELP apiserver_request_total Counter of apiserver requests.",
        "# TYPE apiserver_request_total counter",
        _request("POST", "pods", "binding", "201", binds),
        _request("POST", "pods", "binding", "409", conflicts),
        _request("PATCH", "pods", "status", "200", patches),
        _request("POST", "events", "", "201", events),
        # The bench's own reads of this endpoint: no resource.
        _request("GET", "", "/metrics", "200", binds),
        "# TYPE go_cpu_classes_gc_total_cpu_seconds_total counter",
        f"go_cpu_classes_gc_total_cpu_seconds_total {gc_cpu}",
        "# TYPE go_gc_cycles_total_gc_cycles_total counter",
        f"go_gc_cycles_total_gc_cycles_total {cycles}",
    ]
    return "\n".join(lines) + "\n"


BEFORE = _metrics(10, 1, 4, 0, 1.5, 20)


def _after(binds: int, patches: int, events: int, gc_cpu: float, cycles: int) -> str:
    return _metrics(10 + binds, 1, 4 + patches, events, 1.5 + gc_cpu, 20 + cycles)


def test_requests_are_summed_over_codes_by_verb_and_resource() -> None:
    counts = parse(BEFORE)
    assert counts["POST pods/binding"] == 11
    assert counts["PATCH pods/status"] == 4
    # The bench's own reads of /metrics are not requests for a resource.
    assert not any("metrics" in key for key in counts)


def test_a_window_holds_what_was_asked_in_it_and_the_collectors_work() -> None:
    stats = window(parse(BEFORE), parse(_after(100, 5, 3, 0.25, 2)))
    assert stats == {
        "POST pods/binding": 100,
        "PATCH pods/status": 5,
        "POST events": 3,
        GC_CPU_KEY: 0.25,
        GC_CYCLES_KEY: 2,
    }


def test_kinds_not_asked_in_the_window_are_left_out() -> None:
    stats = window(parse(BEFORE), parse(_after(100, 0, 0, 0.0, 0)))
    assert "PATCH pods/status" not in stats
    assert "POST events" not in stats
    assert stats[GC_CYCLES_KEY] == 0


def test_no_window_without_both_reads() -> None:
    assert window({}, parse(BEFORE)) == {}
    assert window(parse(BEFORE), {}) == {}


def test_the_summary_puts_the_most_frequent_requests_first_per_bound_pod() -> None:
    stats = window(parse(BEFORE), parse(_after(100, 5, 30, 0.25, 1)))
    line = summary(stats, bound=100)
    assert line.startswith("1 GC cycles, GC 0.25 CPU s, POST pods/binding 100 (1.00/pod)")
    assert line.index("POST events 30") < line.index("PATCH pods/status 5")
