"""The one hierarchy of exceptions for talking to the API server."""

from __future__ import annotations

from typing import Any

#: HTTP statuses worth retrying: throttled, or the server (or something before it) hiccupped.
TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


class ApiError(Exception):
    """The API server answered with an error status."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        #: Seconds the server asked us to wait before trying again (``Retry-After``, or
        #: ``details.retryAfterSeconds`` of its Status), None if it said nothing.
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        return self.status in TRANSIENT_STATUSES

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def gone(self) -> bool:
        return self.status == 410


class ApiUnavailable(Exception):
    """The API server could not be reached (connection refused, reset, timed out)."""


def is_transient(error: BaseException) -> bool:
    if isinstance(error, ApiError):
        return error.transient
    return isinstance(error, ApiUnavailable)
