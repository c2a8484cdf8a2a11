"""The daemon's API client on the real API server: new connections resume an earlier one's TLS
session (a gang's binds open many connections at once, and a full handshake each costs the API
server a signature)."""

from __future__ import annotations

import asyncio

from koordgang.clients.api import KubeApi
from koordgang.clients.config import load_connection


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
