"""The ceiling's bare client and its sweep, against a local HTTP server (no cluster)."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from bench.bare_binder import BareBinder, Target, binding_request, reply_length
from bench.ceiling import saturated


def test_a_reply_is_whole_once_its_length_or_last_chunk_has_come() -> None:
    head = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\n"
    assert reply_length(head + b"{}") is None
    assert reply_length(head + b"{ }") is None
    assert reply_length(head + b"{  }NEXT") == (201, len(head) + 4)
    chunked = b"HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert reply_length(chunked + b"2\r\n{}") is None
    whole = chunked + b"2\r\n{}\r\n0\r\n\r\n"
    assert reply_length(whole + b"HTTP") == (409, len(whole))
    with pytest.raises(ValueError, match=r"not an HTTP/1\.1 reply"):
        reply_length(b"SSH-2.0\r\n\r\n")


def test_the_sweep_has_saturated_once_more_in_flight_binds_no_faster() -> None:
    assert not saturated([])
    assert not saturated([900.0])
    assert not saturated([900.0, 1000.0])  # the last level 11% faster: maybe more to come
    assert saturated([900.0, 1000.0, 1020.0])  # 2% faster
    assert saturated([900.0, 1100.0, 1000.0])  # the best is not the last


async def test_every_request_goes_out_once_and_refusals_are_counted() -> None:
    seen: list[str] = []
    in_flight = 0
    most_in_flight = 0

    async def bind(request: web.Request) -> web.Response:
        nonlocal in_flight, most_in_flight
        in_flight += 1
        most_in_flight = max(most_in_flight, in_flight)
        body = await request.json()
        seen.append(body["metadata"]["name"])
        await asyncio.sleep(0.01)
        in_flight -= 1
        if body["metadata"]["name"].endswith("7"):
            return web.json_response({"reason": "Conflict"}, status=409)
        return web.json_response({"status": "Success"}, status=201)

    app = web.Application()
    app.router.add_post("/api/v1/namespaces/{ns}/pods/{pod}/binding", bind)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        target = Target("127.0.0.1", port, None, "Bearer t")
        requests = [binding_request(target, "ns", f"p-{i}", "n-1") for i in range(40)]
        binder = BareBinder(target, 4)
        await binder.open()
        statuses: list[int] = []
        refused = await binder.run(requests, statuses.append)
        await binder.close()
    finally:
        await runner.cleanup()
    assert sorted(seen) == sorted(f"p-{i}" for i in range(40))
    assert refused == 4  # p-7, p-17, p-27, p-37
    assert statuses.count(201) == 36
    assert most_in_flight == 4


async def test_unreadable_replies_and_requests_never_sent_count_as_refused() -> None:
    # A server that answers every request with something that is not HTTP: each connection
    # is given up at its first reply, and the requests left over once all are gone are
    # refused too, rather than the run failing or counting them as bound.
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            writer.write(b"SPAM 200 nonsense\r\n\r\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(garbage, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        target = Target("127.0.0.1", port, None, "Bearer t")
        requests = [binding_request(target, "ns", f"p-{i}", "n-1") for i in range(10)]
        binder = BareBinder(target, 2)
        await binder.open()
        refused = await binder.run(requests)
        await binder.close()
    finally:
        server.close()
        await server.wait_closed()
    assert refused == 10
