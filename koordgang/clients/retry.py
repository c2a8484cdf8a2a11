"""Retries of transient API failures, with jittered exponential backoff (tenacity)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from koordgang.clients.errors import is_transient

T = TypeVar("T")


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    attempts: int = 5,
    initial: float = 0.1,
    maximum: float = 2.0,
) -> T:
    """Runs ``call`` until it succeeds, fails for good, or ``attempts`` are used up."""
    # Almost every call succeeds at once: only a call that failed transiently pays for
    # setting up the retry machinery (measurable at thousands of binds per second).
    try:
        return await call()
    except Exception as error:
        if not is_transient(error) or attempts <= 1:
            raise
    retrying = AsyncRetrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(attempts - 1),
        wait=wait_exponential_jitter(initial=initial, max=maximum),
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity reraises the last error")
