"""The informer's LIST: pages in order, the next page asked for before the current one is
parsed, an expired continue token starts the LIST over."""

from __future__ import annotations

import asyncio
from typing import Any

from koordgang.adapters.informer import Informer
from koordgang.clients.errors import ApiError


class _Pages:
    """An API that serves ``total`` items in pages, and logs what happened in which order."""

    def __init__(self, total: int, expire_once_at: str = "") -> None:
        self.total = total
        self.log: list[str] = []
        self._expire = expire_once_at

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        params = kwargs["params"]
        limit = int(params["limit"])
        start = int(params.get("continue") or 0)
        self.log.append(f"ask {start}")
        await asyncio.sleep(0)
        if self._expire and params.get("continue") == self._expire:
            self._expire = ""
            raise ApiError(410, "Expired", "continue token expired")
        end = min(self.total, start + limit)
        meta: dict[str, Any] = {"resourceVersion": "77"}
        if end < self.total:
            meta["continue"] = str(end)
        return {"metadata": meta, "items": [{"n": i} for i in range(start, end)]}


class _Sink:
    def __init__(self, api: _Pages) -> None:
        self.api = api
        self.items: list[int] = []
        self.lists = 0

    def begin_list(self) -> None:
        self.lists += 1
        self.items = []

    def list_page(self, items: list[dict[str, Any]]) -> None:
        self.api.log.append(f"parse {items[0]['n']}")
        self.items.extend(item["n"] for item in items)

    def end_list(self) -> None:
        self.api.log.append("end")

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        raise AssertionError("no watch here")


async def test_the_next_page_is_asked_for_before_this_one_is_parsed() -> None:
    api = _Pages(total=25)
    sink = _Sink(api)
    informer = Informer(api, "/api/v1/pods", name="pods", sink=sink, page_size=10)  # type: ignore[arg-type]
    await informer._list()
    assert sink.items == list(range(25))
    assert informer.resource_version == "77"
    assert api.log == ["ask 0", "ask 10", "parse 0", "ask 20", "parse 10", "parse 20", "end"]


async def test_an_expired_continue_token_starts_the_list_over() -> None:
    api = _Pages(total=25, expire_once_at="20")
    sink = _Sink(api)
    informer = Informer(api, "/api/v1/pods", name="pods", sink=sink, page_size=10)  # type: ignore[arg-type]
    await informer._list()
    assert sink.lists == 2
    assert sink.items == list(range(25))
