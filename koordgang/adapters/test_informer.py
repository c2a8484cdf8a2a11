"""The informer's LIST: pages in order, the next page asked for before the current one is
parsed, an expired continue token starts the LIST over; a streaming list where the server
serves one, paging where it does not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from koordgang.adapters.informer import INITIAL_EVENTS_END, Informer
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
    informer = Informer(
        api,  # type: ignore[arg-type]  # a fake of KubeApi's listing and watching
        "/api/v1/pods",
        name="pods",
        sink=sink,
        page_size=10,
        list_from_cache=False,
    )
    await informer._list()
    assert sink.items == list(range(25))
    assert informer.resource_version == "77"
    assert api.log == ["ask 0", "ask 10", "parse 0", "ask 20", "parse 10", "parse 20", "end"]


async def test_an_expired_continue_token_starts_the_list_over() -> None:
    api = _Pages(total=25, expire_once_at="20")
    sink = _Sink(api)
    informer = Informer(
        api,  # type: ignore[arg-type]  # a fake of KubeApi's listing and watching
        "/api/v1/pods",
        name="pods",
        sink=sink,
        page_size=10,
        list_from_cache=False,
    )
    await informer._list()
    assert sink.lists == 2
    assert sink.items == list(range(25))


class _Streams:
    """An API that answers a streaming list with ``total`` ADDED events, the bookmark that
    ends them, then ``after`` more events; or refuses it (``refuse``) and serves pages."""

    def __init__(self, total: int, after: int = 0, refuse: int = 0) -> None:
        self.total = total
        self.after = after
        self.refuse = refuse
        self.watches: list[dict[str, str]] = []
        self.pages = _Pages(total)

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return await self.pages.request(method, path, **kwargs)

    async def watch(
        self, path: str, params: dict[str, str], *, timeout: float
    ) -> AsyncIterator[dict[str, Any]]:
        self.watches.append(dict(params))
        if params.get("sendInitialEvents") == "true":
            if self.refuse:
                raise ApiError(self.refuse, "Invalid", "sendInitialEvents is forbidden")
            for n in range(self.total):
                yield {"type": "ADDED", "object": {"n": n, "metadata": {"resourceVersion": "5"}}}
            yield {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "90"}}}
            end = {"resourceVersion": "91", "annotations": {INITIAL_EVENTS_END: "true"}}
            yield {"type": "BOOKMARK", "object": {"metadata": end}}
            later = {"resourceVersion": "92"}
            for n in range(self.after):
                yield {"type": "MODIFIED", "object": {"n": n, "metadata": later}}
        else:
            await asyncio.Event().wait()  # a quiet watch
            yield {}


class _StreamSink(_Sink):
    def __init__(self, api: _Pages) -> None:
        super().__init__(api)
        self.pages: list[int] = []
        self.ended = asyncio.Event()
        self.events: list[tuple[str, int]] = []

    def list_page(self, items: list[dict[str, Any]]) -> None:
        self.pages.append(len(items))
        super().list_page(items)

    def end_list(self) -> None:
        super().end_list()
        self.ended.set()

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        self.events.append((kind, obj["n"]))


async def _run_until_quiet(informer: Informer, api: _Streams) -> None:
    task = asyncio.create_task(informer.run())
    for _ in range(200):
        await asyncio.sleep(0)
        if any(w.get("resourceVersion") for w in api.watches):
            break
    task.cancel()


async def test_a_streamed_list_comes_in_pages_then_the_stream_goes_on_as_a_watch() -> None:
    api = _Streams(total=25, after=2)
    sink = _StreamSink(api.pages)
    informer = Informer(
        api,  # type: ignore[arg-type]  # a fake of KubeApi's listing and watching
        "/api/v1/pods",
        name="pods",
        sink=sink,
        page_size=10,
        list_from_cache=False,
    )
    await _run_until_quiet(informer, api)
    assert sink.items == list(range(25)) and sink.pages == [10, 10, 5]
    assert sink.ended.is_set()
    # Events after the end of the initial state are watch events, not list items.
    assert sink.events == [("MODIFIED", 0), ("MODIFIED", 1)]
    # No paged LIST; the next watch starts from the stream's last resourceVersion.
    assert not [line for line in api.pages.log if line.startswith("ask")]
    assert api.watches[0]["resourceVersionMatch"] == "NotOlderThan"
    assert api.watches[1]["resourceVersion"] == "92"
    assert informer.streaming


async def test_a_server_that_refuses_streaming_lists_is_paged() -> None:
    api = _Streams(total=25, refuse=422)
    sink = _StreamSink(api.pages)
    informer = Informer(
        api,  # type: ignore[arg-type]  # a fake of KubeApi's listing and watching
        "/api/v1/pods",
        name="pods",
        sink=sink,
        page_size=10,
        list_from_cache=False,
    )
    await _run_until_quiet(informer, api)
    assert not informer.streaming
    assert sink.items == list(range(25))
    assert api.pages.log[0] == "ask 0"
    assert api.watches[-1]["resourceVersion"] == "77"


class _Broken(_Streams):
    """Streams ``total`` objects with changes among them; the first stream breaks off
    before its bookmark when ``break_first``."""

    def __init__(self, total: int, break_first: bool) -> None:
        super().__init__(total)
        self.break_first = break_first

    async def watch(
        self, path: str, params: dict[str, str], *, timeout: float
    ) -> AsyncIterator[dict[str, Any]]:
        self.watches.append(dict(params))
        if params.get("sendInitialEvents") != "true":
            await asyncio.Event().wait()
            yield {}
        for n in range(self.total):
            yield {"type": "ADDED", "object": {"n": n, "metadata": {"resourceVersion": "5"}}}
            if n == 2:
                # A change made while the state streams.
                meta = {"resourceVersion": "60"}
                yield {"type": "MODIFIED", "object": {"n": 1, "metadata": meta}}
        if self.break_first:
            self.break_first = False
            return
        end = {"resourceVersion": "91", "annotations": {INITIAL_EVENTS_END: "true"}}
        yield {"type": "BOOKMARK", "object": {"metadata": end}}


async def test_changes_during_the_initial_state_follow_the_list_in_order() -> None:
    api = _Broken(total=6, break_first=False)
    sink = _StreamSink(api.pages)
    informer = Informer(
        api,  # type: ignore[arg-type]  # a fake of KubeApi's listing and watching
        "/api/v1/pods",
        name="pods",
        sink=sink,
        page_size=10,
        list_from_cache=False,
    )
    await _run_until_quiet(informer, api)
    # Objects after the change are held behind it, and come as events, in order.
    assert sink.items == [0, 1, 2]
    assert sink.events == [("MODIFIED", 1), ("ADDED", 3), ("ADDED", 4), ("ADDED", 5)]
    # The watch goes on from the bookmark, not from an older change.
    assert api.watches[-1]["resourceVersion"] == "91"


async def test_a_stream_that_breaks_off_is_retried_after_a_pause_as_a_paged_list(
    monkeypatch: Any,
) -> None:
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def no_sleep(delay: float) -> None:
        slept.append(delay)
        await real_sleep(0)

    api = _Broken(total=25, break_first=True)
    sink = _StreamSink(api.pages)
    informer = Informer(
        api,  # type: ignore[arg-type]  # a fake of KubeApi's listing and watching
        "/api/v1/pods",
        name="pods",
        sink=sink,
        page_size=10,
        list_from_cache=False,
    )
    monkeypatch.setattr("koordgang.adapters.informer.asyncio.sleep", no_sleep)
    task = asyncio.create_task(informer.run())
    for _ in range(100):
        await real_sleep(0)
        if sink.ended.is_set() and any(w.get("resourceVersion") for w in api.watches):
            break
    task.cancel()
    assert any(delay > 0 for delay in slept), "retried at once"
    # The retry was paged; streaming stays on for the lists after it.
    assert api.pages.log[0] == "ask 0"
    assert sink.items == list(range(25))
    assert informer.streaming


class _Cached(_Streams):
    """``_Streams`` that also answers a LIST from the cache with ``body``, in chunks of 7."""

    def __init__(self, total: int, body: bytes) -> None:
        super().__init__(total)
        self.body = body
        self.cache_lists: list[dict[str, str]] = []

    async def chunks(
        self, path: str, params: dict[str, str], *, timeout: float
    ) -> AsyncIterator[bytes]:
        self.cache_lists.append(dict(params))
        for start in range(0, len(self.body), 7):
            await asyncio.sleep(0)
            yield self.body[start : start + 7]


def _list_body(count: int, tail: bytes = b"]}") -> bytes:
    items = b",".join(b'{"metadata":{"name":"p%d"},"n":%d}' % (n, n) for n in range(count))
    return b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"60"},"items":[' + (
        items + tail
    )


async def test_the_first_list_comes_whole_from_the_cache_then_a_watch_from_its_version() -> None:
    api = _Cached(total=25, body=_list_body(25))
    sink = _StreamSink(api.pages)
    informer = Informer(api, "/api/v1/pods", name="pods", sink=sink, page_size=10)  # type: ignore[arg-type]
    await _run_until_quiet(informer, api)
    assert api.cache_lists == [{"resourceVersion": "0"}]
    assert sink.items == list(range(25)) and sink.lists == 1 and sink.ended.is_set()
    # Items are handed over as they come, not all at the end.
    assert len(sink.pages) > 1
    # Neither a streaming list nor pages; the watch goes on from the list's resourceVersion.
    assert not [line for line in api.pages.log if line.startswith("ask")]
    assert [w.get("resourceVersion") for w in api.watches] == ["60"]


async def test_a_list_from_the_cache_that_cannot_be_cut_is_listed_again_as_a_stream() -> None:
    api = _Cached(total=25, body=_list_body(25, tail=b"]"))  # ends inside the list
    sink = _StreamSink(api.pages)
    informer = Informer(api, "/api/v1/pods", name="pods", sink=sink, page_size=10)  # type: ignore[arg-type]
    await _run_until_quiet(informer, api)
    assert len(api.cache_lists) == 1
    # Listed again from the start, by a streaming list, and only that one ended.
    assert api.watches[0]["sendInitialEvents"] == "true"
    assert sink.items == list(range(25)) and sink.lists == 2
    assert api.pages.log.count("end") == 1
