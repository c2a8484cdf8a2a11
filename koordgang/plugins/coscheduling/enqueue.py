"""Enqueue (Volcano's word): some clients create a job's pods only once the scheduler says the
gang could start. A gang is enqueued, oldest first, once its group object's ``minResources``
fit what is free in the cluster and not promised to gangs enqueued before it; a gang without
``minResources`` is enqueued at once.

A promise lasts until the gang has its minimum of members created (from then on the cycle's
own minResources check speaks for it), or until its waiting time has passed since it was
enqueued: a client that never makes its pods does not hold room for ever.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from koordgang.model.resources import format_amount
from koordgang.plugins.coscheduling.min_resources import shortfall
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
        if sum(1 for _ in gang.live_members()) >= (gang.spec.min_available or 0):
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
        if short:
            note = _promised_note(minimum.names() if minimum is not None else (), promises)
            message = (
                f"gang {gang.key}: minResources do not fit the free room: {'; '.join(short)}{note}"
            )
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


def _promised_note(names: Iterable[str], promises: Mapping[str, int]) -> str:
    held = [f"{format_amount(n, promises[n])} {n}" for n in names if promises.get(n)]
    if not held:
        return ""
    return f" (besides {', '.join(held)} promised to gangs enqueued earlier)"
