"""Plans made with the nodes' timelines kept from the plans before give what a plan made from
scratch gives, as the clock passes holders' bounds, holders come, go and change, nodes
change size and new kinds of resources appear."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from koordgang.model.resources import Resources
from koordgang.state.start_plan import Holder, Timelines, Waiter, plan_starts


def _cluster(rng: random.Random) -> tuple[dict[str, Resources], list[Holder]]:
    room = {f"n{i}": Resources({"cpu": rng.choice((4, 8)), "memory": 16}) for i in range(5)}
    held = [
        Holder(
            f"{node}-p{j}",
            node,
            Resources({"cpu": rng.randint(1, 3), "memory": rng.randint(0, 4)}),
            None if rng.random() < 0.15 else float(rng.randrange(0, 200, 10)),
        )
        for node in room
        for j in range(rng.randint(0, 3))
    ]
    return room, held


def _change(
    rng: random.Random, room: dict[str, Resources], held: list[Holder], step: int
) -> tuple[dict[str, Resources], list[Holder]]:
    """Some holders go, some come, one changes its bound, a node may change size, and now
    and then a new kind of resource turns up."""
    held = [h for h in held if rng.random() > 0.2]
    if held and rng.random() < 0.5:
        i = rng.randrange(len(held))
        held[i] = replace(held[i], free_by=float(rng.randrange(0, 300, 10)))
    node = rng.choice(sorted(room))
    kind = "gpu" if rng.random() < 0.2 else "cpu"
    held.append(Holder(f"new-{step}", node, Resources({kind: 1}), float(rng.randrange(0, 300, 10))))
    if rng.random() < 0.3:
        size = {"cpu": rng.choice((4, 8)), "memory": rng.choice((8, 16)), "gpu": 2}
        room = {**room, rng.choice(sorted(room)): Resources(size)}
    return room, held


@pytest.mark.parametrize("seed", range(100))
def test_plans_with_kept_timelines_are_plans_made_afresh(seed: int) -> None:
    rng = random.Random(seed)
    room, held = _cluster(rng)
    queue = [
        Waiter(f"j{k}", (Resources({"cpu": rng.randint(1, 4)}),) * rng.randint(1, 3), 30.0)
        for k in range(4)
    ]
    kept = Timelines()
    now = 0.0
    for step in range(8):
        assert plan_starts(now, room, held, queue, kept) == plan_starts(now, room, held, queue)
        now += rng.choice((0.0, 5.0, 20.0, 60.0))
        if rng.random() < 0.6:
            room, held = _change(rng, room, held, step)
