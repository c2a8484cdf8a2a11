"""A list+watch informer on plain asyncio, for pods and nodes.

Protocol: the first list is one LIST served from the API server's watch cache
(``resourceVersion=0``, as client-go's reflectors list), cut into its items as its bytes
arrive; later lists (after 410 Gone) must not go back in time, so they are a streaming list
where the API server serves one (a WATCH with
``sendInitialEvents=true``: the objects come as ADDED events from its watch cache, then a
bookmark marks the end of the initial state, and the same stream goes on as a watch), else a
paginated LIST; then WATCH from the list's resourceVersion with bookmarks; on 410 Gone (history
compacted) list again; on any other error back off and retry. Never gives up. Only the compact
summaries built by the callbacks are kept.

Why this and not kopf, and why each list is made as it is: docs/decisions/informer.md.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any, Protocol

import orjson
import structlog

from koordgang.clients.api import KubeApi, decode_slim
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.clients.list_items import ListCutError, ListItems

log = structlog.get_logger("koordgang.informer")


class Sink(Protocol):
    """Where an informer delivers what it sees. A LIST arrives page by page, so that the raw
    bodies of one page at a time are held, not those of 20,000 pods at once."""

    def begin_list(self) -> None: ...
    def list_page(self, items: list[dict[str, Any]]) -> None: ...
    def end_list(self) -> None: ...
    def event(self, kind: str, obj: dict[str, Any]) -> None: ...


class _Relist(Exception):
    pass


class _StreamIncomplete(Exception):
    """A streaming list ended before the bookmark that closes its initial state."""


#: The annotation on the bookmark that ends a streaming list's initial events.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
#: Statuses with which an API server refuses a streaming list (the WatchList feature off, or a
#: server older than it): the informer pages from then on. Not 403: RBAC checks a streaming
#: list as ``watch``, which the informer needs anyway; a denial is retried and logged as such.
STREAMING_REFUSED = (400, 422)


#: Event-loop turns given to a page request to be written out before a page is parsed.
SEND_YIELDS = 3
#: Seconds without a byte of a list from the cache before it is given up (the server may take
#: a while to begin a large one while it is busy).
CACHE_LIST_READ_TIMEOUT = 120.0


class Informer:
    def __init__(
        self,
        api: KubeApi,
        path: str,
        *,
        name: str,
        sink: Sink,
        page_size: int = 500,
        watch_timeout: int = 300,
        max_backoff: float = 30.0,
        stream_lists: bool = True,
        list_from_cache: bool = True,
        optional: bool = False,
    ) -> None:
        self.api = api
        self.path = path
        self.name = name
        self._sink = sink
        self._page_size = page_size
        self._watch_timeout = watch_timeout
        self._max_backoff = max_backoff
        self.resource_version = ""
        self.events = 0
        #: Lists come as a stream until the server refuses one.
        self.streaming = stream_lists
        #: The first list is asked of the watch cache (one LIST, cut into items as it comes).
        self._cache_first = list_from_cache
        #: A kind the API server may not serve (an API group a cluster has switched off): a
        #: 404 counts as an empty list, and the kind is asked for again now and then.
        self.optional = optional
        self._absent = False

    async def run(self) -> None:
        failures = 0
        need_list = True
        #: The last streaming list broke off: the next list is paged, as a fallback for once.
        page_once = False
        while True:
            try:
                if need_list and self._cache_first:
                    self._cache_first = False
                    try:
                        await self._list_from_cache()
                    except (ListCutError, ApiError, ApiUnavailable) as error:
                        if isinstance(error, ApiError) and error.not_found and self.optional:
                            await self._absent_for_now()
                            continue
                        log.info(
                            "a list from the cache failed; listing again",
                            informer=self.name,
                            error=str(error),
                        )
                        continue
                    need_list = False
                if need_list and self.streaming and not page_once:
                    # Listed, then watched on the same stream until the server ends it.
                    await self._stream()
                    need_list = False
                    failures = 0
                    continue
                if need_list:
                    await self._list()
                    need_list = page_once = False
                    failures = 0
                await self._watch()
                failures = 0
            except _Relist:
                need_list = True
            except (_StreamIncomplete, ApiError, ApiUnavailable) as error:
                if isinstance(error, ApiError) and error.gone:
                    need_list = True
                    log.info("watch history expired; listing again", informer=self.name)
                    continue
                if isinstance(error, ApiError) and error.not_found and self.optional:
                    await self._absent_for_now()
                    need_list = True
                    continue
                if isinstance(error, _StreamIncomplete):
                    # A server that drops a slow reader of a long stream would do it again:
                    # the next list is paged, each page a request of its own.
                    need_list = page_once = True
                failures += 1
                delay = min(self._max_backoff, 0.5 * 2 ** min(failures, 8)) * random.uniform(
                    0.8, 1.2
                )
                log.warning(
                    "list/watch failed; retrying",
                    informer=self.name,
                    error=str(error),
                    retry_in=round(delay, 2),
                )
                await asyncio.sleep(delay)

    async def _absent_for_now(self) -> None:
        """The API server does not serve the kind: nothing of it exists (an empty list, once),
        and it is asked for again after the longest backoff."""
        if not self._absent:
            self._absent = True
            log.info("not served by the API server; treated as empty", informer=self.name)
            self._sink.begin_list()
            self._sink.end_list()
        await asyncio.sleep(self._max_backoff)

    async def _list_from_cache(self) -> None:
        """One LIST from the watch cache, each item decoded and handed to the sink with the
        others of its chunk as the bytes come: the whole list is never held."""
        cut = ListItems()
        count = 0
        self._sink.begin_list()
        params = {"resourceVersion": "0"}
        async for chunk in self.api.chunks(self.path, params, timeout=CACHE_LIST_READ_TIMEOUT):
            items = cut.feed(chunk)
            if items:
                count += self._hand_over(items)
        count += self._hand_over(cut.finish())
        self.resource_version = str(cut.metadata.get("resourceVersion") or "")
        if not self.resource_version:
            raise ListCutError("the list has no resourceVersion to watch from")
        self._sink.end_list()
        self._listed(count, "from the cache")

    def _listed(self, count: int, how: str) -> None:
        self._absent = False
        log.info(
            "listed",
            informer=self.name,
            count=count,
            resource_version=self.resource_version,
            how=how,
        )

    def _hand_over(self, items: list[bytes]) -> int:
        """The items of one chunk, decoded as one array (one call per chunk, not per item)."""
        if not items:
            return 0
        try:
            page = decode_slim(b"[" + b",".join(items) + b"]")
        except orjson.JSONDecodeError as error:
            raise ListCutError(f"the list's items do not decode: {error}") from None
        if not isinstance(page, list) or len(page) != len(items):
            raise ListCutError("the list's items are not as many objects as were cut")
        if not all(type(obj) is dict for obj in page):
            raise ListCutError("an item of the list is not an object")
        self._sink.list_page(page)
        return len(page)

    async def _list(self) -> None:
        """Pages one after another, the next one asked for before the current one is handed
        to the sink: the API server prepares it while the daemon parses (on a busy 2-core
        machine with 100,000 pods, strictly alternating left each side idle half the time)."""
        count = 0
        self._sink.begin_list()
        asked = ""  # the continue token of the page in flight ("" for the first)
        pending = self._fetch(asked)
        try:
            while True:
                try:
                    page = await pending
                except ApiError as error:
                    if error.gone and asked:
                        # The continue token expired while paging: start the LIST over.
                        count, asked = 0, ""
                        self._sink.begin_list()
                        pending = self._fetch(asked)
                        continue
                    raise
                meta = page.get("metadata") or {}
                items = page.get("items") or []
                del page  # one page of raw bodies at a time (and the next one in flight)
                cont = meta.get("continue") or ""
                if cont:
                    asked = cont
                    pending = self._fetch(asked)
                    # Let the request go out before the (synchronous) parse of this page.
                    for _ in range(SEND_YIELDS):
                        await asyncio.sleep(0)
                count += len(items)
                self._sink.list_page(items)
                del items
                if not cont:
                    self.resource_version = str(meta.get("resourceVersion") or "")
                    break
        finally:
            if not pending.done():
                pending.cancel()
            elif not pending.cancelled():
                pending.exception()  # retrieved: a failure here was already raised, or moot
        self._sink.end_list()
        self._listed(count, "paged")

    def _fetch(self, cont: str) -> asyncio.Task[dict[str, Any]]:
        params = {"limit": str(self._page_size)}
        if cont:
            params["continue"] = cont
        return asyncio.ensure_future(
            self.api.request("GET", self.path, params=params, timeout=120, slim=True)
        )

    async def _stream(self) -> None:
        """A streaming list: ADDED events handed to the sink in pages of ``page_size`` until
        the bookmark that ends the initial state, then the rest of the stream as a watch.
        Returns when the server ends the stream (the caller watches on from the bookmark's
        resourceVersion); raises ``_StreamIncomplete`` if it ends before the list is whole.

        Changes that happen while the initial state streams may come before the bookmark
        (MODIFIED, DELETED, or ADDED for an object created meanwhile); they are newer than
        the state, so from the first of them on every event is held and delivered, in order,
        once the list is handed over."""
        params = {
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self._watch_timeout),
        }
        self._sink.begin_list()
        page: list[dict[str, Any]] = []
        changes: list[dict[str, Any]] = []
        count = 0
        listing = True
        try:
            async for event in self.api.watch(self.path, params, timeout=self._watch_timeout):
                if not listing:
                    self._deliver(event)
                    continue
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ADDED" and not changes:
                    page.append(obj)
                    if len(page) >= self._page_size:
                        count += len(page)
                        self._sink.list_page(page)
                        page = []
                    continue
                if kind != "BOOKMARK":
                    changes.append(event)
                    continue
                meta = obj.get("metadata") or {}
                if (meta.get("annotations") or {}).get(INITIAL_EVENTS_END) != "true":
                    continue
                version = str(meta.get("resourceVersion") or "")
                if not version:
                    raise _StreamIncomplete("the initial state ended without a resourceVersion")
                if page:
                    count += len(page)
                    self._sink.list_page(page)
                    page = []
                self.resource_version = version
                self._sink.end_list()
                listing = False
                self._listed(count, "streamed")
                for change in changes:
                    self._deliver(change)
                changes = []
                # The held changes are not newer than the bookmark: the watch goes on from it.
                self.resource_version = version
        except ApiError as error:
            if listing and count == 0 and not page and error.status in STREAMING_REFUSED:
                self.streaming = False
                log.info(
                    "streaming lists are not served here: paging instead",
                    informer=self.name,
                    error=str(error),
                )
                raise _Relist() from error
            raise
        if listing:
            raise _StreamIncomplete(f"the stream ended after {count + len(page)} objects")

    async def _watch(self) -> None:
        params = {
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self._watch_timeout),
        }
        async for event in self.api.watch(self.path, params, timeout=self._watch_timeout):
            self._deliver(event)

    def _deliver(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            self.resource_version = str(version)
        if kind == "BOOKMARK":
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            raise _Relist()
        self.events += 1
        self._sink.event(kind, obj)
