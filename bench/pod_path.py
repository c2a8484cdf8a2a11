"""``python -m bench.pod_path``: the product files a gang member's pod crosses from its informer
event to the start of its scheduling cycle, and how often the path moves between files.

Runs the engine in process (the fake API server and clock of ``koordgang.testing``): a gang of
two whose first member is already known; the second member's event is traced with
``sys.setprofile`` until ``run_cycle`` starts. A measure of how spread out the gang model is:
how many files a newcomer follows, and how often the engine hands over to plugins."""

from __future__ import annotations

import asyncio
import sys
from types import FrameType
from typing import Any
from unittest import mock

import koordgang.engine.loop as loop_module
from koordgang.framework.cycle import run_cycle
from koordgang.settings import Settings
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import gang, node
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness


def trace() -> list[str]:
    """The files entered, in order (consecutive calls within one file counted once)."""
    crossed: list[str] = []
    recording = [False]

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not recording[0]:
            return
        name = frame.f_code.co_filename
        if "/koordgang/" not in name or "/koordgang/testing/" in name or "/test_" in name:
            return
        relative = name.split("/koordgang/", 1)[1]
        if not crossed or crossed[-1] != relative:
            crossed.append(relative)

    def stop_at_cycle(*args: Any, **kwargs: Any) -> Any:
        recording[0] = False
        return run_cycle(*args, **kwargs)

    async def run() -> None:
        harness = Harness(FakeApi(), FakeClock(), Settings())
        harness.list(nodes=[node("n1", cpu="8")], pods=[])
        await harness.run()
        first, second = gang("job", 2, 2)
        harness.intake.on_pod_upsert(first)
        # The loop's own name for it is replaced: the trace stops where the cycle starts.
        with mock.patch.object(loop_module, "run_cycle", stop_at_cycle):
            try:
                sys.setprofile(profile)
                recording[0] = True
                harness.intake.on_pod_upsert(second)
                harness.step()
            finally:
                sys.setprofile(None)
        await harness.close()

    asyncio.run(run())
    return crossed


def entries_into_plugins(crossed: list[str]) -> int:
    """How often the path goes from outside ``plugins/`` into it."""
    layers = [name.split("/", 1)[0] for name in crossed]
    pairs = zip(["", *layers[:-1]], layers, strict=True)
    return sum(1 for before, now in pairs if now == "plugins" != before)


def main() -> None:
    crossed = trace()
    files = sorted(set(crossed))
    print(
        f"{len(files)} files, {len(crossed)} moves between files, "
        f"{entries_into_plugins(crossed)} entries into plugins, event -> run_cycle:"
    )
    for name in files:
        print(f"  koordgang/{name}")


if __name__ == "__main__":
    main()
