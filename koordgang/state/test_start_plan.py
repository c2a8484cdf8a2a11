"""The plan of start times, on timelines checked by hand. Amounts are cpu in millicores."""

from __future__ import annotations

import pytest

from koordgang.model.resources import Resources
from koordgang.state import start_plan
from koordgang.state.start_plan import Holder, Waiter, plan_starts


def cpu(cores: int) -> Resources:
    return Resources({"cpu": cores * 1000})


def nodes(*names: str, cores: int = 4) -> dict[str, Resources]:
    return {name: cpu(cores) for name in names}


def holder(pod: str, node: str, cores: int, free_by: float | None) -> Holder:
    return Holder(pod, node, cpu(cores), free_by)


def waiter(key: str, *cores: int, runs_for: float | None = 100, on: str = "") -> Waiter:
    return Waiter(
        key, tuple(cpu(c) for c in cores), runs_for, frozenset(on.split()) if on else None
    )


def test_a_job_starts_when_enough_of_its_node_is_given_back() -> None:
    held = [holder("a", "n1", 2, 100), holder("b", "n1", 2, 200)]
    [three, two] = plan_starts(0, nodes("n1"), held, [waiter("three", 3), waiter("two", 2)])
    # "three" needs 3 cores: free at 200, when both have ended; the node is its own from 200
    # to 300. "two" fits at 100 beside b, and is done by 200, when "three" starts.
    assert (three.start, three.waits_for) == (200, ("a", "b"))
    assert (two.start, dict(two.nodes), two.waits_for) == (100, {"n1": 1}, ("a",))


def test_a_later_job_never_delays_an_earlier_one() -> None:
    held = [holder("a", "n1", 4, 100)]
    [big, small] = plan_starts(0, nodes("n1"), held, [waiter("big", 4), waiter("small", 1)])
    assert big.start == 100
    # The node is the big job's from 100 to 200: the small one waits for its end.
    assert small.start == 200


def test_a_short_job_runs_first_on_room_the_gang_ahead_cannot_use_yet() -> None:
    held = [holder("a", "n1", 4, 100), holder("b", "n2", 2, 300)]
    plan = plan_starts(
        0,
        nodes("n1", "n2"),
        held,
        [waiter("gang", 4, 4), waiter("short", 2, runs_for=50), waiter("long", 2, runs_for=250)],
    )
    gang, short, long = plan
    # The gang needs both nodes whole: at 300, when b ends.
    assert (gang.start, dict(gang.nodes)) == (300, {"n1": 1, "n2": 1})
    # Beside b on n2 at once, done by 50, long before the gang.
    assert (short.start, dict(short.nodes), short.waits_for) == (0, {"n2": 1}, ())
    # 250 s would run into the gang's start anywhere before 300 but from 50 on n2:
    # 50 + 250 = 300, just as the gang comes.
    assert (long.start, dict(long.nodes)) == (50, {"n2": 1})


def test_a_gang_waits_for_room_on_enough_nodes_at_once() -> None:
    held = [holder("a", "n1", 4, 100), holder("b", "n2", 4, 500), holder("c", "n3", 4, 200)]
    [gang] = plan_starts(0, nodes("n1", "n2", "n3"), held, [waiter("gang", 4, 4)])
    assert (gang.start, dict(gang.nodes), gang.waits_for) == (200, {"n1": 1, "n3": 1}, ("a", "c"))


def test_room_held_without_a_bound_gives_no_time_and_says_who_holds_it() -> None:
    held = [holder("a", "n1", 4, None), holder("b", "n2", 2, None), holder("c", "n2", 2, 100)]
    [job] = plan_starts(0, nodes("n1", "n2"), held, [waiter("job", 3)])
    assert (job.start, job.held_by, job.never_fits) == (None, ("a", "b"), False)


def test_a_job_without_a_bound_ahead_holds_its_room_for_ever() -> None:
    held = [holder("a", "n1", 4, 100)]
    [endless, after] = plan_starts(
        0, nodes("n1"), held, [waiter("endless", 4, runs_for=None), waiter("after", 1)]
    )
    assert endless.start == 100
    assert (after.start, after.held_by) == (None, ("endless",))


def test_members_go_only_where_they_may() -> None:
    held = [holder("a", "n1", 4, 100), holder("b", "n2", 4, 900)]
    [anywhere, pinned] = plan_starts(
        0,
        nodes("n1", "n2"),
        held,
        [waiter("anywhere", 1, runs_for=10), waiter("pinned", 4, on="n2")],
    )
    assert (anywhere.start, dict(anywhere.nodes)) == (100, {"n1": 1})
    assert (pinned.start, dict(pinned.nodes), pinned.waits_for) == (900, {"n2": 1}, ("b",))


def test_a_job_too_big_for_any_node_never_fits() -> None:
    [huge] = plan_starts(0, nodes("n1"), [], [waiter("huge", 8)])
    assert (huge.start, huge.never_fits) == (None, True)


def test_a_job_that_fits_now_starts_now() -> None:
    [job] = plan_starts(1000, nodes("n1"), [holder("a", "n1", 2, 1500)], [waiter("job", 2)])
    assert (job.start, job.waits_for) == (1000, ())


def test_room_free_now_but_planned_for_a_job_ahead_is_used_only_until_then() -> None:
    held = [holder("a", "n1", 2, 100), holder("b", "n2", 4, 100)]
    gang, longer, shorter = plan_starts(
        0,
        nodes("n1", "n2"),
        held,
        [waiter("gang", 4, 4), waiter("longer", 2, runs_for=150), waiter("shorter", 2)],
    )
    assert gang.start == 100
    # Two cores of n1 are free now, but the gang has the node from 100: 150 s would delay
    # it, 100 s end just as it comes.
    assert longer.start == 200
    assert (shorter.start, dict(shorter.nodes)) == (0, {"n1": 1})


def test_a_deadline_running_while_the_job_waits_ends_its_run_early() -> None:
    held = [holder("a", "n1", 4, 100)]
    plan = plan_starts(
        0,
        nodes("n1"),
        held,
        # 500 s of its own, but its Job's clock ends it at 150 whenever it starts.
        [Waiter("job", (cpu(4),), 500, ends_by=150), waiter("next", 4)],
    )
    assert [e.start for e in plan] == [100, 150]


def test_jobs_past_the_plans_budget_get_no_estimate_never_a_wrong_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(start_plan, "BUDGET", 3)
    held = [holder("a", "n1", 4, 100), holder("b", "n2", 4, 200)]
    first, second = plan_starts(0, nodes("n1", "n2"), held, [waiter("one", 4), waiter("two", 4)])
    assert first.start == 100
    assert (second.start, second.unplanned, second.held_by) == (None, True, ())


def test_a_gang_of_unlike_members_fits_where_its_biggest_alone_would_not_twice() -> None:
    """n1 empty, n2 with 3 of its 4 cores held for ever: 4 cores and 1 core fit now."""
    held = [holder("endless", "n2", 3, None)]
    [job] = plan_starts(0, nodes("n1", "n2"), held, [waiter("job", 4, 1)])
    assert (job.start, dict(job.nodes)) == (0, {"n1": 1, "n2": 1})


def test_an_over_committed_node_hides_no_room_of_the_others() -> None:
    """n1 holds twice its room (a pod and a nomination without a bound); n2 is empty, n3 free
    at 100: a pair of whole nodes starts at 100 on n2 and n3."""
    held = [
        holder("blocker", "n1", 8, 1000),
        holder("big-0", "n1", 8, None),
        holder("c", "n3", 8, 100),
    ]
    [pair] = plan_starts(0, nodes("n1", "n2", "n3", cores=8), held, [waiter("pair", 8, 8)])
    assert (pair.start, dict(pair.nodes)) == (100, {"n2": 1, "n3": 1})


def test_members_that_accept_different_nodes_each_go_where_they_may() -> None:
    """A launcher that may use only n1 and two workers that may use only n2 and n3: n3 frees
    at 100, so the job starts then, a member on each node."""
    held = [holder("c", "n3", 4, 100)]
    launcher, worker = frozenset({"n1"}), frozenset({"n2", "n3"})
    job = Waiter(
        "mpi",
        (cpu(1), cpu(4), cpu(4)),
        100,
        member_nodes=(launcher, worker, worker),
    )
    [estimate] = plan_starts(0, nodes("n1", "n2", "n3"), held, [job])
    assert (estimate.start, dict(estimate.nodes)) == (100, {"n1": 1, "n2": 1, "n3": 1})
