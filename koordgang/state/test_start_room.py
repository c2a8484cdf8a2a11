"""The start plan's nodes over time and their index, on timelines checked by hand. One
resource (cpu cores); nodes of 4 cores."""

from __future__ import annotations

from koordgang.state.start_room import FOREVER, NodeRoom, Run, SlotIndex


def node(name: str, *releases: tuple[float, int], forever: int = 0) -> NodeRoom:
    """A node of 4 cores whose holders give back ``cores`` at each ``moment``, and hold
    ``forever`` cores without a bound."""
    held = forever + sum(cores for _, cores in releases)
    room = NodeRoom(name, (4,), (4 - forever,), held=[(held,)])
    for moment, cores in sorted(releases):
        held -= cores
        room.ends.append(moment)
        room.held.append((held,))
    return room


def test_slot_times_are_when_the_holders_leave_room_for_each_more_member() -> None:
    # 1 core free now, 1 more at 10, 2 more at 30: one 2-core member fits from 10, two at 30.
    room = node("n1", (10, 1), (30, 2))
    assert room.slot_times(0, (2,), cap=8) == [10, 30]
    # Three 1-core members: one now, a second at 10, a third and fourth at 30; capped at 3.
    assert room.slot_times(0, (1,), cap=3) == [0, 10, 30]
    # Held for ever beyond what 3 cores leave: never a 4-core member.
    assert node("n2", (10, 1), forever=1).slot_times(0, (4,), cap=8) == []


def test_room_over_a_run_is_the_least_at_its_start_and_at_each_run_begun_in_it() -> None:
    room = node("n1", (10, 2))  # 2 free now, 4 from 10
    room.add_run(Run(20, 50, (3,), "ahead"))
    assert room.free(0, 15) == (2,)
    assert room.free(10, 20) == (4,)
    assert room.free(10, 30) == (1,)  # the run ahead takes 3 from 20
    assert room.free(50, 60) == (4,)


def test_the_longest_stretch_with_room_for_a_member_ends_where_a_run_takes_it() -> None:
    room = node("n1", (10, 4))  # empty from 10
    room.add_run(Run(40, 70, (4,), "ahead"))
    room.add_run(Run(100, 110, (2,), "later"))
    # Room for 2 cores from 10 to 40, none to 70, then for ever (the later run leaves 2).
    assert room.longest_gap(10, 110, (2,)) == FOREVER
    # For 3 cores: 10 to 40, 70 to 100; from 110 the bulk counts it.
    assert room.longest_gap(10, 110, (3,)) == 30


def test_the_next_rise_skips_releases_that_leave_no_room_beside_a_run() -> None:
    room = node("n1", (10, 1), (20, 1), (30, 2))
    room.add_run(Run(0, 25, (0,), "x"))
    room.add_run(Run(5, 40, (3,), "ahead"))
    # 0 free; a 1-core member fits beside the run only once 4 are back (30): 4 - 3 = 1.
    assert room.next_rise(0, FOREVER, (1,), 0) == 30
    # Before 30 nothing: FOREVER when the search stops at 30.
    assert room.next_rise(0, 30, (1,), 0) == FOREVER


def test_the_index_counts_clean_nodes_in_bulk_and_a_node_past_its_last_run_with_them() -> None:
    clean = node("a", (10, 4))
    busy = node("b", (0, 4))
    busy.add_run(Run(0, 50, (4,), "ahead"))
    index = SlotIndex(0, (4,), cap=4, nodes=[clean, busy])
    # a from 10; b, taken whole until 50, from 50 in bulk.
    assert [index.bulk_count(t) for t in (0, 10, 49, 50)] == [0, 1, 1, 2]
    assert index.bulk_reach(2, 10) == 50
    # No stretch of b has room for a 4-core member before its run ends: no job looks at it.
    assert index.looked_at(0.0) == []
    # A run planned on a later: a leaves the bulk until it ends at 40, and a job of 20 s or
    # less looks at it (10 to 30 is free before the run: 20 s).
    clean.add_run(Run(30, 40, (4,), "next"))
    index.ran(clean, 40)
    assert [index.bulk_count(t) for t in (10, 40, 50)] == [0, 1, 2]
    assert index.looked_at(20.0) == [(10, "a")]
    assert index.looked_at(21.0) == []
