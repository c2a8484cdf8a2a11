"""Enqueue (Volcano's word): some clients create a job's pods only once the scheduler says the
gang could start. A gang is enqueued, oldest first, once its group object's ``minResources``
fit what is free in the cluster and not promised to gangs enqueued before it; a gang without
``minResources`` is enqueued at once.

A promise lasts until the gang is placed, or until its waiting time has passed since it was
enqueued: a client that never makes its pods does not hold room for ever.

What a gang that does not fit is told names what it needs, not the free room of the moment:
its object is rewritten when the words change, and free room changes all the time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from koordgang.gangapis.min_resources import shortfall
from koordgang.model.resources import format_amount
from koordgang.state.gangs import Gang


def promised(gangs: Iterable[Gang], now: float) -> dict[str, int]:
    """Room promised to enqueued gangs that have not made their pods yet, per resource."""
    total: dict[str, int] = {}
    for gang in gangs:
        minimum = gang.podgroup.min_resources if gang.podgroup is not None else None
        if minimum is None or not gang.enqueued or gang.satisfied or gang.enqueued_at is None:
            continue
        if now - gang.enqueued_at >= gang.spec.waiting_time:
            continue
        for name, amount in minimum.items():
            total[name] = total.get(name, 0) + amount
    return total


def enqueue(
    waiting: Iterable[Gang], free: Mapping[str, int], promises: Mapping[str, int], now: float
) -> list[Gang]:
    """Enqueues the gangs of ``waiting`` that fit, oldest first; returns every gang whose
    state or explanation changed. ``free`` is the cluster's free room, ``promises`` the room
    promised to gangs enqueued earlier."""
    left = {name: amount - promises.get(name, 0) for name, amount in free.items()}
    changed = []
    for gang in sorted(waiting, key=lambda g: (g.created_at(), g.key)):
        minimum = gang.podgroup.min_resources if gang.podgroup is not None else None
        short = shortfall(minimum, (), _clamped(left), {}) if minimum is not None else []
        if short and minimum is not None:
            needs = ", ".join(
                f"{format_amount(name, amount)} {name}" for name, amount in minimum.items()
            )
            note = " or promised to gangs enqueued earlier" if promises else ""
            message = f"{_not_enqueued(gang)}needs {needs}, more than is free{note}"
            if message != gang.last_message:
                gang.last_message = message
                changed.append(gang)
            continue
        gang.enqueued = True
        gang.enqueued_at = now
        if gang.last_message.startswith(_not_enqueued(gang)):
            gang.last_message = ""  # what it was told while not enqueued; a cycle's stays
        changed.append(gang)
        if minimum is not None:
            for name, amount in minimum.items():
                left[name] = left.get(name, 0) - amount
    return changed


def _not_enqueued(gang: Gang) -> str:
    return f"gang {gang.key}: minResources do not fit the free room: "


def _clamped(left: Mapping[str, int]) -> dict[str, int]:
    return {name: max(0, amount) for name, amount in left.items()}
