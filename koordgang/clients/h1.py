"""HTTP/1.1 for the API server's small writes: Bindings, status patches, Events, leases.

One request at a time per connection (no pipelining), connections kept for reuse while idle for
less than ``keepalive`` seconds. The response parser is a small state machine fed bytes; it is
pure and tested on its own. TLS stays asyncio's transport. Reads stay on aiohttp.

Why a client of our own, and why not pipelining or a TLS layer of our own:
docs/decisions/http1-writes.md.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

#: A response head longer than this is not an API server's: refused rather than buffered.
MAX_HEAD = 64 * 1024


class ProtocolError(Exception):
    """The server's bytes are not an HTTP/1.1 response we can read."""


class ConnectionLost(Exception):
    """The connection closed before the whole response came."""


class ReplyCut(ConnectionLost):
    """The connection closed after part of the response came: the server had the request."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    retry_after: str | None = None
    #: False when the server asked to close the connection (or the body ran to the close).
    reusable: bool = True


class _Phase(enum.Enum):
    HEAD = "head"
    LENGTH = "length"  # a body of Content-Length bytes
    CHUNK_SIZE = "chunk-size"
    CHUNK_DATA = "chunk-data"
    TRAILER = "trailer"
    TO_CLOSE = "to-close"  # neither length nor chunks: the body ends with the connection
    DONE = "done"


#: Which phase may follow which (anything may end in an error).
TRANSITIONS: dict[_Phase, frozenset[_Phase]] = {
    _Phase.HEAD: frozenset(
        {_Phase.HEAD, _Phase.LENGTH, _Phase.CHUNK_SIZE, _Phase.TO_CLOSE, _Phase.DONE}
    ),
    _Phase.LENGTH: frozenset({_Phase.DONE}),
    _Phase.CHUNK_SIZE: frozenset({_Phase.CHUNK_DATA, _Phase.TRAILER}),
    _Phase.CHUNK_DATA: frozenset({_Phase.CHUNK_SIZE}),
    _Phase.TRAILER: frozenset({_Phase.DONE}),
    _Phase.TO_CLOSE: frozenset({_Phase.DONE}),
    _Phase.DONE: frozenset(),
}


class ResponseParser:
    """Bytes in, one ``Reply`` out. ``feed`` returns the reply once it is whole; ``closed``
    says the connection ended (which completes a body that runs to the close)."""

    def __init__(self, *, head_only: bool = False) -> None:
        self._buffer = bytearray()
        self._phase = _Phase.HEAD
        self._head_only = head_only
        self._status = 0
        self._retry_after: str | None = None
        self._reusable = True
        self._remaining = 0
        self._body: list[bytes] = []
        #: Whether any byte of the response came (a reused connection that closes before
        #: one did was closed by the server while idle: the request never reached it).
        self.started = False

    def _to(self, phase: _Phase) -> None:
        if phase not in TRANSITIONS[self._phase]:
            raise ProtocolError(f"response parser: {self._phase.value} -> {phase.value}")
        self._phase = phase

    def _finished(self) -> bool:
        return self._phase is _Phase.DONE

    def feed(self, data: bytes) -> Reply | None:
        if self._finished():
            raise ProtocolError("bytes after a complete response")
        self.started = True
        self._buffer += data
        while True:
            progressed = self._step()
            if self._finished():
                if self._buffer:
                    # Nothing was asked for that these bytes could answer.
                    self._reusable = False
                return self._reply()
            if not progressed:
                return None

    def closed(self) -> Reply:
        """The connection ended: the reply if its body ran to the close, else an error."""
        if self._phase is _Phase.TO_CLOSE:
            self._body.append(bytes(self._buffer))
            self._buffer.clear()
            self._reusable = False
            self._to(_Phase.DONE)
            return self._reply()
        raise ConnectionLost(f"connection closed while reading the response ({self._phase.value})")

    def _reply(self) -> Reply:
        return Reply(self._status, b"".join(self._body), self._retry_after, self._reusable)

    def _step(self) -> bool:
        buffer = self._buffer
        phase = self._phase
        if phase is _Phase.HEAD:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > MAX_HEAD:
                    raise ProtocolError(f"response head longer than {MAX_HEAD} bytes")
                return False
            head = bytes(buffer[:end])
            del buffer[: end + 4]
            self._read_head(head)
            return True
        if phase is _Phase.LENGTH:
            if len(buffer) < self._remaining:
                return False
            self._body.append(bytes(buffer[: self._remaining]))
            del buffer[: self._remaining]
            self._to(_Phase.DONE)
            return True
        if phase is _Phase.CHUNK_SIZE:
            end = buffer.find(b"\r\n")
            if end < 0:
                if len(buffer) > MAX_HEAD:
                    raise ProtocolError("chunk size line too long")
                return False
            line = bytes(buffer[:end]).split(b";", 1)[0].strip()
            del buffer[: end + 2]
            try:
                size = int(line, 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size {line[:20]!r}") from None
            if size < 0:
                raise ProtocolError(f"bad chunk size {line[:20]!r}")
            if size == 0:
                self._to(_Phase.TRAILER)
            else:
                self._remaining = size
                self._to(_Phase.CHUNK_DATA)
            return True
        if phase is _Phase.CHUNK_DATA:
            if len(buffer) < self._remaining + 2:
                return False
            if buffer[self._remaining : self._remaining + 2] != b"\r\n":
                raise ProtocolError("chunk not followed by CRLF")
            self._body.append(bytes(buffer[: self._remaining]))
            del buffer[: self._remaining + 2]
            self._to(_Phase.CHUNK_SIZE)
            return True
        if phase is _Phase.TRAILER:
            if buffer[:2] == b"\r\n":
                del buffer[:2]
                self._to(_Phase.DONE)
                return True
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return False
            del buffer[: end + 4]
            self._to(_Phase.DONE)
            return True
        return False  # TO_CLOSE waits for the close

    def _read_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:60]!r}")
        try:
            status = int(parts[1])
        except ValueError:
            raise ProtocolError(f"bad status code in {lines[0][:60]!r}") from None
        length: int | None = None
        chunked = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise ProtocolError(f"bad Content-Length {value[:20]!r}") from None
                if length < 0:
                    raise ProtocolError(f"bad Content-Length {value[:20]!r}")
            elif key == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif key == b"connection":
                if b"close" in value.lower():
                    self._reusable = False
            elif key == b"retry-after":
                self._retry_after = value.strip().decode("latin-1")
        if parts[0] == b"HTTP/1.0":
            self._reusable = False
        if 100 <= status < 200:
            self._reusable = True
            self._retry_after = None
            self._to(_Phase.HEAD)  # an interim response: the real one follows
            return
        self._status = status
        if self._head_only or status in (204, 304):
            self._to(_Phase.DONE)
        elif chunked:
            self._to(_Phase.CHUNK_SIZE)
        elif length is not None:
            self._remaining = length
            self._to(_Phase.LENGTH)
        else:
            self._to(_Phase.TO_CLOSE)


class _Connection(asyncio.Protocol):
    """One connection; the pool hands it one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.open = True
        self.idle_since = time.monotonic()
        self._parser: ResponseParser | None = None
        self._waiter: asyncio.Future[Reply] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        parser, waiter = self._parser, self._waiter
        if parser is None or waiter is None or waiter.done():
            self.close()  # bytes nobody asked for: this connection cannot be trusted
            return
        try:
            reply = parser.feed(data)
        except ProtocolError as error:
            waiter.set_exception(error)
            self.close()
            return
        if reply is not None:
            self._parser = self._waiter = None
            waiter.set_result(reply)

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost settles what is pending

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        parser, waiter = self._parser, self._waiter
        self._parser = self._waiter = None
        if parser is None or waiter is None or waiter.done():
            return
        try:
            waiter.set_result(parser.closed())
        except ConnectionLost as error:
            if exc is not None:
                error.__cause__ = exc
            waiter.set_exception(error)

    @property
    def usable(self) -> bool:
        return self.open and self.transport is not None and not self.transport.is_closing()

    def close(self) -> None:
        self.open = False
        if self.transport is not None:
            self.transport.close()

    async def exchange(self, request: bytes, parser: ResponseParser) -> Reply:
        assert self.transport is not None and self._waiter is None
        if not self.usable:
            # Closed by the server since it was picked: a write now would vanish unanswered.
            raise ConnectionLost("connection closed before the request was sent")
        waiter: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._parser, self._waiter = parser, waiter
        self.transport.write(request)
        try:
            return await waiter
        finally:
            self._parser = self._waiter = None


class Http1Pool:
    """Connections to one API server, reused for requests one after another.

    A request without an idle connection waits for whichever comes first: a connection
    another request is done with, or a new one. At most ``dials`` connections are being
    opened at once: 128 binds arriving together would otherwise start 128 TLS handshakes
    together, all finishing late (each shares the two cores with the rest), while a few
    connections opened first already carry requests and the others join as they come.
    ``warm`` opens connections ahead of the writes, ``warm_dials`` at once: it runs while
    the first listings are read, when no write waits for the first handshake to finish.
    """

    def __init__(
        self,
        server: str,
        ssl_context: ssl.SSLContext | None,
        *,
        keepalive: float,
        user_agent: str,
        limit: int,
        dials: int = 8,
        warm_dials: int = 32,
        connect_timeout: float = 10.0,
    ) -> None:
        url = urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"cannot speak HTTP/1.1 to {server!r}")
        if dials < 1 or warm_dials < 1:
            raise ValueError("dials and warm_dials must be at least 1")
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl = ssl_context if url.scheme == "https" else None
        self._prefix = url.path.rstrip("/")
        self._head = (
            f"Host: {url.netloc}\r\nUser-Agent: {user_agent}\r\nAccept: application/json\r\n"
        )
        self._keepalive = keepalive
        self._connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._closed = False
        #: Requests (so connections) at once, as the HTTP pool of the reads has its own.
        self._slots = asyncio.Semaphore(limit)
        #: Requests waiting for a connection, oldest first; each gets (connection, reused).
        self._waiting: collections.deque[asyncio.Future[tuple[_Connection, bool]]] = (
            collections.deque()
        )
        self._dials = dials
        self._warm_dials = warm_dials
        self._dialing: set[asyncio.Task[None]] = set()

    @property
    def idle(self) -> int:
        return len(self._idle)

    async def request(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None,
        content_type: str | None,
        token: str | None,
        timeout: float,
    ) -> Reply:
        """``target``: the path and query. Raises ConnectionLost, ProtocolError, OSError or
        TimeoutError when no whole reply came (the connection is then dropped), ValueError
        for a request that cannot be written. ``timeout`` covers the wait for a slot too."""
        if token and ("\r" in token or "\n" in token):
            raise ValueError("the bearer token holds a line break")
        lines = [f"{method} {self._prefix}{target} HTTP/1.1\r\n", self._head]
        if token:
            lines.append(f"Authorization: Bearer {token}\r\n")
        if body is not None:
            if content_type:
                lines.append(f"Content-Type: {content_type}\r\n")
            lines.append(f"Content-Length: {len(body)}\r\n")
        lines.append("\r\n")
        request = "".join(lines).encode("latin-1")  # UnicodeEncodeError is a ValueError
        if body:
            request += body
        async with asyncio.timeout(timeout):
            async with self._slots:
                connection, reused = await self._connection()
                try:
                    reply = await self._exchange(connection, request, method)
                except ReplyCut:
                    raise
                except ConnectionLost:
                    if not reused:
                        raise
                    # The server closed it while it sat idle (a restart, a load balancer's
                    # own idle limit): nothing of the request was read, so send it once more
                    # on a new connection, of its own and within its own timeout (not behind
                    # the writes waiting for the pool's).
                    connection = await self._open()
                    reply = await self._exchange(connection, request, method)
        if reply.reusable and connection.usable:
            self._give(connection, reused=True)  # closed at once if the pool is
        else:
            connection.close()
        return reply

    async def _exchange(self, connection: _Connection, request: bytes, method: str) -> Reply:
        """One request and its reply; a connection left mid-way is closed. A loss after part
        of the reply came is ``ReplyCut``: the server had the request."""
        parser = ResponseParser(head_only=method == "HEAD")
        try:
            return await connection.exchange(request, parser)
        except ConnectionLost as error:
            connection.close()
            if parser.started:
                raise ReplyCut(str(error)) from error
            raise
        except BaseException:
            connection.close()  # in an unknown state now (a timeout, a cancellation)
            raise

    async def _connection(self) -> tuple[_Connection, bool]:
        """An idle connection, one another request is done with, or a new one; and whether
        it carried a request before."""
        if self._closed:
            raise ConnectionLost("the connection pool was closed")
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()  # the most recently used: the least likely closed
            if connection.usable and now - connection.idle_since < self._keepalive:
                return connection, True
            connection.close()
        waiter: asyncio.Future[tuple[_Connection, bool]] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting.append(waiter)
        self._dial_more()
        try:
            return await waiter
        except BaseException:
            # Given a connection in the same moment as the timeout or cancellation came:
            # pass it on rather than lose it.
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                connection, reused = waiter.result()
                self._give(connection, reused=reused)
            raise
        finally:
            if not waiter.done() or waiter.cancelled():
                with contextlib.suppress(ValueError):
                    self._waiting.remove(waiter)

    async def warm(self, count: int) -> int:
        """Opens connections until ``count`` are idle, ``warm_dials`` at once, and parks
        them for the requests to come (or hands them to requests already waiting): a burst of
        writes then finds them open instead of waiting for TLS handshakes. Returns how many
        were opened; the first failure to open ends it and is raised."""
        wanted = count - len(self._idle)
        opened = 0
        failure: BaseException | None = None

        async def lane() -> None:
            nonlocal wanted, opened, failure
            while wanted > 0 and failure is None and not self._closed:
                wanted -= 1
                try:
                    async with asyncio.timeout(self._connect_timeout):
                        connection = await self._open()
                except Exception as error:
                    failure = failure or error
                    return
                opened += 1
                self._give(connection, reused=False)

        lanes = [
            asyncio.create_task(lane(), name="h1-warm")
            for _ in range(min(self._warm_dials, wanted))
        ]
        try:
            if lanes:
                await asyncio.gather(*lanes)
        finally:
            for task in lanes:
                task.cancel()
        if failure is not None:
            raise failure
        return opened

    def _give(self, connection: _Connection, *, reused: bool) -> None:
        """To the oldest waiting request, or to the idle list; closed if the pool is."""
        if self._closed:
            connection.close()
            return
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result((connection, reused))
                return
        connection.idle_since = time.monotonic()
        self._idle.append(connection)

    def _dial_more(self) -> None:
        """Open connections for waiting requests, never more than ``dials`` at once nor more
        than there are requests waiting."""
        while (
            not self._closed
            and len(self._dialing) < self._dials
            and len(self._dialing) < len(self._waiting)
        ):
            task = asyncio.get_running_loop().create_task(self._dial(), name="h1-dial")
            self._dialing.add(task)
            task.add_done_callback(self._dialing.discard)

    async def _dial(self) -> None:
        try:
            async with asyncio.timeout(self._connect_timeout):
                connection = await self._open()
        except Exception as error:  # handed to the write that has waited longest
            while self._waiting:
                waiter = self._waiting.popleft()
                if not waiter.done():
                    waiter.set_exception(error)
                    break
        else:
            self._give(connection, reused=False)
        # Off the count before asking for more (its done callback comes a step later).
        self._dialing.discard(asyncio.current_task())
        self._dial_more()

    async def _open(self) -> _Connection:
        _, protocol = await asyncio.get_running_loop().create_connection(
            _Connection,
            self._host,
            self._port,
            ssl=self._ssl,
            server_hostname=self._host if self._ssl is not None else None,
        )
        return protocol

    def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
        for task in list(self._dialing):
            task.cancel()
        waiting, self._waiting = self._waiting, collections.deque()
        for waiter in waiting:
            if not waiter.done():
                waiter.set_exception(ConnectionLost("the connection pool was closed"))
