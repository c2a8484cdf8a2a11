"""Turns informer bodies into model summaries and hands them to the intake: one feed per kind
of the kind table (``engine/kinds.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from koordgang.engine.intake import Intake, KindHandlers
from koordgang.engine.kinds import WatchedKind
from koordgang.model.errors import ModelError

__all__ = ["Feed"]

T = TypeVar("T")


class Feed(Generic[T]):
    """Parses what an informer delivers; a LIST is collected page by page and handed over
    whole (the store replaces its view), single events one by one. An object that cannot be
    read is left out, and the intake says so."""

    def __init__(self, kind: WatchedKind[T], intake: Intake) -> None:
        self._kind = kind
        self._intake = intake
        self._handlers: KindHandlers[T] = intake.kind(kind.name)
        self._listed: list[T] = []

    def _parse(self, obj: Mapping[str, Any]) -> T | None:
        try:
            return self._kind.parse(obj)
        except ModelError as error:
            self._intake.unreadable(self._kind, obj, error)
            return None

    def begin_list(self) -> None:
        self._listed = []

    def list_page(self, items: list[dict[str, Any]]) -> None:
        parse = self._parse
        self._listed.extend(x for x in map(parse, items) if x is not None)

    def end_list(self) -> None:
        listed, self._listed = self._listed, []
        self._handlers.listed(listed)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            meta = obj.get("metadata")
            key = self._kind.key(meta if isinstance(meta, Mapping) else {})
            if key:
                self._handlers.delete(key)
            return
        parsed = self._parse(obj)
        if parsed is not None:
            self._handlers.upsert(parsed)
