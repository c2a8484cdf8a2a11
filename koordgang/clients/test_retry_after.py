"""A throttled call waits as long as the API server asks (Retry-After), then tries again."""

from __future__ import annotations

import asyncio
import itertools
import time

from koordgang.clients.api import _api_error
from koordgang.clients.errors import ApiError
from koordgang.clients.retry import with_retries


def test_the_wait_the_server_asks_for_is_read_from_the_header_or_the_status() -> None:
    assert _api_error(429, b'{"reason": "TooManyRequests"}', "2").retry_after == 2.0
    status = b'{"reason": "TooManyRequests", "details": {"retryAfterSeconds": 1}}'
    assert _api_error(429, status).retry_after == 1.0
    assert _api_error(500, b"oops").retry_after is None
    assert _api_error(429, b"", "soon").retry_after is None  # not a number: no wait asked
    assert _api_error(429, b"", "3600").retry_after == 30.0  # bounded


def test_a_throttled_call_is_not_tried_again_before_retry_after() -> None:
    calls: list[float] = []

    async def call() -> str:
        calls.append(time.monotonic())
        if len(calls) < 3:
            raise ApiError(429, "TooManyRequests", "slow down", retry_after=0.3)
        return "ok"

    assert asyncio.run(with_retries(call, attempts=5, initial=0.01, maximum=0.02)) == "ok"
    gaps = [later - earlier for earlier, later in itertools.pairwise(calls)]
    assert len(gaps) == 2 and all(gap >= 0.29 for gap in gaps), gaps
