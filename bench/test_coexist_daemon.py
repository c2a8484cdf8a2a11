"""The coexist daemon's record: the moment each Binding request goes out, as the binder sends
it through ``koordgang.clients.pods.bind``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from bench.coexist_daemon import Record
from koordgang.clients import pods


class _Api:
    def __init__(self) -> None:
        self.paths: list[str] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.paths.append(path)
        return {}


def test_a_binding_sent_is_recorded_when_it_goes_out(monkeypatch: pytest.MonkeyPatch) -> None:
    record = Record()
    record.install(monkeypatch.setattr)
    api = _Api()
    before = time.monotonic()
    asyncio.run(pods.bind(api, "ns", "kg-0000-00", "uid-1", "n1"))  # type: ignore[arg-type]
    assert api.paths == ["/api/v1/namespaces/ns/pods/kg-0000-00/binding"]
    assert before <= record.sent["kg-0000-00"] <= time.monotonic()
    assert record.as_json()["sent"] == record.sent
