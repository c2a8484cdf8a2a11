"""Retries of transient API failures, with jittered exponential backoff (tenacity)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from koordgang.clients.errors import ApiError, is_transient

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
        error_seen = error
    backoff = wait_exponential_jitter(multiplier=initial, max=maximum)

    def wait(state: RetryCallState) -> float:
        # A throttled call waits at least as long as the server asked (Retry-After).
        outcome = state.outcome
        failed = outcome is not None and outcome.failed
        asked = _asked(outcome.exception()) if outcome is not None and failed else 0.0
        return max(asked, backoff(state))

    first_wait = _asked(error_seen)
    if first_wait:
        await asyncio.sleep(first_wait)
    retrying = AsyncRetrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(attempts - 1),
        wait=wait,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity reraises the last error")


def _asked(error: BaseException | None) -> float:
    """How long the server asked a failed call to wait (0 if it said nothing)."""
    if isinstance(error, ApiError) and error.retry_after is not None:
        return error.retry_after
    return 0.0
