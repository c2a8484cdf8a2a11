"""A small asyncio client for the Kubernetes API, with orjson for JSON: reads and watches over
aiohttp, writes over the HTTP/1.1 pool of ``h1`` (cheaper per small request).

Measured on our machines, aiohttp with 32-64 requests in flight reaches the API server's own
ceiling (about 2,000 binds/s), while the official client tops out near half that on its own CPU.
"""

from __future__ import annotations

import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson

from koordgang.clients.config import Connection
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.clients.h1 import ConnectionLost, Http1Pool, ProtocolError
from koordgang.clients.tls import ResumingContext, client_context

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

#: Seconds an idle connection is kept for reuse. kube-apiserver closes HTTP/1.1 connections
#: idle for 90 s; closing ours first means a request never goes out on a connection the server
#: is closing. aiohttp's own default (15 s) let the pool go cold between bursts of jobs, and
#: each burst opened its connections again: a TLS handshake each, 128 at once took 139 ms and
#: 110 ms of this process's CPU here before the first bind could land (10 ms when open).
KEEPALIVE_SECONDS = 60.0
#: A token read from a file (in a cluster: the service account's, which kubelet rotates long
#: before it expires) is used this long before the file is read again, as client-go does; the
#: file was read for every request before, a read per bind on the hot path.
TOKEN_REREAD_SECONDS = 60.0


#: Where an object's ``metadata.managedFields`` begins, and where metadata ends and ``spec``
#: begins: the API server writes ObjectMeta's fields in their declared order, managedFields
#: last, and the object's fields in theirs, spec right after metadata. Neither pattern can
#: occur elsewhere unescaped: a quote inside a string value is escaped, and the keys inside
#: managedFields are its own few and ``f:``/``k:``/``v:``/``i:`` paths.
_MANAGED_FIELDS = b',"managedFields":['
_METADATA_END = b']},"spec":'
#: Where the next object's metadata begins (inside managedFields the key is "f:metadata").
_METADATA_START = b'"metadata":{'


def without_managed_fields(raw: bytes) -> bytes:
    """``raw`` (an object, a watch event or a list) with every object's managedFields cut out
    before it is decoded: nothing here reads them, and for a pod they are about half of the
    bytes and of the decoding time (measured: 0.067 -> 0.037 ms per pod). Bytes of another
    shape come back as they are."""
    start = raw.find(_MANAGED_FIELDS)
    if start < 0:
        return raw
    pieces: list[bytes] = []
    kept = 0
    while start >= 0:
        end = raw.find(_METADATA_END, start)
        if end < 0 or raw.find(_METADATA_START, start, end) >= 0:
            # No spec after this object's metadata: a cut would reach into the next object.
            break
        pieces.append(raw[kept:start])
        kept = end + 1  # from the "}" that closes metadata
        start = raw.find(_MANAGED_FIELDS, kept)
    pieces.append(raw[kept:])
    return b"".join(pieces)


def decode_slim(raw: bytes) -> Any:
    """JSON without managedFields; the bytes as they came if the cut ones do not decode (a
    shape the cut does not know: nothing is lost, it is only slower)."""
    slim = without_managed_fields(raw)
    if slim is not raw:
        try:
            return orjson.loads(slim)
        except orjson.JSONDecodeError:
            pass
    return orjson.loads(raw)


def _ssl_context(conn: Connection) -> ssl.SSLContext | bool:
    if not conn.server.startswith("https"):
        return False
    cert = (conn.cert_path, conn.key_path) if conn.cert_path and conn.key_path else None
    return client_context(conn.ca_path, insecure=conn.insecure, cert=cert)


class KubeApi:
    def __init__(
        self, conn: Connection, *, pool_size: int = 100, user_agent: str = "koordgang"
    ) -> None:
        self.conn = conn
        self._ssl = _ssl_context(conn)
        self._pool_size = pool_size
        self._user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None
        self._token: tuple[str | None, float] | None = None  # (token, when read)
        #: Writes go out on connections of their own (``h1``); reads through aiohttp.
        self._writes = Http1Pool(
            conn.server,
            self._ssl if isinstance(self._ssl, ssl.SSLContext) else None,
            keepalive=KEEPALIVE_SECONDS,
            user_agent=user_agent,
            limit=pool_size,
        )

    async def warm_writes(self, count: int) -> int:
        """Opens up to ``count`` connections for writes ahead of them (see ``Http1Pool.warm``)."""
        return await self._writes.warm(count)

    @property
    def tls(self) -> ResumingContext | None:
        """The TLS context of this client's connections (None over plain HTTP)."""
        return self._ssl if isinstance(self._ssl, ResumingContext) else None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._pool_size, ssl=self._ssl, keepalive_timeout=KEEPALIVE_SECONDS
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers={"User-Agent": self._user_agent},
                # A watch event is one line holding a whole object, which may approach the
                # API server's 1.5 MB limit: a large buffer reads such lines in few steps.
                read_bufsize=4 * 2**20,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            )
        return self._session

    def current_token(self) -> str | None:
        if not self.conn.token_path:
            return self.conn.token
        now = time.monotonic()
        if self._token is None or now - self._token[1] >= TOKEN_REREAD_SECONDS:
            self._token = (self.conn.current_token(), now)
        return self._token[0]

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": JSON}
        token = self.current_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float = 30.0,
        slim: bool = False,
    ) -> Any:
        """One call; returns the decoded JSON reply or raises ApiError / ApiUnavailable.
        ``slim``: the reply's objects without their managedFields (``decode_slim``)."""
        data = None if body is None else orjson.dumps(body)
        if method != "GET":
            return await self._write(method, path, params, data, content_type, timeout)
        try:
            async with self.session.request(
                method,
                self.conn.server + path,
                params=params,
                data=data,
                headers=self._headers(content_type if data is not None else None),
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as response:
                raw = await response.read()
                if response.status >= 400:
                    raise _api_error(response.status, raw, response.headers.get("Retry-After"))
                if not raw:
                    return None
                return decode_slim(raw) if slim else orjson.loads(raw)
        except (aiohttp.ClientConnectionError, TimeoutError) as error:
            raise ApiUnavailable(f"{method} {path}: {error!r}") from error

    async def _write(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        data: bytes | None,
        content_type: str,
        timeout: float,
    ) -> Any:
        target = f"{path}?{urlencode(params)}" if params else path
        try:
            reply = await self._writes.request(
                method,
                target,
                body=data,
                content_type=content_type if data is not None else None,
                token=self.current_token(),
                timeout=timeout,
            )
        except (ConnectionLost, ProtocolError, OSError, TimeoutError, ValueError) as error:
            raise ApiUnavailable(f"{method} {path}: {error!r}") from error
        if reply.status >= 400:
            raise _api_error(reply.status, reply.body, reply.retry_after)
        return orjson.loads(reply.body) if reply.body else None

    async def watch(
        self, path: str, params: Mapping[str, str], *, timeout: float
    ) -> AsyncIterator[dict[str, Any]]:
        """Yields watch events (``{"type": ..., "object": ...}``) until the server ends the
        stream, their objects without managedFields. An ERROR event with a Status is raised
        as ApiError."""
        query = dict(params)
        query["watch"] = "true"
        stream = self._streamed("WATCH", path, query, total=timeout + 30, read=timeout + 30)
        async with stream as content:
            async for line in _lines(content):
                event = decode_slim(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise ApiError(
                        int(status.get("code") or 500),
                        str(status.get("reason") or "Error"),
                        str(status.get("message") or ""),
                        status,
                    )
                yield event

    async def chunks(
        self, path: str, params: Mapping[str, str], *, timeout: float
    ) -> AsyncIterator[bytes]:
        """A GET's reply body as it arrives, chunk by chunk (``list_items`` cuts a LIST into
        its items): for replies too large to hold, or decode, whole. ``timeout``: the longest
        wait for the next bytes. Large replies come gzipped: uncompressed, a LIST of 100,000
        pods from the cache cost the API server 9-10 s of CPU instead of 14-15, but this
        process 17 s instead of 13 to read (22 times the bytes through TLS, in smaller
        pieces), and the first bind came later."""
        async with self._streamed("GET", path, params, total=None, read=timeout) as content:
            async for chunk in content.iter_any():
                yield chunk

    @contextlib.asynccontextmanager
    async def _streamed(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        *,
        total: float | None,
        read: float,
    ) -> AsyncIterator[aiohttp.StreamReader]:
        """A GET whose body is read as it comes: an error status is raised as ApiError, and
        a connection lost or timed out, then or while the body is read, as ApiUnavailable
        naming ``method``."""
        try:
            async with self.session.get(
                self.conn.server + path,
                params=params,
                headers=self._headers(),
                timeout=aiohttp.ClientTimeout(total=total, sock_read=read),
            ) as response:
                if response.status >= 400:
                    raise _api_error(
                        response.status,
                        await response.read(),
                        response.headers.get("Retry-After"),
                    )
                yield response.content
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError) as error:
            raise ApiUnavailable(f"{method} {path}: {error!r}") from error

    async def close(self) -> None:
        self._writes.close()
        if self._session is not None and not self._session.closed:
            await self._session.close()


async def _lines(content: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """The non-empty lines of a stream, split a chunk at a time: a streaming list of 100,000
    pods is 100,000 lines, and reading them one by one cost more than decoding them."""
    parts: list[bytes] = []
    async for chunk in content.iter_any():
        if b"\n" not in chunk:
            parts.append(chunk)  # a line longer than a chunk
            continue
        lines = chunk.split(b"\n")
        if parts:
            lines[0] = b"".join([*parts, lines[0]])
            parts = []
        tail = lines.pop()
        if tail:
            parts.append(tail)
        for line in lines:
            if line.strip():
                yield line
    if parts:
        line = b"".join(parts)
        if line.strip():
            yield line


def _api_error(status: int, raw: bytes, retry_after: str | None = None) -> ApiError:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        body = None
    wait = _seconds(retry_after)
    if isinstance(body, dict):
        if wait is None:
            details = body.get("details")
            wait = _seconds(details.get("retryAfterSeconds") if isinstance(details, dict) else None)
        return ApiError(
            status, str(body.get("reason") or ""), str(body.get("message") or ""), body, wait
        )
    return ApiError(status, "", raw[:500].decode("utf-8", "replace"), None, wait)


#: A server that asks for a longer pause than this is waited for this long (then retried or
#: given up by the caller's own limits).
MAX_RETRY_AFTER = 30.0


def _seconds(value: Any) -> float | None:
    """Retry-After in seconds (an HTTP date is not used by kube-apiserver), bounded."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    if seconds != seconds or seconds < 0:  # NaN, negative
        return None
    return min(seconds, MAX_RETRY_AFTER)
