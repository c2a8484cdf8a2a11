"""A fault-injecting reverse proxy between the daemon and the API server, for e2e tests.

It listens on plain HTTP at 127.0.0.1 (the daemon's kubeconfig points at it, with the
scheduler's token; see `write_proxied_kubeconfig`) and forwards every request over HTTPS to
the real API server, trusting the cluster's CA. Watches (``watch=true``/``watch=1``) are
streamed line by line (one line is one event). It runs its own asyncio loop in a daemon
thread of the test process.

Faults are switched on at run time with `FaultProxy.add`: a `Rule` matches requests (method,
path regex, watch or not) and applies one fault to a seeded-random fraction of them, up to a
number of times: ``latency`` (sleep, then forward), ``status`` (answer 429 with Retry-After,
500 or 503 without forwarding), ``reset`` (RST the connection without forwarding),
``reset_after`` (forward, then RST instead of answering: the request took effect, the client
does not know), ``cut_watch`` (forward a watch, then RST it after ``after_events`` events),
``expire_watch`` (as an API server whose watch cache no longer holds the watch's
resourceVersion: after ``after_events`` events, or at once with 0, an ERROR event with a
``410 Gone``/``Expired`` Status ends the stream cleanly; the client must list again) or
``hold`` (keep the request, unanswered and not forwarded, until the test lets it go with
`FaultProxy.release` or refuses it for good with `FaultProxy.drop`: a test can stop a client
exactly between two of its writes). A rule may also match the request's body (``body``, a
regex), to tell apart writes to one path: a DisruptionTarget condition from a nomination.
Every request is recorded with what was done to it (`Record`), writes with their body.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import random
import re
import socket
import ssl
import struct
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs

import aiohttp
import yaml
from aiohttp import web

Fault = Literal["latency", "status", "reset", "reset_after", "cut_watch", "expire_watch", "hold"]

#: How much of a write's body a record keeps (enough for a pod status patch).
BODY_KEPT = 4096

#: The event an API server sends when a watch asks for a resourceVersion it no longer has.
EXPIRED_EVENT = (
    b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},'
    b'"status":"Failure","message":"fault proxy: too old resource version",'
    b'"reason":"Expired","code":410}}\n'
)

#: Headers not passed on (hop-by-hop, or recomputed by aiohttp).
_HOP = {
    "host",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "accept-encoding",
    "upgrade",
    "te",
    "trailer",
    "proxy-connection",
}


@dataclass
class Rule:
    fault: Fault
    method: str | None = None
    #: ``re.search``-ed against the path (no query).
    path: str = ""
    #: ``re.search``-ed against the request's body, decoded ("" matches any body).
    body: str = ""
    #: Watches only (True), non-watches only (False), or both (None).
    watch: bool | None = None
    #: Share of matching requests hit, drawn from the proxy's seeded RNG.
    fraction: float = 1.0
    #: Hit at most this many requests (None: no limit).
    times: int | None = None
    latency: float = 0.0
    status: int = 503
    retry_after: int | None = None
    after_events: int = 1
    hits: int = 0
    #: cut_watch: events seen per open stream since the rule was added.
    seen: dict[int, int] = field(default_factory=dict)
    #: hold: what becomes of the requests held ("": still held; "release": forwarded;
    #: "drop": connection reset, never forwarded). Set by `FaultProxy.release`/`drop`, which
    #: also stop the rule from holding more.
    verdict: Literal["", "release", "drop"] = ""

    def matches(self, method: str, path: str, watch: bool, body: str = "") -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.fault == "hold" and self.verdict:
            return False
        if self.method is not None and self.method != method:
            return False
        if self.watch is not None and self.watch != watch:
            return False
        if self.body and re.search(self.body, body) is None:
            return False
        return re.search(self.path, path) is not None

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times


@dataclass
class Record:
    at: float
    method: str
    path: str
    watch: bool
    #: The status the client got (None: its connection was reset).
    status: int | None = None
    #: The status the API server answered (None: not forwarded, or no answer).
    upstream: int | None = None
    #: What was done: "" (forwarded as is) or the fault's name.
    fault: str = ""
    events: int = 0
    user_agent: str = ""
    #: The request's body, decoded, up to BODY_KEPT characters ("" for reads).
    body: str = ""
    query: str = ""

    @property
    def lists(self) -> bool:
        """A LIST, paged or streamed (a watch that asks for the initial state first)."""
        if self.method != "GET":
            return False
        return not self.watch or "sendInitialEvents=true" in self.query


def _is_watch(query: str) -> bool:
    values = parse_qs(query).get("watch", [])
    return any(v in ("true", "1", "True") for v in values)


def _reset(request: web.Request) -> None:
    """Closes the client's connection with a TCP RST."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


class FaultProxy:
    def __init__(self, upstream: str, ca_path: str | None, *, seed: int = 7) -> None:
        self.upstream = upstream.rstrip("/")
        self.ca_path = ca_path
        self.rng = random.Random(seed)
        self.rules: list[Rule] = []
        self.records: list[Record] = []
        self.lock = threading.Lock()
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="faultproxy", daemon=True)
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._session: aiohttp.ClientSession | None = None

    # -- control, from the test's thread ------------------------------------------------------

    def start(self) -> FaultProxy:
        self._thread.start()
        if not self._ready.wait(30):
            raise AssertionError("the fault proxy did not start")
        return self

    def stop(self) -> None:
        if self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(15)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, rule: Rule) -> Rule:
        with self.lock:
            self.rules.append(rule)
        return rule

    def remove(self, rule: Rule) -> None:
        with self.lock:
            if rule in self.rules:
                self.rules.remove(rule)

    def clear(self) -> None:
        """Removes every rule; requests still held are forwarded (as `release`)."""
        with self.lock:
            for rule in self.rules:
                if rule.fault == "hold" and not rule.verdict:
                    rule.verdict = "release"
            self.rules.clear()

    def release(self, rule: Rule) -> None:
        """A hold rule forwards what it holds and holds nothing more."""
        with self.lock:
            rule.verdict = "release"

    def drop(self, rule: Rule) -> None:
        """A hold rule resets what it holds without forwarding it (as if the client had died
        before sending it) and holds nothing more."""
        with self.lock:
            rule.verdict = "drop"

    def recorded(self, keep: Callable[[Record], bool] = lambda r: True) -> list[Record]:
        with self.lock:
            return [r for r in self.records if keep(r)]

    def faults(self, fault: str) -> list[Record]:
        return self.recorded(lambda r: r.fault == fault)

    # -- the server, in its own thread --------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())
        # Handlers still streaming (watches of a daemon gone) end with the loop.
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        context = ssl.create_default_context(cafile=self.ca_path)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=context, limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            auto_decompress=True,
            read_bufsize=4 * 2**20,
        )
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        self._ready.set()
        await self._stopping.wait()
        await runner.cleanup()
        await self._session.close()

    def _pick(self, method: str, path: str, watch: bool, body: str) -> Rule | None:
        with self.lock:
            for rule in self.rules:
                if rule.fault == "cut_watch" or (
                    rule.fault == "expire_watch" and rule.after_events > 0
                ):
                    continue  # applied per event, in _stream
                if rule.matches(method, path, watch, body) and self.rng.random() < rule.fraction:
                    rule.hits += 1
                    return rule
        return None

    def _record(self, record: Record) -> None:
        with self.lock:
            self.records.append(record)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        watch = _is_watch(request.query_string)
        record = Record(
            at=time.monotonic(),
            method=request.method,
            path=request.path,
            watch=watch,
            user_agent=request.headers.get("User-Agent", ""),
            query=request.query_string,
        )
        # Read first: a rule may match the body. Reads have none worth keeping.
        body = await request.read()
        if request.method != "GET":
            record.body = body[:BODY_KEPT].decode(errors="replace")
        self._record(record)
        rule = self._pick(request.method, request.path, watch, record.body)
        if rule is not None:
            record.fault = rule.fault
            if rule.fault == "hold":
                # The verdict comes from the test's thread: polling it needs no hand-over
                # into this loop, and 20 ms is nothing next to what a test waits for.
                while not rule.verdict:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
                if rule.verdict == "drop":
                    _reset(request)
                    return web.Response(status=499)
            elif rule.fault == "latency":
                await asyncio.sleep(rule.latency)
            elif rule.fault == "status":
                return self._status(record, rule)
            elif rule.fault == "reset":
                _reset(request)
                return web.Response(status=499)
            elif rule.fault == "expire_watch" and watch and rule.after_events <= 0:
                return await self._expired(request, record)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        assert self._session is not None
        try:
            upstream = await self._session.request(
                request.method,
                self.upstream + request.path_qs,
                headers=headers,
                data=body or None,
                allow_redirects=False,
            )
        except (aiohttp.ClientError, TimeoutError) as error:
            record.status = 502
            return web.Response(status=502, text=f"fault proxy: upstream failed: {error!r}")
        async with upstream:
            record.upstream = upstream.status
            if rule is not None and rule.fault == "reset_after":
                await upstream.read()
                _reset(request)
                return web.Response(status=499)
            reply_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP}
            if not watch or upstream.status >= 400:
                payload = await upstream.read()
                record.status = upstream.status
                return web.Response(status=upstream.status, body=payload, headers=reply_headers)
            return await self._stream(request, upstream, reply_headers, record, rule)

    def _status(self, record: Record, rule: Rule) -> web.Response:
        record.status = rule.status
        headers = {"Content-Type": "application/json"}
        if rule.retry_after is not None:
            headers["Retry-After"] = str(rule.retry_after)
        reason = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}
        body = (
            '{"kind":"Status","apiVersion":"v1","status":"Failure",'
            f'"message":"fault proxy: injected {rule.status}",'
            f'"reason":"{reason.get(rule.status, "InternalError")}","code":{rule.status}}}'
        )
        return web.Response(status=rule.status, text=body, headers=headers)

    def _cut(self, record: Record) -> str:
        """Which fault (cut_watch or expire_watch) ends this open watch now, "" if none
        (counting events from when the rule was added, so a watch opened before the rule is
        ended too)."""
        with self.lock:
            for rule in self.rules:
                if rule.fault not in ("cut_watch", "expire_watch") or not rule.matches(
                    record.method, record.path, record.watch
                ):
                    continue
                if rule.fault == "expire_watch" and rule.after_events <= 0:
                    continue  # answered when the watch opens
                seen = rule.seen.get(id(record), 0) + 1
                rule.seen[id(record)] = seen
                if seen >= rule.after_events:
                    rule.hits += 1
                    record.fault = rule.fault
                    return rule.fault
        return ""

    async def _expired(self, request: web.Request, record: Record) -> web.StreamResponse:
        """A watch answered, without asking upstream, with the 410 an API server sends for a
        resourceVersion it no longer has."""
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        record.status = 200
        await response.write(EXPIRED_EVENT)
        await response.write_eof()
        return response

    async def _stream(
        self,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        headers: dict[str, str],
        record: Record,
        rule: Rule | None,
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=upstream.status, headers=headers)
        response.enable_chunked_encoding()
        await response.prepare(request)
        record.status = upstream.status
        try:
            async for line in upstream.content:
                await response.write(line)
                record.events += 1
                fault = self._cut(record)
                if fault == "cut_watch":
                    _reset(request)
                    return response
                if fault == "expire_watch":
                    await response.write(EXPIRED_EVENT)
                    await response.write_eof()
                    return response
        except (aiohttp.ClientError, ConnectionError):
            _reset(request)
            return response
        await response.write_eof()
        return response


def upstream_of(kubeconfig: str | Path) -> tuple[str, str | None]:
    """The server and a CA file of a kubeconfig's current context (a CA given inline is
    written to a temporary file)."""
    doc: dict[str, Any] = yaml.safe_load(Path(kubeconfig).read_text())
    contexts = {c["name"]: c["context"] for c in doc["contexts"]}
    clusters = {c["name"]: c["cluster"] for c in doc["clusters"]}
    server = clusters[contexts[doc["current-context"]]["cluster"]]
    ca = server.get("certificate-authority")
    if ca and not Path(ca).is_absolute():
        ca = str(Path(kubeconfig).parent / ca)
    data = server.get("certificate-authority-data")
    if not ca and data:
        handle = tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False)  # noqa: SIM115
        handle.write(base64.b64decode(data))
        handle.close()
        ca = handle.name
    return str(server["server"]), ca


def write_proxied_kubeconfig(kubeconfig: str | Path, proxy_url: str, path: Path) -> Path:
    """A copy of ``kubeconfig`` (the scheduler's token) whose server is the proxy."""
    doc: dict[str, Any] = yaml.safe_load(Path(kubeconfig).read_text())
    for entry in doc["clusters"]:
        cluster = entry["cluster"]
        cluster["server"] = proxy_url
        cluster.pop("certificate-authority", None)
        cluster.pop("certificate-authority-data", None)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path
