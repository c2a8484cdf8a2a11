"""A LIST's bytes cut into items however they arrive in chunks."""

from __future__ import annotations

import orjson
import pytest

from koordgang.clients.list_items import ListCutError, ListItems


def _pod(n: int) -> dict[str, object]:
    # Nested objects, arrays of objects, and strings holding what separates items, escaped.
    return {
        "metadata": {
            "name": f"p{n}",
            "annotations": {"note": '},{"metadata":{ in a string'},
            "managedFields": [{"manager": "m", "fieldsV1": {"f:metadata": {}}}],
        },
        "spec": {"containers": [{"name": "c", "ports": [{"containerPort": n}]}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def _list(count: int) -> tuple[bytes, list[dict[str, object]]]:
    items = [_pod(n) for n in range(count)]
    body = orjson.dumps(
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "42"},
            "items": items,
        }
    )
    return body, items


def _cut(body: bytes, size: int) -> list[object]:
    cut = ListItems()
    pieces: list[bytes] = []
    for start in range(0, len(body), size):
        pieces.extend(cut.feed(body[start : start + size]))
    pieces.extend(cut.finish())
    assert cut.metadata == {"resourceVersion": "42"}
    return [orjson.loads(piece) for piece in pieces]


@pytest.mark.parametrize("count", [0, 1, 3])
@pytest.mark.parametrize("size", [1, 2, 7, 64, 10_000])
def test_every_item_comes_whole_and_in_order_whatever_the_chunks(count: int, size: int) -> None:
    body, items = _list(count)
    assert _cut(body, size) == items


def test_items_come_as_soon_as_the_next_one_begins() -> None:
    body, items = _list(3)
    second = body.index(b'{"metadata":{"name":"p1"')
    cut = ListItems()
    assert cut.feed(body[: second + len(b'{"metadata":{')]) == [orjson.dumps(items[0])]


@pytest.mark.parametrize(
    "body",
    [
        b'{"kind":"PodList","metadata":{}',  # ended before its items
        b'{"kind":"PodList","metadata":{},"items":[{"metadata":{"name":"p0"}',  # inside one
    ],
)
def test_a_response_that_does_not_end_as_a_list_is_refused(body: bytes) -> None:
    cut = ListItems()
    cut.feed(body)
    with pytest.raises(ListCutError):
        cut.finish()


def test_a_head_that_does_not_decode_is_refused() -> None:
    with pytest.raises(ListCutError, match="head"):
        ListItems().feed(b'{"kind":"PodList","metadata":{,"items":[')
