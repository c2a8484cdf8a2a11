"""The errors of CEL device selectors: one line each, fit for a pod's condition."""

from __future__ import annotations

__all__ = ["CelCompileError", "CelError", "CelRuntimeError", "FunctionFailed", "one_line"]

# A message goes on a pod's condition and into Events: long enough to name the problem, short
# enough not to drown the rest of the condition.
_MESSAGE_LIMIT = 300


class CelError(Exception):
    """A CEL selector that cannot be compiled or evaluated; ``str()`` is one readable line."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class CelCompileError(CelError):
    """The expression does not compile, or uses something koordgang cannot evaluate yet."""


class CelRuntimeError(CelError):
    """Evaluating the expression failed for one device (missing key, type error, limit...)."""


class FunctionFailed(Exception):
    """A Kubernetes library function failed for its arguments; the message is the CEL error.
    The CEL library turns it into an error value, which propagates like any CEL error
    (``error || true`` is still true)."""


def one_line(message: str) -> str:
    """``message`` with its whitespace runs folded to single spaces and its length capped."""
    text = " ".join(message.split())
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT - 3] + "..."
    return text
