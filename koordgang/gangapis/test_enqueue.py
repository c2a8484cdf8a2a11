"""Enqueue: gangs whose clients wait for a go-ahead are enqueued oldest first while their
minResources fit the free room less what was promised to gangs enqueued before them; a promise
lapses once the pods exist or after the waiting time."""

from __future__ import annotations

from typing import Any

from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.gangapis.enqueue import enqueue, promised
from koordgang.gangapis.volcano import VolcanoApi
from koordgang.state.gangs import Gang, GangRegistry

CPU = "cpu"


def volcano_group(name: str, cpu: str | None, created: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": 2}
    if cpu is not None:
        spec["minResources"] = {CPU: cpu}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "creationTimestamp": created},
        "spec": spec,
    }


def gangs(*objects: dict[str, Any]) -> tuple[GangRegistry, list[Gang]]:
    registry = GangRegistry(600.0, resolve=Resolve(GANG_APIS))
    made = []
    for obj in objects:
        gang = registry.on_podgroup(VolcanoApi().parse(obj))
        assert gang is not None
        made.append(gang)
    return registry, made


def test_gangs_are_enqueued_oldest_first_while_their_min_resources_fit() -> None:
    _, (young, old) = gangs(
        volcano_group("young", "6", "2024-01-01T00:00:10Z"),
        volcano_group("old", "6", "2024-01-01T00:00:00Z"),
    )
    changed = enqueue([young, old], {CPU: 10_000}, {}, now=5.0)
    assert old.enqueued and old.enqueued_at == 5.0
    assert not young.enqueued
    assert young.last_message == (
        "gang ns/young: minResources do not fit the free room: needs 6 cpu, more than is free"
    )
    assert set(changed) == {old, young}
    # Told once: the words do not follow the free room, so the object is not rewritten.
    assert enqueue([young], {CPU: 3_000}, {}, now=6.0) == []


def test_a_gang_without_min_resources_is_enqueued_at_once() -> None:
    _, (gang,) = gangs(volcano_group("any", None, "2024-01-01T00:00:00Z"))
    enqueue([gang], {}, {}, now=0.0)
    assert gang.enqueued


def test_room_promised_to_an_earlier_gang_is_not_free_until_its_promise_lapses() -> None:
    registry, (first, second) = gangs(
        volcano_group("first", "6", "2024-01-01T00:00:00Z"),
        volcano_group("second", "6", "2024-01-01T00:00:10Z"),
    )
    enqueue([first], {CPU: 10_000}, {}, now=0.0)
    held = promised(registry.gangs(), now=1.0)
    assert held == {CPU: 6_000}
    enqueue([second], {CPU: 10_000}, held, now=1.0)
    assert not second.enqueued
    assert second.last_message.endswith("more than is free or promised to gangs enqueued earlier")
    # The first gang's client never made its pods: after its waiting time the room is free.
    assert promised(registry.gangs(), now=600.0) == {}
    enqueue([second], {CPU: 10_000}, promised(registry.gangs(), now=600.0), now=600.0)
    assert second.enqueued
