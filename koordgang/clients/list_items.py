"""A LIST response cut into its items as its bytes arrive, so that each item is decoded on its
own and a 300 MB list of 100,000 pods is never held, or decoded, whole.

The API server writes a list as ``{"kind":...,"apiVersion":...,"metadata":{...},"items":[``,
the items one after another, then ``]}``; every item is an object whose first field is
``metadata``. So an item ends where ``},{"metadata":{`` begins the next one. That sequence
cannot occur inside an item: a quote inside a string is escaped, and no array of the objects
listed here (pods, nodes, namespaces, claims, budgets) holds objects that begin with a
``metadata`` field. Should one ever, the cut piece would not decode, and the caller lists
another way (``ListCutError``): nothing is lost, it is only slower.
"""

from __future__ import annotations

from typing import Any

import orjson

#: What precedes the first item, and what separates two items.
_ITEMS_START = b'"items":['
_BETWEEN = b'},{"metadata":{'
#: What follows the last item: the items array and the list object close.
_END = b"]}"


class ListCutError(Exception):
    """The bytes are not a list this module can cut into items."""


class ListItems:
    """Fed a LIST response's bytes chunk by chunk; hands back whole items' bytes."""

    def __init__(self) -> None:
        self._buffer = b""
        self._head: dict[str, Any] | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """The list's own metadata (resourceVersion, continue), once the head has come."""
        if self._head is None:
            raise ListCutError("the list's head has not come")
        meta = self._head.get("metadata")
        return meta if isinstance(meta, dict) else {}

    def feed(self, chunk: bytes) -> list[bytes]:
        """The items completed by ``chunk``, each the bytes of one JSON object."""
        buffer = self._buffer + chunk if self._buffer else chunk
        if self._head is None:
            start = buffer.find(_ITEMS_START)
            if start < 0:
                self._buffer = buffer
                return []
            begin = start + len(_ITEMS_START)
            self._head = _decode_head(buffer[:begin] + b"]}")
            buffer = buffer[begin:]
        items: list[bytes] = []
        kept = 0
        while True:
            cut = buffer.find(_BETWEEN, kept)
            if cut < 0:
                break
            items.append(buffer[kept : cut + 1])
            kept = cut + 2  # the next item begins at its "{"
        self._buffer = buffer[kept:] if kept else buffer
        return items

    def finish(self) -> list[bytes]:
        """The last item, once the response has ended; raises ``ListCutError`` if the bytes
        did not end as a list does."""
        if self._head is None:
            raise ListCutError("the response ended before its items began")
        rest = self._buffer.rstrip()
        self._buffer = b""
        if not rest.endswith(_END):
            raise ListCutError("the response ended inside an item")
        last = rest[: -len(_END)]
        return [last] if last.strip() else []


def _decode_head(head: bytes) -> dict[str, Any]:
    try:
        decoded = orjson.loads(head)
    except orjson.JSONDecodeError as error:
        raise ListCutError(f"the list's head does not decode: {error}") from None
    if not isinstance(decoded, dict):
        raise ListCutError("the list's head is not an object")
    return decoded
