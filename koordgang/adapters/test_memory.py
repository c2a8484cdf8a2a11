"""The memory tracer names the line that keeps allocating."""

from __future__ import annotations

import asyncio

from koordgang.adapters.memory import AllocatorTrim, MemoryTracer, release_free_memory

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


def test_freed_memory_goes_back_to_the_os() -> None:
    trimmer = AllocatorTrim()
    if not trimmer.available:  # not glibc: trimming is a no-op there, and says so
        assert trimmer.trim() is False
        return
    # Blocks below the mmap threshold, freed under one still in use at the top of the heap,
    # stay in the process until trimmed.
    blocks = [bytearray(64_000) for _ in range(1_000)]
    keep = blocks[-1]
    del blocks
    assert trimmer.trim() is True
    assert len(keep) == 64_000


def test_a_missing_allocator_is_left_alone() -> None:
    trimmer = AllocatorTrim("libdoes-not-exist.so")
    assert trimmer.available is False
    assert trimmer.trim() is False


async def test_the_release_task_trims_on_its_period() -> None:
    calls: list[int] = []
    third = asyncio.Event()
    loop = asyncio.get_running_loop()

    class Counting(AllocatorTrim):
        def trim(self) -> bool:  # runs in a worker thread
            calls.append(1)
            if len(calls) == 3:
                loop.call_soon_threadsafe(third.set)
            return True

    task = asyncio.create_task(release_free_memory(Counting(), every=0.01))
    await asyncio.wait_for(third.wait(), timeout=30)
    task.cancel()
    assert len(calls) >= 3
