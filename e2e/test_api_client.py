"""The daemon's API client on the real API server: new connections resume an earlier one's TLS
session (a gang's binds open many connections at once, and a full handshake each costs the API
server a signature); writes use connections of their own, kept for reuse."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid

import pytest

from koordgang.clients.api import MERGE_PATCH, KubeApi, decode_slim
from koordgang.clients.config import load_connection
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.clients.list_items import ListItems


async def test_connections_opened_together_resume_the_session_of_an_earlier_one(
    kubeconfig: str,
) -> None:
    api = KubeApi(load_connection(kubeconfig), pool_size=16)
    try:
        tls = api.tls
        assert tls is not None, "the local control plane serves HTTPS"
        # One connection first: its session ticket comes with its first reply.
        await api.request("GET", "/version")
        assert tls.offered == 0
        # Eight at once: one takes the idle connection, at least seven open new ones, each
        # offered that session, and the API server resumes it for every one.
        await asyncio.gather(*(api.request("GET", "/api/v1/namespaces/default") for _ in range(8)))
        assert tls.offered >= 7
        assert tls.resumed() == tls.offered
    finally:
        await api.close()


async def test_writes_reuse_their_connections_and_read_the_servers_errors(
    kubeconfig: str,
) -> None:
    """Writes go out on the client's own HTTP/1.1 connections: opened as needed (resuming the
    session), reused one request after another, and the API server's answers read whole,
    errors included."""
    api = KubeApi(load_connection(kubeconfig), pool_size=16)
    namespace = "default"
    try:
        tls = api.tls
        assert tls is not None
        await api.request("GET", "/version")  # a session to resume
        name = f"h1-{uuid.uuid4().hex[:8]}"
        # Four writes at once open four connections of the writes' own, resuming the session.
        await asyncio.gather(
            *(
                api.request(
                    "POST",
                    f"/api/v1/namespaces/{namespace}/configmaps",
                    body={"metadata": {"name": f"{name}-{n}"}},
                )
                for n in range(4)
            )
        )
        assert tls.offered == 4 and tls.resumed() == 4

        created = await api.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/configmaps",
            body={"metadata": {"name": name}, "data": {"k": "v" * 5000}},
        )
        # A reply larger than Go's 2 KB response buffer, so framed in chunks.
        assert created["metadata"]["name"] == name and len(created["data"]["k"]) == 5000
        for n in range(5):
            patched = await api.request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/configmaps/{name}",
                body={"data": {"n": str(n)}},
                content_type=MERGE_PATCH,
            )
            assert patched["data"]["n"] == str(n)
        assert tls.offered == 4, "each write after the first four reused a connection"

        with pytest.raises(ApiError) as refused:
            await api.request(
                "POST",
                f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
                body={"metadata": {"name": name}, "target": {"kind": "Node", "name": "x"}},
            )
        assert (refused.value.status, refused.value.reason) == (404, "NotFound")

        for n in range(4):
            await api.request("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/{name}-{n}")
        await api.request("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/{name}")
        with pytest.raises(ApiError) as gone:
            await api.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")
        assert gone.value.not_found
    finally:
        await api.close()


async def test_a_write_whose_reply_spans_many_tls_records_is_read_whole(kubeconfig: str) -> None:
    """A ConfigMap of 600 KB: its reply comes in dozens of TLS records over many reads."""
    api = KubeApi(load_connection(kubeconfig), pool_size=4)
    name = f"h1-big-{uuid.uuid4().hex[:8]}"
    value = "".join(chr(ord("a") + n % 26) for n in range(600_000))
    try:
        created = await api.request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            body={"metadata": {"name": name}, "data": {"k": value}},
        )
        assert created["data"]["k"] == value
        await api.request("DELETE", f"/api/v1/namespaces/default/configmaps/{name}")
    finally:
        await api.close()


async def test_a_write_to_a_server_not_trusted_says_why_and_sends_nothing(kubeconfig: str) -> None:
    """Without the cluster's CA (the system's roots only), the handshake fails on the
    certificate, and the write with it: nothing is created."""
    connection = load_connection(kubeconfig)
    untrusting = KubeApi(dataclasses.replace(connection, ca_path=None), pool_size=4)
    api = KubeApi(connection, pool_size=4)
    name = f"h1-untrusted-{uuid.uuid4().hex[:8]}"
    try:
        with pytest.raises(ApiUnavailable, match="CERTIFICATE_VERIFY_FAILED"):
            await untrusting.request(
                "POST", "/api/v1/namespaces/default/configmaps", body={"metadata": {"name": name}}
            )
        with pytest.raises(ApiError) as missing:
            await api.request("GET", f"/api/v1/namespaces/default/configmaps/{name}")
        assert missing.value.not_found
    finally:
        await untrusting.close()
        await api.close()


async def test_a_list_read_in_chunks_is_cut_into_the_same_items_the_whole_list_holds(
    kubeconfig: str,
) -> None:
    """The API server's own bytes of a LIST (in chunks of whatever size came; cuts across
    chunks are the unit tests' part), cut into items by ``ListItems``: the same objects, in
    the same order, as the list decoded whole, and the list's resourceVersion."""
    api = KubeApi(load_connection(kubeconfig), pool_size=4)
    label = f"cut-{uuid.uuid4().hex[:8]}"
    path = "/api/v1/namespaces/default/configmaps"
    try:
        for n in range(40):
            await api.request(
                "POST",
                path,
                body={
                    "metadata": {"name": f"{label}-{n}", "labels": {"cut": label}},
                    "data": {"k": f"{n}" * 5000, "quote": '},{"metadata":{'},
                },
            )
        params = {"labelSelector": f"cut={label}"}
        whole = await api.request("GET", path, params=params, slim=True)
        cut = ListItems()
        pieces: list[bytes] = []
        async for chunk in api.chunks(path, params, timeout=30):
            pieces.extend(cut.feed(chunk))
        pieces.extend(cut.finish())
        assert [decode_slim(piece) for piece in pieces] == whole["items"]
        assert len(pieces) == 40
        assert cut.metadata["resourceVersion"]
    finally:
        for n in range(40):
            with contextlib.suppress(ApiError):
                await api.request("DELETE", f"{path}/{label}-{n}")
        await api.close()
