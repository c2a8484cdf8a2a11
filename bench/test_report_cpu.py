"""The report CPU measure writes every Event it reports, once the binds end."""

from __future__ import annotations

from bench.report_cpu import measure


async def test_every_event_reported_while_binding_is_written_after() -> None:
    while_binding, writing = await measure(200)
    assert while_binding >= 0.0 and writing >= 0.0
