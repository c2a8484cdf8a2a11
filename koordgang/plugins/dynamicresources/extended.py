"""DRA-backed extended resources (KEP-5004), as kube-scheduler serves them: a pod's request for
an extended resource that a DeviceClass provides is, on a node without that resource as
allocatable, a request for that many devices of the class (``ExactCount``), in a claim the
scheduler makes for the pod (the *special claim*). It is allocated with the pod's claims, by the
same allocator, so a gang gets its devices all together or not at all.

Until it is made, the special claim goes by a key of its own (``pending_key``): its allocation is
in flight under that key, and the DRA manager drops it once the claim made shows its allocation.
PreBind makes it (``generateName: <pod>-extended-resources-``, annotated, owned by the pod),
writes its allocation with the pod in ``reservedFor``, then names it in the pod's
``status.extendedResourceClaimStatus``; special claims left from an earlier attempt are
deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.framework.prebind import ObjectWrite, PatchStep
from koordgang.model.dra import (
    API_VERSION,
    CLAIM_FINALIZER,
    EXTENDED_CLAIM_ANNOTATION,
    EXTENDED_CLAIM_SUFFIX,
    ClaimAllocation,
    ClaimSpec,
    Consumer,
    ContainerRequests,
    RequestMapping,
    ResourceClaimInfo,
    claim_spec,
    may_be_extended,
    requests_and_mappings,
)
from koordgang.model.node import NodeInfo
from koordgang.model.objects import ObjectRef
from koordgang.model.pod import PodInfo
from koordgang.model.time import format_rfc3339
from koordgang.state.dra import DraManager

__all__ = [
    "ExtendedClaim",
    "ExtendedResources",
    "create_write",
    "delete_write",
    "stale_claims",
]

_CACHE_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class ExtendedClaim:
    """The special claim a pod needs on a node: its ``spec.devices`` (JSON and parsed), and
    which container's request for which resource each of its requests serves."""

    devices: Mapping[str, Any]
    spec: ClaimSpec
    mappings: tuple[RequestMapping, ...]
    #: Request name -> the extended resource it serves (for messages).
    resources: Mapping[str, str]


class ExtendedResources:
    """Which extended resources of a pod DeviceClasses provide, and the special claim a node
    needs for them (worked out once per kind of pod and set of resources)."""

    def __init__(self) -> None:
        self._claims: dict[
            tuple[tuple[ContainerRequests, ...], tuple[tuple[str, str], ...]], ExtendedClaim
        ] = {}

    @staticmethod
    def wanted(pod: PodInfo, dra: DraManager) -> dict[str, str]:
        """The extended resources the pod asks for that a DeviceClass provides -> the class."""
        found: dict[str, str] = {}
        for name in pod.requests.names():
            if not may_be_extended(name) or not pod.requests.get(name):
                continue
            device_class = dra.extended_class(name)
            if device_class is not None:
                found[name] = device_class
        return found

    def on_node(
        self, pod: PodInfo, wanted: Mapping[str, str], info: NodeInfo | None
    ) -> ExtendedClaim | None:
        """The special claim ``pod`` needs on a node (``info``): for the resources ``wanted``
        that the node lacks as allocatable (those it has come from a device plugin, as
        before). None when it needs none."""
        if info is None:
            return None
        through_dra = tuple(
            sorted((name, cls) for name, cls in wanted.items() if info.allocatable.get(name) == 0)
        )
        if not through_dra:
            return None
        key = (pod.extended_containers, through_dra)
        found = self._claims.get(key)
        if found is None:
            found = self._make(pod.extended_containers, dict(through_dra))
            if len(self._claims) >= _CACHE_LIMIT:
                self._claims.clear()
            self._claims[key] = found
        return found if found.spec.requests else None

    @staticmethod
    def _make(
        containers: tuple[ContainerRequests, ...], classes: Mapping[str, str]
    ) -> ExtendedClaim:
        requests, mappings = requests_and_mappings(containers, classes)
        devices = {"requests": [r.to_api() for r in requests]}
        return ExtendedClaim(
            devices,
            claim_spec({"devices": devices}),
            mappings,
            {r.name: r.resource for r in requests},
        )


def _claims_path(namespace: str) -> str:
    return f"/apis/{API_VERSION}/namespaces/{namespace}/resourceclaims"


def _pod_status_path(pod: PodInfo) -> str:
    return f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"


def create_write(
    pod: PodInfo, claim: ExtendedClaim, allocation: ClaimAllocation, wall: float
) -> ObjectWrite:
    """Makes the pod's special claim, as kube-scheduler makes it, with its allocation and the
    pod in ``reservedFor``; then names it in the pod's ``status.extendedResourceClaimStatus``.
    Undone: the pod's status entry cleared, the claim's allocation taken back and the claim
    deleted."""
    body = {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {
            "generateName": f"{pod.name}{EXTENDED_CLAIM_SUFFIX}",
            "namespace": pod.namespace,
            "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod.name,
                    "uid": pod.uid,
                    "controller": True,
                }
            ],
        },
        "spec": {"devices": dict(claim.devices)},
    }
    written = allocation.to_api()
    written["allocationTimestamp"] = format_rfc3339(wall)
    steps = (
        PatchStep(
            {"metadata": {"finalizers": [CLAIM_FINALIZER]}},
            {"metadata": {"finalizers": None}},
            what="add finalizer",
        ),
        PatchStep(
            {
                "status": {
                    "allocation": written,
                    "reservedFor": [Consumer("pods", pod.name, pod.uid).to_api()],
                }
            },
            {"status": {"allocation": None, "reservedFor": None}},
            "status",
            "write allocation",
        ),
    )
    mappings = [m.to_api() for m in claim.mappings]

    def name_it(name: str) -> tuple[ObjectWrite, ...]:
        status = {"resourceClaimName": name, "requestMappings": mappings}
        step = PatchStep(
            {"status": {"extendedResourceClaimStatus": status}},
            {"status": {"extendedResourceClaimStatus": None}},
            "status",
            "write extendedResourceClaimStatus",
        )
        ref = ObjectRef("Pod", pod.namespace, pod.name, pod.uid, "v1")
        return (ObjectWrite(ref, _pod_status_path(pod), "", (step,), (pod.uid,)),)

    ref = ObjectRef(
        "ResourceClaim", pod.namespace, f"{pod.name}{EXTENDED_CLAIM_SUFFIX}", "", API_VERSION
    )
    return ObjectWrite(
        ref, _claims_path(pod.namespace), "", steps, (pod.uid,), create=body, then=name_it
    )


def delete_write(claim: ResourceClaimInfo, pod: PodInfo) -> ObjectWrite:
    """Deletes a special claim left from an earlier attempt of ``pod``: its finalizer first
    (nobody else removes it while it names the pod), then the claim."""
    steps: tuple[PatchStep, ...] = ()
    others = [f for f in claim.finalizers if f != CLAIM_FINALIZER]
    if len(others) != len(claim.finalizers):
        steps = (
            PatchStep(
                {"metadata": {"finalizers": others or None}},
                what="remove finalizer",
            ),
        )
    ref = ObjectRef("ResourceClaim", claim.namespace, claim.name, claim.uid, API_VERSION)
    path = f"{_claims_path(claim.namespace)}/{claim.name}"
    return ObjectWrite(ref, path, claim.resource_version, steps, (pod.uid,), delete=True)


def stale_claims(pod: PodInfo, dra: DraManager) -> list[ResourceClaimInfo]:
    """Special claims of ``pod`` from earlier attempts (every one there is while it is being
    placed: the one for this attempt is made at PreBind)."""
    return [c for c in dra.extended_claims_of(pod.namespace, pod.uid) if not c.deleting]
