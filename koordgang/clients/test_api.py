"""Objects decoded without their managedFields, and nothing else lost."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from koordgang.clients import api as api_module
from koordgang.clients.api import KubeApi, _lines, decode_slim, without_managed_fields
from koordgang.clients.config import Connection

MANAGED = [
    {
        "manager": "kubelet",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-26T04:57:35Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:image": {}}}},
            "f:status": {"f:conditions": {'k:{"type":"Ready"}': {".": {}}}},
        },
        "subresource": "status",
    }
]


def _pod(name: str, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"uid-{name}",
            "labels": {"app": "x"},
            "annotations": {"note": 'a value with "managedFields":[ and ]},"spec": in it'},
            **metadata,
            "managedFields": copy.deepcopy(MANAGED),
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "main"}]},
        "status": {"phase": "Running"},
    }


def _slim(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"].pop("managedFields", None)
    return obj


def test_a_watch_event_loses_only_its_managed_fields() -> None:
    event = {"type": "MODIFIED", "object": _pod("a")}
    raw = orjson.dumps(event)
    assert len(without_managed_fields(raw)) < len(raw) * 0.8
    assert decode_slim(raw) == {"type": "MODIFIED", "object": _slim(_pod("a"))}


def test_every_object_of_a_list_loses_its_managed_fields() -> None:
    pods = [_pod(f"p{i}") for i in range(3)]
    page = {"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": pods}
    assert decode_slim(orjson.dumps(page)) == {**page, "items": [_slim(p) for p in pods]}


def test_bytes_of_another_shape_decode_as_they_are() -> None:
    # managedFields not followed by spec (an Event, a Lease): cut nothing, lose nothing.
    lease = {"metadata": {"name": "l", "managedFields": MANAGED}, "data": {"spec": 1}}
    raw = orjson.dumps(lease)
    assert without_managed_fields(raw) == raw
    assert decode_slim(raw) == lease
    bookmark = orjson.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}})
    assert without_managed_fields(bookmark) is bookmark


def test_a_cut_never_reaches_into_the_next_object() -> None:
    # The first object's managedFields are not followed by spec, the second's are: cutting
    # to the second's spec would merge the two. Nothing is cut from there on.
    odd = {"items": [{"metadata": {"name": "l", "managedFields": MANAGED}}, _pod("a")]}
    assert decode_slim(orjson.dumps(odd)) == odd


class _Chunks:
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


async def test_a_stream_is_split_into_its_lines_however_it_is_chunked() -> None:
    events = [orjson.dumps({"type": "ADDED", "object": _pod(f"p{i}")}) for i in range(5)]
    body = b"\n".join(events) + b"\n\n"
    for size in (1, 7, 100, len(body)):
        chunks = [body[i : i + size] for i in range(0, len(body), size)]
        # _Chunks stands for the response's content (arg-type).
        lines = [line async for line in _lines(_Chunks(chunks))]  # type: ignore[arg-type]
        assert lines == events, size
    # A last line without its newline still counts.
    tail = [line async for line in _lines(_Chunks([events[0], b"\n", events[1]]))]  # type: ignore[arg-type]
    assert tail == events[:2]


async def test_a_token_file_is_read_again_only_after_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rotated service-account token is picked up within TOKEN_REREAD_SECONDS; in between
    requests do not read the file."""
    token = tmp_path / "token"
    token.write_text("first\n")
    now = [1000.0]
    monkeypatch.setattr(api_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    api = KubeApi(Connection(server="https://127.0.0.1:6443", token_path=str(token)))
    assert api.current_token() == "first"
    token.write_text("second\n")
    now[0] += api_module.TOKEN_REREAD_SECONDS - 1
    assert api.current_token() == "first"
    now[0] += 1
    assert api.current_token() == "second"
    await api.close()
