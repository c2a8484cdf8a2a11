from __future__ import annotations

from koordgang.framework.handle import Handle
from koordgang.framework.report import Report
from koordgang.framework.status import SUCCESS, Status
from koordgang.model.pod import PodInfo

#: The PodScheduled condition Kubernetes gives a gated pod, word for word.
GATED_REASON = "SchedulingGated"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
GATED_CONDITION = ("False", GATED_REASON, GATED_MESSAGE)


def waiting_reason(gates: tuple[str, ...]) -> str:
    """kube-scheduler's words, the gates listed as Go prints a list of strings."""
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


class SchedulingGates:
    """Keeps a pod with ``spec.schedulingGates`` out of the queue.

    Gates can only be removed once the pod exists, and removing one is an update of the
    pod, which runs PreEnqueue again: nothing else needs to wake such a pod up.
    """

    name = "SchedulingGates"

    def __init__(self, handle: Handle | None = None) -> None:
        #: None where the plugin runs without a scheduler (a runner of filters alone).
        self._handle = handle

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gates = pod.scheduling_gates
        if not gates:
            return SUCCESS
        self._mark_gated(pod)
        return Status.unresolvable(self.name, waiting_reason(gates))

    def _mark_gated(self, pod: PodInfo) -> None:
        """The API server sets this condition when it creates a gated pod; a pod created
        another way (or whose condition was overwritten) gets it here, so that users read
        why it waits. Kubernetes posts no Event for it, and neither does this."""
        if self._handle is None or pod.conditions_pod_scheduled == GATED_CONDITION:
            return
        self._handle.report(
            Report.for_pod(
                pod,
                "Normal",
                GATED_REASON,
                GATED_MESSAGE,
                condition=("False", GATED_REASON),
                event=False,
            )
        )
