"""What a reservation says, and when the guard stays out of the way (the engine tests in
``engine/test_starvation_guard.py`` run it through whole cycles)."""

from __future__ import annotations

import calendar

from koordgang.framework.framework import Framework, prebuilt
from koordgang.plugins.prioritysort import PrioritySort
from koordgang.plugins.starvationguard import Reservation, StarvationGuard


def _reservation(blockers: dict[str, str]) -> Reservation:
    return Reservation(
        job="default/big",
        priority=0,
        since=100.0,
        since_wall=calendar.timegm((2026, 11, 25, 14, 3, 5, 0, 0, 0)),
        until=700.0,
        nominations={f"m{i}": f"n{i}" for i in range(10)},
        blockers=blockers,
    )


def test_a_reservation_says_how_many_nodes_have_room_and_how_many_pods_it_waits_for() -> None:
    # 9 pods to wait for on 4 of the 10 nodes.
    blockers = {f"p{i}": f"n{i % 4}" for i in range(9)}
    assert _reservation(blockers).describe() == (
        "holding 10 nodes for default/big since 14:03:05: 6/10 have room, "
        "waiting for 9 pods to finish"
    )
    assert (
        _reservation({"p": "n0"}).describe().endswith("9/10 have room, waiting for 1 pod to finish")
    )
    assert _reservation({}).describe().endswith(": 10/10 have room")


def test_the_guard_is_off_with_no_delay_or_no_place() -> None:
    handle = Framework(prebuilt([PrioritySort()])).handle
    assert StarvationGuard(handle, scheduler_names=("s",)).enabled
    assert not StarvationGuard(handle, scheduler_names=("s",), reserve_after=0).enabled
    assert not StarvationGuard(handle, scheduler_names=("s",), max_reserving=0).enabled
