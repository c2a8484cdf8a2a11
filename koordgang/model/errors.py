"""The parse errors of the model layer.

Every error carries the location of the offending field as a kubectl-style path, so that the
scheduler can put one readable line on the object (``spec.containers[0].resources.requests[cpu]:
invalid quantity "abc" ...``). Parsers deep in the tree raise with a path relative to what they
were given; callers prepend their own part with :meth:`ModelError.at`.
"""

from __future__ import annotations

import json
from typing import Self

__all__ = ["ModelError", "join_path", "show"]

_SHOW_LIMIT = 80


class ModelError(ValueError):
    """A malformed field in an API object: ``path`` locates it, ``detail`` says what is wrong."""

    def __init__(self, detail: str, path: str = "") -> None:
        super().__init__(f"{path}: {detail}" if path else detail)
        self.detail = detail
        self.path = path

    def at(self, prefix: str) -> Self:
        """The same error, located under ``prefix``."""
        return type(self)(self.detail, join_path(prefix, self.path))


def join_path(prefix: str, path: str) -> str:
    if not path:
        return prefix
    if not prefix:
        return path
    if path.startswith("["):
        return prefix + path
    return f"{prefix}.{path}"


def show(value: object) -> str:
    """A value as it looked in the JSON object, shortened so a message stays one readable line."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _SHOW_LIMIT:
        text = text[: _SHOW_LIMIT - 3] + "..."
    return text
