"""PodGroup status: phase, member counts, scheduleStartTime and occupiedBy."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.gangapis.status import podgroup_phase, podgroup_status
from koordgang.model.group_key import GroupKey
from koordgang.model.koordinator import TIMEOUT_KEY
from koordgang.model.pod import PodInfo
from koordgang.state.gangs import Gang, GangRegistry
from koordgang.testing.builders import T0, gang_of, member, podgroup, registry


def worker(name: str, **kwargs: Any) -> PodInfo:
    return member(name, how="podgroup", min_available=None, owner="train", **kwargs)


def hold(gangs: GangRegistry, name: str, node: str = "n1") -> None:
    """Holds member ``name`` of gang ns/a on ``node``, as a NonStrict gang short of its minimum
    does (in the registry of waiting pods, which the gang asks)."""
    gang = gang_of(gangs)
    [pod] = [p for p in gang.members.values() if p.name == name]
    gangs.waiting.add(pod, node, group=GroupKey(("ns/a",)), part="ns/a", since=1.0, deadline=601.0)


def counts(phase: str, scheduled: int, running: int, succeeded: int, failed: int) -> dict[str, Any]:
    return {
        "phase": phase,
        "scheduled": scheduled,
        "running": running,
        "succeeded": succeeded,
        "failed": failed,
        "occupiedBy": "ns/train",
    }


def test_the_phase_follows_the_gang_from_pending_to_finished() -> None:
    gangs = registry(worker("w-0"), podgroups=(podgroup("a", 2),))
    gang = gang_of(gangs)
    seen = [podgroup_status(gang)]

    gangs.on_pod(worker("w-1"))
    seen.append(podgroup_status(gang))

    gang.first_attempt = T0 + 60
    seen.append(podgroup_status(gang))

    gangs.on_pod(worker("w-0", node="n1", phase="Pending"))
    gangs.on_pod(worker("w-1", node="n2", phase="Pending"))
    seen.append(podgroup_status(gang))

    gangs.on_pod(worker("w-0", node="n1"))
    seen.append(podgroup_status(gang))
    gangs.on_pod(worker("w-1", node="n2"))
    seen.append(podgroup_status(gang))

    gangs.on_pod(worker("w-0", node="n1", phase="Succeeded"))
    gangs.on_pod(worker("w-1", node="n2", phase="Succeeded"))
    seen.append(podgroup_status(gang))

    started = {"scheduleStartTime": "2022-07-11T18:27:33Z"}
    assert seen == [
        counts("Pending", 0, 0, 0, 0),
        counts("PreScheduling", 0, 0, 0, 0),
        counts("Scheduling", 0, 0, 0, 0) | started,
        counts("Scheduled", 2, 0, 0, 0) | started,
        counts("Scheduled", 2, 1, 0, 0) | started,
        counts("Running", 2, 2, 0, 0) | started,
        counts("Finished", 2, 0, 2, 0) | started,
    ]


def test_a_podgroup_without_members_is_pending_with_zero_counts() -> None:
    gang = gang_of(registry(podgroups=(podgroup("a", 2),)))

    assert podgroup_status(gang) == {
        "phase": "Pending",
        "scheduled": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
    }


def test_reservations_alone_make_it_scheduling() -> None:
    gangs = registry(worker("w-0"), worker("w-1"), worker("w-2"), podgroups=(podgroup("a", 3),))
    gang = gang_of(gangs)
    hold(gangs, "w-0")

    assert gang.held() == 1
    assert podgroup_status(gang) == counts("Scheduling", 0, 0, 0, 0)


def test_a_gang_whose_held_placements_were_released_is_pre_scheduling_again() -> None:
    gangs = registry(worker("w-0"), worker("w-1"), worker("w-2"), podgroups=(podgroup("a", 3),))
    gang = gang_of(gangs)
    hold(gangs, "w-0")

    gangs.waiting.release_group(GroupKey(("ns/a",)))

    assert podgroup_status(gang) == counts("PreScheduling", 0, 0, 0, 0)


@pytest.mark.parametrize("how", ["marked by the scheduler", "seen on a member"])
def test_a_timed_out_gang_is_failed(how: str) -> None:
    gangs = registry(worker("w-0"), worker("w-1"), podgroups=(podgroup("a", 2),))
    gang = gang_of(gangs)
    gang.first_attempt = T0
    hold(gangs, "w-0")
    if how == "marked by the scheduler":
        gang.mark_timed_out()
    else:
        gangs.on_pod(worker("w-1", annotations={TIMEOUT_KEY: "true"}))

    assert podgroup_status(gang) == counts("Failed", 0, 0, 0, 0) | {
        "scheduleStartTime": "2022-07-11T18:26:33Z"
    }


@pytest.mark.parametrize(
    ("scheduled", "running", "succeeded", "failed", "phase"),
    [
        (0, 0, 0, 0, "PreScheduling"),
        (1, 0, 0, 0, "Scheduling"),
        (3, 0, 0, 0, "Scheduled"),
        (3, 3, 0, 0, "Running"),
        (3, 0, 2, 0, "Scheduled"),
        (3, 0, 3, 0, "Finished"),
        (3, 2, 0, 1, "Failed"),
        (3, 0, 3, 1, "Finished"),
        (4, 3, 0, 1, "Running"),
    ],
)
def test_the_phase_by_member_counts(
    scheduled: int, running: int, succeeded: int, failed: int, phase: str
) -> None:
    gang: Gang = gang_of(
        registry(*[worker(f"w-{i}") for i in range(4)], podgroups=(podgroup("a", 3),))
    )

    assert podgroup_phase(gang, scheduled, running, succeeded, failed) == phase


def test_members_are_counted_by_node_and_phase() -> None:
    gangs = registry(
        worker("pending"),
        worker("bound", node="n1", phase="Pending"),
        worker("running", node="n1"),
        worker("done", node="n2", phase="Succeeded"),
        worker("crashed", node="n2", phase="Failed"),
        worker("leaving", node="n3", deleting=True),
        podgroups=(podgroup("a", 5),),
    )

    status = podgroup_status(gang_of(gangs))

    assert {k: status[k] for k in ("scheduled", "running", "succeeded", "failed")} == {
        "scheduled": 5,
        "running": 2,
        "succeeded": 1,
        "failed": 1,
    }


@pytest.mark.parametrize(
    ("first_attempt", "shown"),
    [
        (T0, "2022-07-11T18:26:33Z"),
        (T0 + 0.75, "2022-07-11T18:26:33Z"),
        (0.0, "1970-01-01T00:00:00Z"),
    ],
)
def test_schedule_start_time_is_rfc3339_utc_of_the_first_attempt(
    first_attempt: float, shown: str
) -> None:
    gang = gang_of(registry(worker("w-0"), podgroups=(podgroup("a", 2),)))
    assert "scheduleStartTime" not in podgroup_status(gang)

    gang.first_attempt = first_attempt

    assert podgroup_status(gang)["scheduleStartTime"] == shown


@pytest.mark.parametrize(
    ("pods", "occupied_by"),
    [
        ([worker("w-0")], "ns/train"),
        ([member("w-0", how="podgroup"), worker("w-1")], "ns/train"),
        ([member("w-0", how="podgroup", owner="other", namespace="ns")], "ns/other"),
        ([member("w-0", how="podgroup")], None),
    ],
)
def test_occupied_by_names_the_job_that_owns_the_members(
    pods: list[PodInfo], occupied_by: str | None
) -> None:
    status = podgroup_status(gang_of(registry(*pods, podgroups=(podgroup("a", 2),))))

    assert status.get("occupiedBy") == occupied_by


def test_a_gang_whose_members_partly_finished_while_the_rest_run_is_still_running() -> None:
    # Once the first member succeeds the phase fell back from Running to Scheduled. A
    # finished member ran; the community's PodGroup controller counts running + succeeded.
    gangs = registry(
        worker("w-0", node="n1", phase="Succeeded"),
        worker("w-1", node="n2"),
        worker("w-2", node="n3"),
        podgroups=(podgroup("a", 3),),
    )

    assert podgroup_status(gang_of(gangs)) == counts("Running", 3, 2, 1, 0)
