"""The ceiling's client: HTTP/1.1 reduced to what a Binding needs, so that it costs less CPU per
request than any scheduler's binder and the API server, not the client, sets the pace.

Every request is a byte string made before the clock starts (request line, headers, body);
each connection sends one, reads the reply's head and its Content-Length (or chunked) body,
and sends the next: no header objects, no timers, no per-request allocations beyond the
reply's bytes. Connections are opened, TLS included, before the first request is timed and
kept for the whole run. It shares no code with koordgang's own client (``koordgang/clients``),
which it is the yardstick of.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from koordgang.clients.config import Connection

_HEAD_END = b"\r\n\r\n"
_LAST_CHUNK = b"\r\n0\r\n\r\n"
#: Seconds a Binding may take before its connection is given up (the API server answers in
#: milliseconds; a connection it closed between requests never answers).
REPLY_WITHIN = 30.0


@dataclass(frozen=True, slots=True)
class Target:
    host: str
    port: int
    tls: ssl.SSLContext | None
    authorization: str | None


def target_of(conn: Connection) -> Target:
    """Where to connect and how to authenticate, from a kubeconfig's connection."""
    url = urlsplit(conn.server)
    secure = url.scheme == "https"
    context: ssl.SSLContext | None = None
    if secure:
        context = ssl.create_default_context(cafile=conn.ca_path)
        if conn.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if conn.cert_path and conn.key_path:
            context.load_cert_chain(conn.cert_path, conn.key_path)
    token = conn.current_token()
    return Target(
        host=url.hostname or "127.0.0.1",
        port=url.port or (443 if secure else 80),
        tls=context,
        authorization=f"Bearer {token}" if token else None,
    )


def binding_request(target: Target, namespace: str, pod: str, node: str) -> bytes:
    """The whole HTTP request that binds ``pod`` to ``node``."""
    body = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        },
        separators=(",", ":"),
    ).encode()
    lines = [
        f"POST /api/v1/namespaces/{namespace}/pods/{pod}/binding HTTP/1.1",
        f"Host: {target.host}:{target.port}",
        "User-Agent: bench-ceiling",
        "Accept: application/json",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
    ]
    if target.authorization:
        lines.append(f"Authorization: {target.authorization}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def reply_length(buffer: bytes | bytearray) -> tuple[int, int] | None:
    """``(status, bytes the reply takes)`` once ``buffer`` holds a whole reply, else None.
    Raises ValueError on bytes that are not an HTTP/1.1 reply."""
    head_end = buffer.find(_HEAD_END)
    if head_end < 0:
        return None
    head = bytes(buffer[:head_end]).decode("latin-1").split("\r\n")
    parts = head[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ValueError(f"not an HTTP/1.1 reply: {head[0]!r}")
    status = int(parts[1])
    body_start = head_end + len(_HEAD_END)
    chunked = False
    for line in head[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            end = body_start + int(value.strip())
            return (status, end) if len(buffer) >= end else None
        if name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if not chunked:
        return status, body_start
    # The API server's replies to small writes are a chunk or two: find the last chunk.
    if bytes(buffer[body_start : body_start + 3]) == b"0\r\n":
        end = body_start + 5
        return (status, end) if len(buffer) >= end else None
    last = buffer.find(_LAST_CHUNK, body_start)
    return None if last < 0 else (status, last + len(_LAST_CHUNK))


class _Link(asyncio.Protocol):
    """One connection: one request in flight; its reply's status comes back on a future."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._reply: asyncio.Future[int] | None = None
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        reply = self._reply
        if reply is None or reply.done():
            return
        try:
            whole = reply_length(self._buffer)
        except ValueError as error:
            # What follows in the buffer cannot be read either: the connection is done for.
            reply.set_exception(ConnectionError(f"unreadable reply: {error}"))
            if self.transport is not None:
                self.transport.close()
            return
        if whole is not None:
            status, end = whole
            del self._buffer[:end]
            reply.set_result(status)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._reply is not None and not self._reply.done():
            self._reply.set_exception(ConnectionError("the API server closed the connection"))
        if not self.lost.done():
            self.lost.set_result(None)

    async def send(self, request: bytes) -> int:
        """The reply's status; ConnectionError when the connection is gone (closed between
        requests, or no reply within ``REPLY_WITHIN`` seconds)."""
        transport = self.transport
        if transport is None or transport.is_closing() or self.lost.done():
            raise ConnectionError("the connection is closed")
        self._reply = asyncio.get_running_loop().create_future()
        transport.write(request)
        try:
            return await asyncio.wait_for(self._reply, REPLY_WITHIN)
        except TimeoutError as error:
            transport.close()
            raise ConnectionError(f"no reply within {REPLY_WITHIN:g} s") from error


class BareBinder:
    """``connections`` kept open; ``run`` sends requests over all of them, one in flight each."""

    def __init__(self, target: Target, connections: int) -> None:
        self.target = target
        self.size = connections
        self._links: list[_Link] = []

    async def open(self) -> None:
        """Opens (and with TLS, shakes hands on) every connection before anything is timed."""
        loop = asyncio.get_running_loop()
        missing = self.size - len(self._links)
        opened = await asyncio.gather(
            *(
                loop.create_connection(
                    _Link,
                    self.target.host,
                    self.target.port,
                    ssl=self.target.tls,
                    server_hostname=self.target.host if self.target.tls else None,
                )
                for _ in range(missing)
            )
        )
        self._links += [link for _, link in opened]

    async def run(
        self, requests: Sequence[bytes], on_reply: Callable[[int], None] | None = None
    ) -> int:
        """Sends every request; returns how many were refused (status 300 or more), lost with
        their connection (that connection is not used again; an unreadable reply loses it
        too), or never sent because every connection was lost."""
        items: Iterator[bytes] = iter(requests)
        refused = 0

        async def drive(link: _Link) -> None:
            nonlocal refused
            for request in items:
                try:
                    status = await link.send(request)
                except ConnectionError:
                    refused += 1
                    return
                if status >= 300:
                    refused += 1
                if on_reply is not None:
                    on_reply(status)

        await asyncio.gather(*(drive(link) for link in self._links))
        # With every connection lost, what was never sent counts as refused too.
        return refused + sum(1 for _ in items)

    async def close(self) -> None:
        for link in self._links:
            if link.transport is not None:
                link.transport.close()
        self._links.clear()
