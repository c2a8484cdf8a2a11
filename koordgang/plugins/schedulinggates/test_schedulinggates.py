"""SchedulingGates: gated pods wait outside the queue and carry kube's SchedulingGated
condition."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.framework.interfaces import PreEnqueuePlugin
from koordgang.framework.report import Report
from koordgang.framework.status import Code
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.schedulinggates import SchedulingGates

GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


class RecordingHandle:
    """Just enough of a Handle: the reports the plugin asks for."""

    def __init__(self) -> None:
        self.reports: list[Report] = []

    def report(self, report: Report) -> None:
        self.reports.append(report)


def pod(*gates: str, condition: dict[str, str] | None = None) -> PodInfo:
    status: dict[str, Any] = {"phase": "Pending"}
    if condition is not None:
        status["conditions"] = [{"type": "PodScheduled", **condition}]
    return parse_pod(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {
                "containers": [{"name": "c"}],
                "schedulingGates": [{"name": g} for g in gates],
            },
            "status": status,
        }
    )


def attached() -> tuple[SchedulingGates, RecordingHandle]:
    handle = RecordingHandle()
    return SchedulingGates(handle), handle  # type: ignore[arg-type]  # a recording Handle


GATED = {"status": "False", "reason": "SchedulingGated", "message": GATED_MESSAGE}


@pytest.mark.parametrize(
    ("gates", "reason"),
    [
        (("example.com/quota",), "waiting for scheduling gates: [example.com/quota]"),
        # Listed in spec order, space-separated in brackets, as kube-scheduler prints them.
        (("b", "a"), "waiting for scheduling gates: [b a]"),
    ],
)
def test_a_gated_pod_is_refused_naming_its_gates(gates: tuple[str, ...], reason: str) -> None:
    plugin, _ = attached()
    status = plugin.pre_enqueue(pod(*gates, condition=GATED))
    # Nothing but removing the gates helps, and that is an update of the pod.
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (reason,)
    assert status.plugin == "SchedulingGates"


def test_a_pod_without_gates_is_let_in_and_told_nothing() -> None:
    plugin, handle = attached()
    assert plugin.pre_enqueue(pod()).is_success
    assert handle.reports == []


@pytest.mark.parametrize(
    "condition",
    [
        None,
        {"status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available."},
        {"status": "False", "reason": "SchedulingGated", "message": "an older wording"},
        {"status": "True", "reason": "SchedulingGated", "message": GATED_MESSAGE},
    ],
    ids=["no condition", "another reason", "another message", "another status"],
)
def test_a_gated_pod_without_kubes_condition_gets_it_without_an_event(
    condition: dict[str, str] | None,
) -> None:
    plugin, handle = attached()
    gated = pod("g", condition=condition)
    plugin.pre_enqueue(gated)
    [report] = handle.reports
    assert report.obj.name == "p" and report.obj.namespace == "ns" and report.obj.uid == "u"
    assert report.condition == ("False", "SchedulingGated")
    assert report.message == GATED_MESSAGE
    assert report.event is False


def test_the_condition_is_written_once_then_left_alone() -> None:
    plugin, handle = attached()
    plugin.pre_enqueue(pod("g"))
    assert len(handle.reports) == 1
    # The pod comes back with the condition written: nothing more to write.
    plugin.pre_enqueue(pod("g", condition=GATED))
    plugin.pre_enqueue(pod("g", condition=GATED))
    assert len(handle.reports) == 1


def test_a_plugin_without_a_handle_still_refuses_gated_pods() -> None:
    status = SchedulingGates().pre_enqueue(pod("g"))
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_scheduling_gates_is_a_pre_enqueue_plugin() -> None:
    plugin = SchedulingGates()
    assert isinstance(plugin, PreEnqueuePlugin)
    assert plugin.name == "SchedulingGates"
