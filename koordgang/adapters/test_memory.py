"""The memory tracer names the line that keeps allocating."""

from __future__ import annotations

from koordgang.adapters.memory import MemoryTracer

_kept: list[bytes] = []


def _leak(times: int) -> None:
    for _ in range(times):
        _kept.append(bytes(1024))


def test_the_site_that_grew_comes_first() -> None:
    tracer = MemoryTracer(top=5)
    tracer.start()
    try:
        first = tracer.report()
        assert first["tracing"] is True
        _leak(2_000)
        report = tracer.report()
        top = report["grown"][0]
        assert "test_memory.py" in top["site"]
        assert top["growth"] >= 2_000 * 1024
    finally:
        tracer.stop()
        _kept.clear()
    assert tracer.report() == {"tracing": False}
