"""What a gang API is to the scheduler: how a pod names its gang, how its group object becomes
the one internal gang, and what status goes back, in the API's own terms."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from koordgang.framework.report import WatchedResource
from koordgang.model.gang import GangName, PodGroupInfo
from koordgang.state.gangs import Gang


class GangApi(Protocol):
    #: Short name: the API column of ``koordgang gangs`` and the ``api`` label of metrics.
    name: str
    #: The group object's resource; None for an API of pod labels and annotations only.
    resource: WatchedResource | None
    #: Other kinds of the API that group its groups (upstream's CompositePodGroup): read,
    #: and their status written through the status subresource.
    related: tuple[WatchedResource, ...]
    #: Pod annotation keys (or key prefixes) the API reads: one of the tuples of
    #: ``model/gang_keys.py``, where ``parse_pod`` finds every key it keeps.
    pod_keys: tuple[str, ...]
    #: The file under ``manifests/crds/`` (and the chart's ``files/crds/``) with the CRD of its
    #: group object, "" when the API server has the kind built in or there is none.
    crd: str
    #: The chart value under ``crds`` that installs that CRD, "" when ``crds.install`` alone
    #: does (koordgang's own API); another project's CRD has a switch of its own, for clusters
    #: where that project installed it already.
    crd_value: str

    #: How a pod names its gang in this API, first match wins (a label, an annotation, the
    #: pod's ``spec.schedulingGroup``).
    names: tuple[GangName, ...]

    def parse(self, obj: Mapping[str, Any]) -> PodGroupInfo:
        """A group object of :attr:`resource` as the internal gang's object. Never raises:
        what cannot be used becomes an issue naming the field."""

    def status(self, gang: Gang, now: float) -> dict[str, Any] | None:
        """The status to merge into the gang's group object (None: nothing to write)."""

    def awaits_enqueue(self, podgroup: PodGroupInfo) -> bool:
        """Whether the gang's client makes its pods only once the scheduler finds its
        minResources could fit (``Gang.enqueued``), and the object does not show that yet
        (after a restart it may: it is not enqueued again, and promises nothing)."""


@dataclass(frozen=True, slots=True)
class MemberCounts:
    scheduled: int
    running: int
    succeeded: int
    failed: int


def member_counts(gang: Gang) -> MemberCounts:
    scheduled = running = succeeded = failed = 0
    for pod in gang.members.values():
        if pod.node_name:
            scheduled += 1
        if pod.phase == "Running":
            running += 1
        elif pod.phase == "Succeeded":
            succeeded += 1
        elif pod.phase == "Failed":
            failed += 1
    return MemberCounts(scheduled, running, succeeded, failed)


def rfc3339(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def conditions_of(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``conditions`` of an object's status, as last read (malformed entries dropped)."""
    raw = status.get("conditions")
    if not isinstance(raw, list):
        return []
    return [c for c in raw if isinstance(c, Mapping)]


def condition(
    kind: str,
    status: str,
    reason: str,
    message: str,
    before: Sequence[Mapping[str, Any]],
    now: float,
) -> dict[str, Any]:
    """A condition as Kubernetes keeps them: it keeps the time of the last change of its
    status (``lastTransitionTime``) from ``before``, the object's conditions as last read."""
    since = next(
        (
            c.get("lastTransitionTime")
            for c in before
            if c.get("type") == kind and c.get("status") == status and c.get("lastTransitionTime")
        ),
        None,
    )
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since or rfc3339(now),
    }


def with_conditions(
    before: Sequence[Mapping[str, Any]], wanted: Mapping[str, tuple[str, str, str]], now: float
) -> dict[str, Any] | None:
    """The status patch that sets each ``wanted`` condition (type -> status, reason, message)
    among the object's conditions as last read; None when they all say so already."""
    changed = {
        kind: value
        for kind, value in wanted.items()
        if not any(
            c.get("type") == kind and (c.get("status"), c.get("reason"), c.get("message")) == value
            for c in before
        )
    }
    if not changed:
        return None
    others = [c for c in before if c.get("type") not in changed]
    made = [condition(kind, *value, before, now) for kind, value in changed.items()]
    return {"conditions": [*others, *made]}


def occupied_by(gang: Gang) -> str:
    """The controller of the gang's members (``namespace/name``), "" if they have none."""
    return next((p.owner for p in gang.members.values() if p.owner), "")
