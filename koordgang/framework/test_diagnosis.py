"""Diagnosis and Status: why a pod fits nowhere, worded as kube-scheduler words it."""

from __future__ import annotations

from collections import Counter

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.diagnosis import Diagnosis
from koordgang.framework.status import SUCCESS, Code, Status

TAINT = "node(s) had untolerated taint {dedicated: gpu}"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"


@pytest.mark.parametrize(
    ("total", "reasons", "message"),
    [
        (0, {}, "no nodes available to schedule pods."),
        (4, {}, "0/4 nodes are available."),
        (1, {"Insufficient cpu": 1}, "0/1 nodes are available: 1 Insufficient cpu."),
        (
            3,
            {TAINT: 1, "Insufficient cpu": 2},
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
            "2 Insufficient cpu.",
        ),
        # Sorted as the strings "<count> <reason>", as kube-scheduler sorts them.
        (
            8,
            {AFFINITY: 5, "Insufficient nvidia.com/gpu": 3},
            "0/8 nodes are available: 3 Insufficient nvidia.com/gpu, "
            "5 node(s) didn't match Pod's node affinity/selector.",
        ),
        (
            20,
            {"Insufficient cpu": 12, TAINT: 8},
            "0/20 nodes are available: 12 Insufficient cpu, "
            "8 node(s) had untolerated taint {dedicated: gpu}.",
        ),
        (
            6,
            {"Insufficient memory": 2, "Insufficient cpu": 2, "Too many pods": 2},
            "0/6 nodes are available: 2 Insufficient cpu, 2 Insufficient memory, 2 Too many pods.",
        ),
        # One node may give several reasons, so the counts may add up to more than the total.
        (
            2,
            {"Insufficient cpu": 2, "Insufficient memory": 1},
            "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.",
        ),
    ],
)
def test_the_message_counts_nodes_per_reason_like_kube_scheduler(
    total: int, reasons: dict[str, int], message: str
) -> None:
    diagnosis = Diagnosis(total_nodes=total, reasons=Counter(reasons))
    assert diagnosis.message() == message


def test_add_counts_each_reason_of_a_rejection() -> None:
    diagnosis = Diagnosis(total_nodes=3)
    diagnosis.add(("Insufficient cpu", "Insufficient memory"))
    diagnosis.add(("Insufficient cpu",))
    diagnosis.add((TAINT,), nodes=1)
    assert diagnosis.reasons == Counter({"Insufficient cpu": 2, "Insufficient memory": 1, TAINT: 1})


def test_merge_adds_counts_from_a_cached_verdict() -> None:
    diagnosis = Diagnosis(total_nodes=5, reasons=Counter({"Insufficient cpu": 2}))
    diagnosis.merge(Counter({TAINT: 3, "Insufficient cpu": 0}))
    assert diagnosis.message() == (
        "0/5 nodes are available: 2 Insufficient cpu, "
        "3 node(s) had untolerated taint {dedicated: gpu}."
    )


def test_a_pod_level_reason_replaces_the_node_counts() -> None:
    diagnosis = Diagnosis(total_nodes=3, reasons=Counter({"Insufficient cpu": 3}))
    diagnosis.pod_reason = "gang default/train waiting: 6/8 members placed, min 8"
    assert diagnosis.message() == "gang default/train waiting: 6/8 members placed, min 8"


@pytest.mark.parametrize(
    ("status", "success", "rejection", "message"),
    [
        (SUCCESS, True, False, ""),
        (Status.unschedulable("Fit", "Insufficient cpu"), False, True, "Insufficient cpu"),
        (
            Status.unschedulable("Fit", "Insufficient cpu", "Too many pods"),
            False,
            True,
            "Insufficient cpu, Too many pods",
        ),
        (Status.unresolvable("NodeAffinity", AFFINITY), False, True, AFFINITY),
        (Status.error("Gang", "boom"), False, False, "boom"),
        (Status(Code.WAIT, ("waiting",)), False, False, "waiting"),
        (Status(Code.SKIP), False, False, ""),
    ],
)
def test_status_codes_classify_outcomes(
    status: Status, success: bool, rejection: bool, message: str
) -> None:
    assert status.is_success is success
    assert status.is_rejection is rejection
    assert status.message() == message


def test_status_constructors_record_code_reasons_and_plugin() -> None:
    assert Status.unschedulable("Fit", "Insufficient cpu") == Status(
        Code.UNSCHEDULABLE, ("Insufficient cpu",), "Fit"
    )
    assert Status.unresolvable("NodeAffinity", AFFINITY) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (AFFINITY,), "NodeAffinity"
    )
    assert Status.error("Gang", "boom") == Status(Code.ERROR, ("boom",), "Gang")


def test_cycle_state_returns_what_was_written_with_its_type_checked() -> None:
    state = CycleState()
    assert state.read("gang", str) is None
    state.write("gang", "default/train")
    assert state.read("gang", str) == "default/train"
    with pytest.raises(TypeError, match="cycle state 'gang' holds str, not int"):
        state.read("gang", int)
