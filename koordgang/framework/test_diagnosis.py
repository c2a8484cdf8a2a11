"""Diagnosis and Status: why a pod fits nowhere, worded as kube-scheduler words it."""

from __future__ import annotations

from collections import Counter

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.diagnosis import Diagnosis, counted
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


def test_reject_counts_each_reason_and_records_how_each_node_rejected() -> None:
    diagnosis = Diagnosis(total_nodes=3)
    diagnosis.reject("n1", Status.unschedulable("Fit", "Insufficient cpu", "Insufficient memory"))
    diagnosis.reject("n2", Status.unschedulable("Fit", "Insufficient cpu"))
    diagnosis.reject("n3", Status.unresolvable("TaintToleration", TAINT))

    assert diagnosis.reasons == Counter({"Insufficient cpu": 2, "Insufficient memory": 1, TAINT: 1})
    assert diagnosis.node_codes == {
        "n1": Code.UNSCHEDULABLE,
        "n2": Code.UNSCHEDULABLE,
        "n3": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    }
    assert diagnosis.message() == (
        "0/3 nodes are available: 1 Insufficient memory, "
        "1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu."
    )


def test_reject_all_adds_a_cached_verdict_to_what_was_found_so_far() -> None:
    diagnosis = Diagnosis(total_nodes=5)
    diagnosis.reject("n1", Status.unschedulable("Fit", "Insufficient cpu"))
    diagnosis.reject("n2", Status.unschedulable("Fit", "Insufficient cpu"))

    diagnosis.reject_all(
        {name: Status.unresolvable("TaintToleration", TAINT) for name in ("n3", "n4", "n5")}
    )

    assert diagnosis.message() == (
        "0/5 nodes are available: 2 Insufficient cpu, "
        "3 node(s) had untolerated taint {dedicated: gpu}."
    )
    assert len(diagnosis.node_codes) == 5


@pytest.mark.parametrize(
    ("rejections", "candidates"),
    [
        ({}, []),
        ({"n1": Status.unschedulable("Fit", "Insufficient cpu")}, ["n1"]),
        ({"n1": Status.unresolvable("NodeAffinity", AFFINITY)}, []),
        (
            {
                "n1": Status.unschedulable("Fit", "Insufficient cpu"),
                "n2": Status.unresolvable("TaintToleration", TAINT),
                "n3": Status.unschedulable("NodePorts", "node(s) didn't have free ports"),
            },
            ["n1", "n3"],
        ),
    ],
    ids=["none", "room", "labels", "mixed"],
)
def test_node_codes_tell_nodes_where_removing_pods_could_make_room(
    rejections: dict[str, Status], candidates: list[str]
) -> None:
    diagnosis = Diagnosis(total_nodes=3)
    diagnosis.reject_all(rejections)
    codes = diagnosis.node_codes
    assert [n for n, code in codes.items() if code is Code.UNSCHEDULABLE] == candidates


def test_a_later_rejection_of_a_node_replaces_its_code() -> None:
    diagnosis = Diagnosis(total_nodes=1)
    diagnosis.reject("n1", Status.unschedulable("Fit", "Insufficient cpu"))
    diagnosis.reject("n1", Status.unresolvable("", "node(s) were outside the chosen domain"))
    assert diagnosis.node_codes == {"n1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE}


@pytest.mark.parametrize(
    ("reasons", "text"),
    [
        ([], ""),
        ([("Insufficient cpu", 3)], "3 Insufficient cpu"),
        (
            [("node(s) were unschedulable", 2), ("Insufficient cpu", 3)],
            "2 node(s) were unschedulable, 3 Insufficient cpu",
        ),
        # As strings: "10 ..." sorts before "9 ...", as in kube-scheduler's messages.
        ([("b", 9), ("a", 10)], "10 a, 9 b"),
    ],
)
def test_counted_joins_counts_and_reasons_sorted_as_strings(
    reasons: list[tuple[str, int]], text: str
) -> None:
    assert counted(reasons) == text


def test_a_pod_level_reason_replaces_the_node_counts() -> None:
    diagnosis = Diagnosis(total_nodes=3, reasons=Counter({"Insufficient cpu": 3}))
    diagnosis.pod_reason = "gang default/train waiting: 6/8 members placed, min 8"
    assert diagnosis.message() == "gang default/train waiting: 6/8 members placed, min 8"


@pytest.mark.parametrize(
    ("status", "success", "message"),
    [
        (SUCCESS, True, ""),
        (Status.unschedulable("Fit", "Insufficient cpu"), False, "Insufficient cpu"),
        (
            Status.unschedulable("Fit", "Insufficient cpu", "Too many pods"),
            False,
            "Insufficient cpu, Too many pods",
        ),
        (Status.unresolvable("NodeAffinity", AFFINITY), False, AFFINITY),
        (Status.error("Gang", "boom"), False, "boom"),
        (Status(Code.WAIT, ("waiting",)), False, "waiting"),
        (Status(Code.SKIP), False, ""),
    ],
)
def test_status_codes_classify_outcomes(status: Status, success: bool, message: str) -> None:
    assert status.is_success is success
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
