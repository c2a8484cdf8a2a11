"""The daemon's CPU for the ``Scheduled`` Events of a burst of binds, in process (no API server):
``reports`` Events reported while binds are in flight, then written once the last bind ends,
with the daemon's writers (its four and its event writers) and an API that answers at once.

``python -m bench.report_cpu [--reports N]`` prints the CPU of each half, per report: what
reporting costs the loop that binds, and what writing costs after it.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from koordgang.engine.metrics import Metrics
from koordgang.engine.reporter import Reporter
from koordgang.framework.report import Report
from koordgang.model.objects import ObjectRef


class _Binding:
    """Binds in flight until ``busy`` is cleared; every report is still current."""

    def __init__(self) -> None:
        self.busy = True

    def is_current(self, report: Report) -> bool:
        return True

    def binding_busy(self) -> bool:
        return self.busy


class _Api:
    async def request(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0)
        return {}


async def measure(reports: int = 2_000) -> tuple[float, float]:
    """(CPU seconds while binding, CPU seconds writing after it), for ``reports`` Events."""
    binding = _Binding()
    reporter = Reporter(
        _Api(),  # type: ignore[arg-type]
        "koord-scheduler",
        Metrics(),
        relevance=binding,
        clock=time.monotonic,
        normal_events_per_second=1e9,
    )
    tasks = [asyncio.create_task(reporter.work()) for _ in range(reporter.workers)]
    tasks += [asyncio.create_task(reporter.work(True)) for _ in range(reporter.event_workers)]
    await asyncio.sleep(0.05)
    started = time.process_time()
    for index in range(reports):
        ref = ObjectRef("Pod", "bench", f"p-{index}", f"uid-{index}")
        reporter.report(Report(ref, "Normal", "Scheduled", "assigned", always=True))
        await asyncio.sleep(0)  # the loop turns between binds
    while_binding = time.process_time() - started
    binding.busy = False
    started = time.process_time()
    reporter.binding_idle()
    await reporter.close(60.0)  # returns once everything is written
    writing = time.process_time() - started
    assert reporter.backlog == 0, "Events left unwritten"
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return while_binding, writing


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.report_cpu", description=__doc__)
    parser.add_argument("--reports", type=int, default=2_000)
    args = parser.parse_args()
    while_binding, writing = asyncio.run(measure(args.reports))
    per = 1000.0 / args.reports
    print(
        f"{args.reports} Scheduled Events: reported while binding {while_binding * per:.3f} CPU "
        f"ms each, written after {writing * per:.3f} CPU ms each"
    )


if __name__ == "__main__":
    main()
