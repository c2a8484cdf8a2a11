"""What the scheduler tells users, as data: plugins and the engine describe writes here, and the
engine's writers carry them out (coalesced, in order, off the scheduling path)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from koordgang.model.objects import ObjectRef
from koordgang.model.pod import PodInfo


@dataclass(frozen=True, slots=True)
class Report:
    obj: ObjectRef
    #: Event type and reason (``Warning``/``FailedScheduling``, ``Normal``/``Scheduled``).
    event_type: str
    reason: str
    message: str
    #: Condition to set on a pod, if any: (status, reason); its message is ``message``.
    condition: tuple[str, str] | None = None
    #: Annotations to merge into a pod's metadata before the Event.
    annotations: dict[str, str] = field(default_factory=dict)
    #: Written even if the pod got bound meanwhile (Scheduled, timeouts).
    always: bool = False
    #: Also post an Event (a condition alone suffices where Kubernetes itself posts none).
    event: bool = True
    #: With the condition: ``status.nominatedNodeName`` to set ("" clears it; None leaves it).
    nominated_node: str | None = None
    #: Who the Event is from: the pod's own scheduler (one daemon answers to several names);
    #: "" for the daemon's first name.
    component: str = ""

    @staticmethod
    def for_pod(
        pod: PodInfo,
        event_type: str,
        reason: str,
        message: str,
        *,
        condition: tuple[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        always: bool = False,
        event: bool = True,
    ) -> Report:
        ref = ObjectRef("Pod", pod.namespace, pod.name, pod.uid)
        return Report(
            ref,
            event_type,
            reason,
            message,
            condition,
            annotations or {},
            always,
            event,
            component=pod.scheduler_name,
        )

    @staticmethod
    def unschedulable(
        pod: PodInfo,
        message: str,
        reason: str = "Unschedulable",
        *,
        nominated_node: str | None = None,
    ) -> Report:
        """The usual explanation of a pod that waits: condition and FailedScheduling Event;
        with the node it is nominated to (or "" to clear a nomination)."""
        ref = ObjectRef("Pod", pod.namespace, pod.name, pod.uid)
        return Report(
            ref,
            "Warning",
            "FailedScheduling",
            message,
            ("False", reason),
            {},
            nominated_node=nominated_node,
            component=pod.scheduler_name,
        )


@dataclass(frozen=True, slots=True)
class StatusUpdate:
    """The desired ``status`` of a custom resource (a PodGroup), written when it changed."""

    api_version: str
    plural: str
    namespace: str
    name: str
    status: dict[str, Any]
    #: Written through the ``status`` subresource; False for a kind without one (Volcano's
    #: PodGroup), whose status is merged into the object itself.
    subresource: bool = True
    #: The object's status as last read, if known: a status written before and overwritten
    #: since (a client that updates the whole object) is written again.
    observed: Mapping[str, Any] | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.api_version, self.plural, self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class WatchedResource:
    """A resource kind a plugin wants to hear of (a PodGroup of one API, say): the adapters
    watch each declared one where the API server serves it, and hand every event to the
    framework under ``id``."""

    group: str
    version: str
    plural: str
    kind: str
    #: Whether the kind has a ``status`` subresource (Volcano's PodGroup has none).
    status_subresource: bool = True
    #: Other versions of the kind that are read where ``version`` is not served, best first
    #: (upstream's PodGroup is ``v1beta1`` from Kubernetes 1.37, ``v1alpha2`` on 1.36). Which
    #: one is watched is decided by what the API server serves (:meth:`served_as`).
    older_versions: tuple[str, ...] = ()

    @property
    def versions(self) -> tuple[str, ...]:
        """Every version read, best first."""
        return (self.version, *self.older_versions)

    def served_as(self, served: Collection[str]) -> WatchedResource | None:
        """This kind at the best of its versions among ``served`` (the versions the API server
        lists for the group), None when it serves none of them."""
        for version in self.versions:
            if version in served:
                return replace(self, version=version, older_versions=())
        return None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def id(self) -> str:
        """``plural.group``, as a CRD is named: what ``on_object`` receives as ``kind``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def path(self) -> str:
        """The collection's path on the API server, across namespaces."""
        prefix = f"/apis/{self.group}" if self.group else "/api"
        return f"{prefix}/{self.version}/{self.plural}"


#: Jobs that started later than they were told, by why (``higher_priority``, ``node_gone``,
#: ``outlived_bound``, ``room_taken``): declared by StartTimes, which tells estimates, and fed
#: by the starvation guard too, which makes promises.
LATE_STARTS = "koordgang_start_later_than_expected"


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A metric a plugin registers: the engine makes it, and the plugin feeds it by ``name``
    (gauges through ``gauges()``, counters and histograms through ``Handle.record``)."""

    name: str
    help: str
    #: ``gauge``, ``counter`` or ``histogram``.
    kind: str
    #: At most one label (a gauge's values come as ``{label value: value}``).
    label: str = ""
    buckets: tuple[float, ...] = ()
