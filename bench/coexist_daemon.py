"""``python -m bench.coexist_daemon RECORD VARIANT run ...``: the daemon of one coexist round,
``python -m koordgang run ...`` with the switches of ``VARIANT`` (``coexist.VARIANTS``: "off"
has some, the others none or flags) and a record, for the bench alone, of where the window
between the two schedulers is.

The record (JSON, written to ``RECORD`` when the daemon exits) holds, by pod name, in
``time.monotonic()`` seconds (one clock for every process of the machine: the bench's watcher
reads the same): when the scheduling cycle decided to bind each pod of koordgang's, when its
Binding request went out and when the API server accepted it, and when the daemon's pod
informer first applied each pod bound, koordgang's or not. The bench sets these beside the
moments its own light watch saw each pod bound (``coexist_window.py``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.coexist import OFF
from bench.coexist_off import switch_off
from koordgang.cli import main
from koordgang.clients import pods
from koordgang.engine.bind_outcomes import BindOutcomes
from koordgang.engine.binder import BindOutcome, BindRequest
from koordgang.engine.intake import Intake
from koordgang.model.pod import PodInfo


class Record:
    def __init__(self) -> None:
        self.decided: dict[str, float] = {}
        self.sent: dict[str, float] = {}
        self.landed: dict[str, float] = {}
        self.seen: dict[str, float] = {}

    def install(self, set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
        """Wraps the intake's pod upsert and the bind outcomes' end of a bind
        (``set_attribute``: a test's monkeypatch, to undo it)."""
        record = self
        upsert = Intake.on_pod_upsert
        bind_done = BindOutcomes.bind_done
        bind = pods.bind

        async def bind_sent(api: Any, namespace: str, name: str, *args: Any) -> Any:
            # The last try's moment: the one whose answer is the acceptance.
            record.sent[name] = time.monotonic()
            return await bind(api, namespace, name, *args)

        def on_pod_upsert(self: Intake, pod: PodInfo) -> None:
            if pod.node_name and pod.name not in record.seen:
                record.seen[pod.name] = time.monotonic()
            upsert(self, pod)

        def on_bind_done(
            self: BindOutcomes, request: BindRequest, outcome: str, detail: str
        ) -> None:
            if outcome == BindOutcome.OK:
                record.landed[request.pod.name] = time.monotonic()
                record.decided[request.pod.name] = request.decided_at
            bind_done(self, request, outcome, detail)

        set_attribute(Intake, "on_pod_upsert", on_pod_upsert)
        set_attribute(BindOutcomes, "bind_done", on_bind_done)
        set_attribute(pods, "bind", bind_sent)

    def as_json(self) -> dict[str, Any]:
        return {
            "decided": self.decided,
            "sent": self.sent,
            "landed": self.landed,
            "seen": self.seen,
        }


def run(argv: list[str]) -> int:
    path, variant, rest = Path(argv[0]), argv[1], argv[2:]
    if variant == OFF:
        switch_off()
    record = Record()
    record.install()
    try:
        return main(rest)
    finally:
        path.write_text(json.dumps(record.as_json()))


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
