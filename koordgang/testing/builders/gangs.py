"""Gangs: members declared by Koordinator's annotations (``gang``, ``gang_annotations``), one
member declared any way Koordinator reads (``member``), PodGroups (``podgroup_json``,
``podgroup``), and a gang registry holding them (``registry``, ``gang_of``), which reads
Koordinator's API only (``koordinator_only``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from koordgang.model.gang import GangRef, PodGroupInfo
from koordgang.model.koordinator import (
    LIGHTWEIGHT_MIN_LABEL,
    LIGHTWEIGHT_NAME_LABEL,
    MIN_AVAILABLE_KEY,
    MODE_KEY,
    NAME_KEY,
    POD_GROUP_LABEL,
    WAITING_TIME_KEY,
    gang_ref_of,
    parse_podgroup,
)
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.state.gangs import Gang, GangRegistry
from koordgang.state.waiting import WaitingPods
from koordgang.testing.builders.pods import NS, pod, pod_json

#: A gang's waiting time when nothing sets it (``Settings.default_gang_waiting_time``).
DEFAULT_WAIT = 600.0
#: 2022-07-11T18:26:33Z; ``created`` offsets of ``member`` and ``podgroup`` count from here.
T0 = 1_657_563_993.0
PODGROUP_API = "scheduling.sigs.k8s.io/v1alpha1"


def stamp(offset: float) -> str:
    """The timestamp ``offset`` seconds after ``T0``, as the API server writes it."""
    return dt.datetime.fromtimestamp(T0 + offset, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def gang_annotations(
    gang: str, min_available: int, *, mode: str | None = None, waiting_time: str | None = None
) -> dict[str, str]:
    annotations = {NAME_KEY: gang, MIN_AVAILABLE_KEY: str(min_available)}
    if mode is not None:
        annotations[MODE_KEY] = mode
    if waiting_time is not None:
        annotations[WAITING_TIME_KEY] = waiting_time
    return annotations


def gang(
    gang: str,
    count: int,
    min_available: int,
    *,
    mode: str | None = None,
    waiting_time: str | None = None,
    cpu: str = "1",
    extra: Mapping[str, str] | None = None,
    first: int = 0,
) -> list[PodInfo]:
    """Members ``<gang>-<i>`` of gang ``ns/<gang>``, declared by Koordinator's annotations;
    ``extra`` adds annotations."""
    annotations = gang_annotations(gang, min_available, mode=mode, waiting_time=waiting_time)
    annotations.update(extra or {})
    return [
        pod(f"{gang}-{i}", cpu=cpu, annotations=annotations) for i in range(first, first + count)
    ]


def member(
    name: str,
    gang: str | None = "a",
    *,
    min_available: str | None = "2",
    how: str = "annotations",
    namespace: str = NS,
    created: float = 0,
    node: str = "",
    phase: str | None = None,
    deleting: bool = False,
    cpu: str = "1",
    priority: int | None = None,
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    owner: str | None = None,
) -> PodInfo:
    """One of our pods, declared a member of ``gang`` the ``how`` way ("podgroup", "labels"
    or "annotations"; ``gang=None`` makes an ordinary pod), created ``created`` seconds after
    ``T0``; Running once on a ``node``. ``min_available=None`` leaves the minimum out; a
    PodGroup gang takes it from its PodGroup. Every annotation is kept (none is filtered)."""
    pod_labels: dict[str, str] = {}
    pod_annotations: dict[str, str] = {}
    if gang is not None:
        if how == "podgroup":
            pod_labels[POD_GROUP_LABEL] = gang
        elif how == "labels":
            pod_labels[LIGHTWEIGHT_NAME_LABEL] = gang
            if min_available is not None:
                pod_labels[LIGHTWEIGHT_MIN_LABEL] = min_available
        elif how == "annotations":
            pod_annotations[NAME_KEY] = gang
            if min_available is not None:
                pod_annotations[MIN_AVAILABLE_KEY] = min_available
        else:
            raise ValueError(how)
    pod_labels.update(labels or {})
    pod_annotations.update(annotations or {})
    return parse_pod(
        pod_json(
            name,
            namespace=namespace,
            cpu=cpu,
            node_name=node,
            phase=phase or ("Running" if node else "Pending"),
            created=stamp(created),
            labels=pod_labels,
            annotations=pod_annotations,
            priority=priority,
            deleted=stamp(created + 1000) if deleting else None,
            owner=owner,
            container="c",
        )
    )


def podgroup_json(
    name: str = "a",
    min_member: int | None = 2,
    *,
    spec: Mapping[str, Any] | None = None,
    namespace: str = NS,
    created: float = 0,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A PodGroup of scheduler-plugins' API; ``spec`` replaces the one ``min_member`` makes
    (``None``: no minMember)."""
    if spec is None:
        spec = {} if min_member is None else {"minMember": min_member}
    return {
        "apiVersion": PODGROUP_API,
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"pg-{name}",
            "resourceVersion": "1",
            "creationTimestamp": stamp(created),
            "annotations": dict(annotations or {}),
        },
        "spec": dict(spec),
    }


def podgroup(name: str = "a", min_member: int | None = 2, **kwargs: Any) -> PodGroupInfo:
    """``podgroup_json``'s PodGroup, parsed; takes its keywords."""
    return parse_podgroup(podgroup_json(name, min_member, **kwargs))


def koordinator_only(pod: PodInfo) -> Sequence[GangRef]:
    """A gang resolver of Koordinator's API alone: the gang a pod names there, if any."""
    ref = gang_ref_of(pod.namespace, pod.labels, pod.annotations)
    return () if ref is None else (ref,)


def registry(
    *pods: PodInfo, podgroups: tuple[PodGroupInfo, ...] = (), waiting: WaitingPods | None = None
) -> GangRegistry:
    """A gang registry that has seen these PodGroups, then these pods."""
    gangs = GangRegistry(DEFAULT_WAIT, waiting, resolve=koordinator_only)
    for pg in podgroups:
        gangs.on_podgroup(pg)
    for info in pods:
        gangs.on_pod(info)
    return gangs


def gang_of(gangs: GangRegistry, key: str = "ns/a") -> Gang:
    found = gangs.get(key)
    assert found is not None, f"no gang {key}"
    return found
