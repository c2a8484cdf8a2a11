"""Pods as the API server returns them (``pod_json``) and as the pod informer parses them
(``pod``). Every builder takes keyword arguments for what a test cares about; the rest has
a plain default (one container asking for 1 cpu, ours, Pending, in namespace ``ns``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from koordgang.model.pod import PodInfo, parse_pod

#: The scheduler name our pods ask for (the default profile's).
SCHEDULER = "koord-scheduler"
NS = "ns"
CREATED = "2024-01-01T00:00:00Z"


def uid_of(name: str, namespace: str = NS) -> str:
    return f"uid-{namespace}-{name}"


def pod_json(
    name: str,
    *,
    namespace: str = NS,
    uid: str | None = None,
    cpu: str | None = "1",
    requests: Mapping[str, str] | None = None,
    scheduler: str | None = SCHEDULER,
    node_name: str = "",
    phase: str = "Pending",
    created: str = CREATED,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    gates: Sequence[str] = (),
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] | None = None,
    affinity: Mapping[str, Any] | None = None,
    priority: int | None = None,
    preemption_policy: str | None = None,
    claims: Mapping[str, str] | None = None,
    deleted: str | None = None,
    owner: str | None = None,
    container: str = "main",
) -> dict[str, Any]:
    """``cpu=None`` asks for no cpu; ``requests`` adds other resources; ``claims`` maps the
    pod's names of ResourceClaims to the claims (``resourceClaimName``); ``deleted`` is the
    deletion timestamp of a terminating pod; ``owner`` names the Job that controls it."""
    wanted = dict(requests or {})
    if cpu is not None:
        wanted["cpu"] = cpu
    spec: dict[str, Any] = {
        "containers": [{"name": container, "resources": {"requests": wanted}}],
    }
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    if priority is not None:
        spec["priority"] = priority
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    if node_name:
        spec["nodeName"] = node_name
    if gates:
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations is not None:
        spec["tolerations"] = [dict(toleration) for toleration in tolerations]
    if affinity is not None:
        spec["affinity"] = dict(affinity)
    if claims:
        spec["resourceClaims"] = [
            {"name": local, "resourceClaimName": claim} for local, claim in claims.items()
        ]
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or uid_of(name, namespace),
        "resourceVersion": "1",
        "creationTimestamp": created,
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
    }
    if deleted is not None:
        metadata["deletionTimestamp"] = deleted
    if owner is not None:
        metadata["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": owner, "controller": True}
        ]
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


def parse(obj: Mapping[str, Any]) -> PodInfo:
    """As the pod informer parses what it receives."""
    return parse_pod(obj)


def pod(name: str, **kwargs: Any) -> PodInfo:
    """``pod_json``'s pod, parsed; takes its keywords."""
    return parse(pod_json(name, **kwargs))


def bound(info: PodInfo, node_name: str) -> PodInfo:
    """``info`` as the informer shows it once bound."""
    return replace(info, node_name=node_name, resource_version="2")
