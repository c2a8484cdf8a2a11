"""Start times told and kept: a job is held to the first start it was told (to the minute),
counted once if later, with why its start slipped."""

from __future__ import annotations

from koordgang.plugins.starttimes.inputs import WaitingJob
from koordgang.plugins.starttimes.promises import Promises
from koordgang.state.start_plan import Estimate


def job(key: str, priority: int = 0, created: float = 0.0) -> WaitingJob:
    return WaitingJob(key, priority, created, (), 0.0)


def test_a_job_on_time_by_the_minute_it_was_shown_is_not_late() -> None:
    promises = Promises()
    # Told 22:15:59 UTC (shown as 22:16): starting at 22:16:00 is on time.
    promises.told(job("ns/a"), Estimate("ns/a", 1_700_000_159.0), now=1_700_000_000.0)
    assert promises.started("ns/a", 1_700_000_160.0) is None
    # Counted once: the job is forgotten once it started.
    assert promises.started("ns/a", 1_700_009_999.0) is None


def test_a_job_late_with_no_plan_in_between_counts_as_room_taken() -> None:
    promises = Promises()
    promises.told(job("ns/a"), Estimate("ns/a", 1_000.0, {"n1": 1}), now=500.0)
    assert promises.started("ns/a", 1_100.0) == "room_taken"


def test_a_job_overtaken_by_a_later_more_important_one_says_so() -> None:
    promises = Promises()
    promises.told(job("ns/a"), Estimate("ns/a", 1_000.0, {"n1": 1}), now=500.0)
    queue = [job("ns/vip", priority=10, created=600.0), job("ns/a")]
    estimates = {
        "ns/vip": Estimate("ns/vip", 1_000.0, {"n1": 1}),
        "ns/a": Estimate("ns/a", 2_000.0, {"n1": 1}),
    }
    promises.planned(queue, estimates, {"n1"})
    assert promises.started("ns/a", 2_000.0) == "higher_priority"


def test_a_job_whose_node_went_away_says_so() -> None:
    promises = Promises()
    promises.told(job("ns/a"), Estimate("ns/a", 1_000.0, {"n1": 1}), now=500.0)
    promises.planned([job("ns/a")], {"ns/a": Estimate("ns/a", 1_500.0, {"n2": 1})}, {"n2"})
    assert promises.started("ns/a", 1_500.0) == "node_gone"


def test_a_pod_waited_for_still_here_past_its_bound_is_named_only_when_overdue() -> None:
    told = Estimate("ns/a", 1_000.0, {"n1": 1}, waits_for=("ns/r",))
    later = Estimate("ns/a", 1_500.0, {"n1": 1}, waits_for=("ns/r",))
    for overdue, why in (({"ns/r"}, "outlived_bound"), (set(), "room_taken")):
        promises = Promises()
        promises.told(job("ns/a"), told, now=500.0)
        promises.planned([job("ns/a")], {"ns/a": later}, {"n1"}, overdue)
        assert promises.started("ns/a", 1_500.0) == why
