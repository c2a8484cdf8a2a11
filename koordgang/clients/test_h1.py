"""The HTTP/1.1 response parser on the shapes kube-apiserver sends (Go's net/http: a body of
known length, or chunks once it outgrows its buffer), fed whole and a byte at a time; and the
pool's handling of its connections, against a local server that answers what a test says."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from koordgang.clients.h1 import (
    ConnectionLost,
    Http1Pool,
    ProtocolError,
    Reply,
    ReplyCut,
    ResponseParser,
    _Connection,
)
from koordgang.clients.tls import client_context

STATUS = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}'
LENGTH = (
    b"HTTP/1.1 201 Created\r\nAudit-Id: 1\r\nContent-Type: application/json\r\n"
    b"Content-Length: " + str(len(STATUS)).encode() + b"\r\n\r\n" + STATUS
)
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n"
)


def feed_all(data: bytes, step: int) -> Reply | None:
    parser = ResponseParser()
    reply = None
    for start in range(0, len(data), step):
        assert reply is None, "a reply before its last byte"
        reply = parser.feed(data[start : start + step])
    return reply


@pytest.mark.parametrize("step", [1, 7, 10_000])
def test_a_body_of_known_length(step: int) -> None:
    reply = feed_all(LENGTH, step)
    assert reply == Reply(201, STATUS, None, True)


@pytest.mark.parametrize("step", [1, 3, 10_000])
def test_a_chunked_body_is_joined_and_extensions_ignored(step: int) -> None:
    reply = feed_all(CHUNKED, step)
    assert reply == Reply(200, b"hello, world", None, True)


def test_trailers_after_the_last_chunk_are_skipped() -> None:
    data = CHUNKED.removesuffix(b"0\r\n\r\n") + b"0\r\nX-Trailer: 1\r\n\r\n"
    reply = feed_all(data, 2)
    assert reply == Reply(200, b"hello, world", None, True)


def test_retry_after_and_connection_close_are_read() -> None:
    data = (
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nConnection: close\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    assert ResponseParser().feed(data) == Reply(429, b"{}", "3", False)


def test_an_interim_response_is_skipped() -> None:
    reply = ResponseParser().feed(b"HTTP/1.1 100 Continue\r\n\r\n" + LENGTH)
    assert reply is not None and reply.status == 201 and reply.body == STATUS


def test_no_content_not_modified_and_head_have_no_body() -> None:
    assert ResponseParser().feed(b"HTTP/1.1 204 No Content\r\n\r\n") == Reply(204, b"")
    assert ResponseParser().feed(b"HTTP/1.1 304 Not Modified\r\n\r\n") == Reply(304, b"")
    head = ResponseParser(head_only=True).feed(LENGTH.split(b"\r\n\r\n")[0] + b"\r\n\r\n")
    assert head == Reply(201, b"")


def test_an_http_1_0_reply_closes_its_connection() -> None:
    reply = ResponseParser().feed(LENGTH.replace(b"HTTP/1.1", b"HTTP/1.0", 1))
    assert reply is not None and reply.status == 201 and not reply.reusable


def test_a_body_without_length_runs_to_the_close() -> None:
    parser = ResponseParser()
    assert parser.feed(b"HTTP/1.1 200 OK\r\n\r\npart one, ") is None
    assert parser.feed(b"part two") is None
    assert parser.closed() == Reply(200, b"part one, part two", None, False)


def test_a_close_before_the_whole_body_is_an_error() -> None:
    parser = ResponseParser()
    assert parser.feed(LENGTH[:-5]) is None
    with pytest.raises(ConnectionLost, match="length"):
        parser.closed()


def test_bytes_beyond_the_reply_make_the_connection_unusable() -> None:
    reply = ResponseParser().feed(LENGTH + b"HTTP/1.1 200 OK\r\n")
    assert reply is not None and reply.body == STATUS and not reply.reusable


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "status line"),
        (b"HTTP/1.1 abc OK\r\n\r\n", "status code"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY", "CRLF"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000, "head longer"),
    ],
)
def test_what_is_not_a_response_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        ResponseParser().feed(data)


# -- the pool ------------------------------------------------------------------------------------


class CloseAfter(bytes):
    """An answer after which the server closes the connection (without saying so)."""


Answer = Callable[[bytes], bytes | None]


Served = tuple[str, list[bytes], list[Answer], list[int]]


@contextlib.asynccontextmanager
async def serving(tls: ssl.SSLContext | None = None) -> AsyncIterator[Served]:
    """A local server: each request (head and body) is recorded and answered by the next
    function in ``answers`` (None: close without answering); ``opened`` counts connections.
    Over TLS with ``tls``, and then a close says goodbye (close_notify) first."""
    requests: list[bytes] = []
    answers: list[Answer] = []
    opened = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        opened[0] += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                request = head + await reader.readexactly(length)
                requests.append(request)
                answer = answers.pop(0)(request)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                if isinstance(answer, CloseAfter):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        writer.close()

    listener = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    port = listener.sockets[0].getsockname()[1]
    scheme = "https" if tls is not None else "http"
    yield f"{scheme}://127.0.0.1:{port}/prefix", requests, answers, opened
    listener.close()


@pytest.fixture
async def server() -> AsyncIterator[Served]:
    async with serving() as served:
        yield served


def ok(_: bytes) -> bytes:
    return LENGTH


def gate_opening(pool: Http1Pool) -> asyncio.Event:
    """Holds every connection the pool opens until the event returned is set."""
    gate = asyncio.Event()
    real_open = pool._open

    async def gated_open() -> _Connection:
        await gate.wait()
        return await real_open()

    pool._open = gated_open  # type: ignore[method-assign]  # the test's opening instead
    return gate


def count_openings(pool: Http1Pool) -> list[int]:
    """Makes each opening take a while, as a handshake does, and counts them: the list
    returned holds the openings under way now and the most there were at once."""
    opening = [0, 0]
    real_open = pool._open

    async def counted_open() -> _Connection:
        opening[0] += 1
        opening[1] = max(opening[1], opening[0])
        try:
            await asyncio.sleep(0.01)
            return await real_open()
        finally:
            opening[0] -= 1

    pool._open = counted_open  # type: ignore[method-assign]  # the test's opening instead
    return opening


async def refused_url() -> str:
    """An address where nothing listens any more."""
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    return f"http://127.0.0.1:{port}"


async def post(pool: Http1Pool, timeout: float) -> Reply:
    """A small write, as most of the daemon's are."""
    return await pool.request(
        "POST", "/x", body=b"{}", content_type=None, token=None, timeout=timeout
    )


async def test_requests_reuse_one_connection_and_carry_what_they_should(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    url, requests, answers, opened = server
    answers.extend([ok, ok, ok])
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    for _ in range(3):
        reply = await pool.request(
            "POST",
            "/api/v1/x?a=1",
            body=b"{}",
            content_type="application/json",
            token="tok",
            timeout=5,
        )
        assert reply.status == 201
    pool.close()
    assert opened[0] == 1
    head = requests[0].split(b"\r\n")
    assert head[0] == b"POST /prefix/api/v1/x?a=1 HTTP/1.1"
    assert b"Authorization: Bearer tok" in head
    assert b"Content-Type: application/json" in head
    assert requests[0].endswith(b"\r\n\r\n{}")


async def test_a_connection_the_server_closes_is_not_used_again(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    url, _, answers, opened = server
    closing = LENGTH.replace(b"Audit-Id: 1\r\n", b"Connection: close\r\n")
    answers.extend([lambda _: closing, ok])
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    for _ in range(2):
        reply = await pool.request(
            "DELETE", "/x", body=None, content_type=None, token=None, timeout=5
        )
        assert reply.status == 201
    pool.close()
    assert opened[0] == 2


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (lambda _: None, ConnectionLost),  # closed without an answer
        (lambda _: LENGTH[:20], TimeoutError),  # half a head, then silence
    ],
)
async def test_a_request_without_a_whole_answer_raises_and_its_connection_is_dropped(
    server: tuple[str, list[bytes], list[Answer], list[int]],
    answer: Answer,
    error: type[Exception],
) -> None:
    url, _, answers, opened = server
    answers.extend([answer, ok])
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    with pytest.raises(error):
        # Long enough for the connection and the request on a busy machine; only the
        # silence can take longer.
        await post(pool, 2)
    assert pool.idle == 0
    reply = await post(pool, 5)
    assert reply.status == 201 and opened[0] == 2
    pool.close()


async def test_a_reused_connection_closed_unanswered_is_tried_once_more_on_a_new_one(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    """The server closed it while idle and the close had not been seen yet: the request
    never reached it, so it goes out again; that is the only retry."""
    url, requests, answers, opened = server
    answers.extend([ok, lambda _: None, ok, ok, lambda _: None, lambda _: None])
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    for _ in range(3):
        reply = await pool.request(
            "POST", "/x", body=b"{}", content_type=None, token=None, timeout=5
        )
        assert reply.status == 201
    assert (len(requests), opened[0]) == (4, 2)
    # Reused, closed unanswered, and the new connection too: no third try.
    with pytest.raises(ConnectionLost):
        await post(pool, 5)
    assert (len(requests), opened[0]) == (6, 3)
    pool.close()


async def test_a_reply_cut_short_is_not_sent_again(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    url, requests, answers, _ = server
    answers.extend([ok, lambda _: CloseAfter(LENGTH[:-10])])
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    await post(pool, 5)
    with pytest.raises(ReplyCut):
        await post(pool, 5)
    assert len(requests) == 2  # the server had it: sending it again could do it twice
    pool.close()


async def test_a_token_with_a_line_break_is_refused_before_anything_is_sent(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    url, requests, _, opened = server
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    with pytest.raises(ValueError, match="line break"):
        await pool.request(
            "POST", "/x", body=b"{}", content_type=None, token="a\r\nX-Evil: 1", timeout=5
        )
    assert (requests, opened[0]) == ([], 0)
    pool.close()


async def test_requests_at_once_stay_within_the_limit(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    url, _, answers, opened = server
    answers.extend([ok] * 10)
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=3)
    replies = await asyncio.gather(*(post(pool, 5) for _ in range(10)))
    assert [r.status for r in replies] == [201] * 10
    assert opened[0] <= 3 and pool.idle == opened[0]
    pool.close()


async def test_idle_connections_older_than_keepalive_are_not_reused(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    url, _, answers, opened = server
    answers.extend([ok, ok])
    pool = Http1Pool(url, None, keepalive=0.05, user_agent="test", limit=2)
    await post(pool, 5)
    await asyncio.sleep(0.1)
    await post(pool, 5)
    pool.close()
    assert opened[0] == 2


async def test_the_wait_for_a_free_connection_counts_in_the_timeout(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    """A write that cannot get a connection (all busy) gives up at its own deadline: a lease
    renewal must not queue past it behind binds."""
    url, _, answers, _ = server
    answers.append(lambda _: LENGTH[:20])  # the only connection: half a head, then silence
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=1)
    busy = asyncio.create_task(post(pool, 30))
    await asyncio.sleep(0.05)
    with pytest.raises(TimeoutError):
        await pool.request("PUT", "/lease", body=b"{}", content_type=None, token=None, timeout=0.2)
    assert not busy.done()  # it gave up while the connection was still taken
    busy.cancel()
    with pytest.raises(asyncio.CancelledError):
        await busy
    pool.close()


async def test_requests_arriving_together_open_few_connections_at_once(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    """Twenty writes at once: at most ``dials`` connections are being opened at any moment,
    and the first ones opened carry requests while the others are still coming."""
    url, _, answers, opened = server
    answers.extend([ok] * 20)
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=20, dials=2)
    opening = count_openings(pool)
    replies = await asyncio.gather(*(post(pool, 5) for _ in range(20)))
    assert [r.status for r in replies] == [201] * 20
    assert opening[1] == 2
    assert opened[0] < 20  # some requests went out on connections others were done with
    assert pool.idle == opened[0]
    pool.close()


@pytest.mark.parametrize(("dials", "writes"), [(8, 1), (1, 2)])
async def test_each_failed_opening_fails_a_waiting_write_at_once(dials: int, writes: int) -> None:
    """A refused connection is handed to the write that waits; with one opening at a time
    and two writes waiting, the second is tried next: none is left to its timeout."""
    pool = Http1Pool(await refused_url(), None, keepalive=60, user_agent="t", limit=4, dials=dials)
    started = asyncio.get_running_loop().time()
    results = await asyncio.gather(*(post(pool, 30) for _ in range(writes)), return_exceptions=True)
    assert all(isinstance(r, OSError) for r in results)
    assert asyncio.get_running_loop().time() - started < 10  # not left to its timeout
    pool.close()


async def test_a_connection_opened_for_a_write_that_gave_up_is_kept_for_the_next(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    url, _, answers, opened = server
    answers.append(ok)
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    gate = gate_opening(pool)
    with pytest.raises(TimeoutError):
        await post(pool, 0.05)
    gate.set()
    for _ in range(100):
        if pool.idle:
            break
        await asyncio.sleep(0.01)
    assert pool.idle == 1
    reply = await post(pool, 5)
    assert reply.status == 201 and opened[0] == 1
    pool.close()


async def test_closing_the_pool_ends_the_writes_waiting_for_a_connection(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    url, _, _, _ = server
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    gate_opening(pool)  # never opened
    waiting = asyncio.create_task(post(pool, 30))
    await asyncio.sleep(0.02)
    pool.close()
    with pytest.raises(ConnectionLost):
        await waiting


async def test_a_connection_given_as_its_write_is_cancelled_goes_to_the_next(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    """Handed over and cancelled in the same step (a timeout, a shutdown): the connection
    is passed on, not lost with the cancelled write."""
    url, _, _, _ = server
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    gate_opening(pool)  # never opened
    waiting = asyncio.create_task(pool._connection())
    await asyncio.sleep(0.01)
    connection = _Connection()
    pool._give(connection, reused=True)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert pool.idle == 1
    pool.close()
    assert pool.idle == 0 and not connection.open
    late = _Connection()  # handed back after the close (a write that was still running)
    pool._give(late, reused=True)
    assert pool.idle == 0 and not late.open


async def test_a_closed_pool_refuses_writes_and_opens_nothing(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    url, _, answers, opened = server
    answers.append(ok)
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    gate = gate_opening(pool)
    waiting = asyncio.create_task(post(pool, 30))
    await asyncio.sleep(0.01)
    pool.close()  # while the connection is being opened
    gate.set()
    with pytest.raises(ConnectionLost):
        await waiting
    with pytest.raises(ConnectionLost):
        await post(pool, 30)  # at once, not at its timeout
    await asyncio.sleep(0.05)
    assert opened[0] == 0


async def test_warming_opens_idle_connections_a_burst_then_uses(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    """Six connections opened ahead, at most ``warm_dials`` (three) at a time whatever the
    writes' ``dials``; six writes at once then open none, and warming again with them idle
    opens nothing more."""
    url, _, answers, opened = server
    answers.extend([ok] * 6)
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=6, dials=1, warm_dials=3)
    opening = count_openings(pool)
    assert await pool.warm(6) == 6
    assert pool.idle == 6 and opened[0] == 6 and opening[1] == 3
    replies = await asyncio.gather(*(post(pool, 5) for _ in range(6)))
    assert [r.status for r in replies] == [201] * 6
    assert opened[0] == 6
    assert await pool.warm(6) == 0
    pool.close()


async def test_warming_while_a_write_waits_serves_it_and_parks_the_rest(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    """The first connection to open goes to the waiting write, whichever opened it."""
    url, _, answers, opened = server
    answers.append(ok)
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4, dials=1)
    gate = gate_opening(pool)
    write = asyncio.create_task(post(pool, 5))
    warming = asyncio.create_task(pool.warm(1))
    await asyncio.sleep(0.01)
    gate.set()
    assert (await write).status == 201
    assert await warming == 1
    assert opened[0] == 2 and pool.idle == 2  # the write's own opening and the warm one
    pool.close()


async def test_warming_an_address_that_refuses_raises_what_the_opening_met() -> None:
    pool = Http1Pool(await refused_url(), None, keepalive=60, user_agent="t", limit=8, dials=4)
    with pytest.raises(OSError):
        await pool.warm(8)
    assert pool.idle == 0
    pool.close()


async def test_a_closed_pool_warms_nothing(
    server: tuple[str, list[bytes], list[Answer], list[int]],
) -> None:
    url, _, _, opened = server
    pool = Http1Pool(url, None, keepalive=60, user_agent="test", limit=4)
    pool.close()
    assert await pool.warm(4) == 0
    assert opened[0] == 0


# -- over TLS ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (made by openssl, as the local
    control plane's service-account key is)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "server.crt", folder / "server.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
async def tls_server(certificate: tuple[Path, Path]) -> AsyncIterator[Served]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    async with serving(context) as served:
        yield served


@pytest.fixture
async def trusting_pool(
    tls_server: Served, certificate: tuple[Path, Path]
) -> AsyncIterator[Http1Pool]:
    """A pool to ``tls_server`` that trusts its certificate."""
    context = client_context(str(certificate[0]), insecure=False)
    pool = Http1Pool(tls_server[0], context, keepalive=30, user_agent="t", limit=4)
    yield pool
    pool.close()


def chunked(body: bytes, size: int) -> bytes:
    chunks = [body[i : i + size] for i in range(0, len(body), size)]
    framed = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks)
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + framed + b"0\r\n\r\n"


async def test_over_tls_a_reply_of_many_records_is_read_whole_on_a_reused_connection(
    tls_server: Served, trusting_pool: Http1Pool
) -> None:
    _, requests, answers, opened = tls_server
    body = bytes(range(256)) * 800  # 200 KB: a dozen TLS records, several reads
    answers.extend([lambda _: chunked(body, 30_000), ok, ok])
    first = await trusting_pool.request(
        "GET", "/big", body=None, content_type=None, token="t", timeout=5
    )
    assert first == Reply(200, body, None, True)
    for _ in range(2):
        again = await trusting_pool.request(
            "POST", "/small", body=b"{}", content_type="application/json", token="t", timeout=5
        )
        assert again.status == 201 and again.body == STATUS
    assert opened == [1]
    assert requests[1].startswith(b"POST /prefix/small HTTP/1.1\r\n")
    assert requests[1].endswith(b"\r\n\r\n{}")


async def test_over_tls_a_server_that_says_goodbye_after_its_reply_is_left_for_a_new_one(
    tls_server: Served, trusting_pool: Http1Pool
) -> None:
    _, _, answers, opened = tls_server
    answers.extend([lambda _: CloseAfter(LENGTH), ok])
    for _ in range(2):
        reply = await trusting_pool.request(
            "GET", "/", body=None, content_type=None, token=None, timeout=5
        )
        assert reply.status == 201 and reply.body == STATUS
        await asyncio.sleep(0.05)  # the goodbye arrives
    assert opened == [2]


async def test_over_tls_a_server_not_trusted_fails_the_request_with_why(
    tls_server: Served,
) -> None:
    url, requests, _, _ = tls_server
    pool = Http1Pool(
        url, client_context(None, insecure=False), keepalive=30, user_agent="t", limit=4
    )
    try:
        with pytest.raises(ssl.SSLCertVerificationError, match="self-signed"):
            await pool.request("GET", "/", body=None, content_type=None, token="secret", timeout=5)
        assert requests == []  # not a byte of the request (nor its token) was sent
    finally:
        pool.close()


async def test_over_tls_a_connection_closed_during_the_handshake_fails_the_request() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)  # the client's hello, read so that the close is a clean one
        writer.close()

    listener = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    pool = Http1Pool(
        f"https://127.0.0.1:{port}",
        client_context(None, insecure=True),
        keepalive=30,
        user_agent="t",
        limit=4,
    )
    try:
        with pytest.raises(ConnectionResetError):
            await pool.request("GET", "/", body=None, content_type=None, token=None, timeout=5)
    finally:
        pool.close()
        listener.close()
