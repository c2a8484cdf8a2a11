"""ResourceClaims as the API server keeps them, for engine tests over the fake API: ``Claims``
keeps each claim's JSON, applies merge patches the way the API server does (refusing one whose
resourceVersion is stale with a 409), and hands what it holds to the intake as the claim
informer would."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable
from typing import Any

from koordgang.clients.errors import ApiError
from koordgang.model.dra import ResourceClaimInfo, parse_resource_claim
from koordgang.model.pod import PodInfo
from koordgang.testing.api import Call, FakeApi
from koordgang.testing.builders import DRIVER, NS, pod
from koordgang.testing.harness import Harness

__all__ = ["CLAIMS_PATH", "Claims", "allocated_devices", "claim_writes", "gpu_pod", "merge"]

CLAIMS_PATH = f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims/"


def gpu_pod(name: str, claim: str, **kwargs: Any) -> PodInfo:
    return pod(name, claims={"gpu": claim}, **kwargs)


def merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """A JSON merge patch (RFC 7386)."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class Claims:
    """ResourceClaims as the API server keeps them."""

    def __init__(self, api: FakeApi, objects: Iterable[dict[str, Any]]) -> None:
        self.api = api
        self.objects = {obj["metadata"]["name"]: obj for obj in objects}
        self.versions = itertools.count(100)
        self._made = itertools.count()
        #: Names of the claims deleted, in order.
        self.deleted: list[str] = []
        for name in self.objects:
            self._answer(name)
        api.answer("POST", CLAIMS_PATH.rstrip("/"), self._create)

    def _answer(self, name: str) -> None:
        for suffix in ("", "/status"):
            self.api.answer("PATCH", CLAIMS_PATH + name + suffix, self._patch)
        self.api.answer("DELETE", CLAIMS_PATH + name, self._delete)

    def _create(self, call: Call) -> dict[str, Any]:
        """A POST of a claim, named from its ``generateName`` as the API server names it
        (the status it carries is dropped)."""
        obj = copy.deepcopy(call.body)
        metadata = obj.setdefault("metadata", {})
        number = next(self._made)
        name = metadata.get("name") or f"{metadata['generateName']}{number:05x}"
        if name in self.objects:
            raise ApiError(409, "AlreadyExists", f"resourceclaims {name} already exists")
        metadata.update(
            name=name,
            uid=f"uid-made-{number}",
            resourceVersion=str(next(self.versions)),
        )
        obj.pop("status", None)
        self.objects[name] = obj
        self._answer(name)
        return copy.deepcopy(obj)

    def _delete(self, call: Call) -> dict[str, Any]:
        name = call.path.removeprefix(CLAIMS_PATH)
        if name not in self.objects:
            raise ApiError(404, "NotFound", f"resourceclaims {name} not found")
        self.deleted.append(name)
        return self.objects.pop(name)

    def infos(self) -> list[ResourceClaimInfo]:
        return [parse_resource_claim(obj) for obj in self.objects.values()]

    def _patch(self, call: Call) -> dict[str, Any]:
        name = call.path.removeprefix(CLAIMS_PATH).removesuffix("/status")
        obj = self.objects[name]
        wanted = call.body.get("metadata", {}).get("resourceVersion")
        if wanted and wanted != obj["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f"the object has been modified: {name}")
        body = copy.deepcopy(call.body)
        body.get("metadata", {}).pop("resourceVersion", None)
        if call.path.endswith("/status"):
            status = copy.deepcopy(obj.get("status") or {})
            merge(status, body.get("status") or {})
            # As the API server validates it: consumers only of an allocated claim, and 256
            # of them at most.
            reserved = status.get("reservedFor") or []
            if reserved and not status.get("allocation"):
                raise ApiError(
                    422,
                    "Invalid",
                    "status.reservedFor: Forbidden: may not be "
                    "specified when `allocated` is not set",
                )
            if len(reserved) > 256:
                raise ApiError(422, "Invalid", "status.reservedFor: Too many")
            obj["status"] = status
        else:
            body.pop("status", None)
            merge(obj, body)
        obj["metadata"]["resourceVersion"] = str(next(self.versions))
        return copy.deepcopy(obj)

    def observe(self, sched: Harness) -> None:
        """What the claim informer delivers after the writes."""
        for info in self.infos():
            sched.intake.kind("resourceclaims").upsert(info)

    def set_allocation(
        self, name: str, node_name: str, devices: list[str], reserved_for: list[str]
    ) -> None:
        obj = self.objects[name]
        obj["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpus", "driver": DRIVER, "pool": node_name, "device": d}
                        for d in devices
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node_name]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [
                {"resource": "pods", "name": u, "uid": f"uid-{NS}-{u}"} for u in reserved_for
            ],
        }
        obj["metadata"]["resourceVersion"] = str(next(self.versions))


def claim_writes(api: FakeApi) -> list[Call]:
    return [c for c in api.landed() if c.method == "PATCH" and c.path.startswith(CLAIMS_PATH)]


def allocated_devices(claims: Claims) -> dict[str, tuple[str, list[str]]]:
    """claim -> (node of its allocation, devices)."""
    found = {}
    for name, obj in claims.objects.items():
        allocation = (obj.get("status") or {}).get("allocation")
        if allocation:
            node_name = allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0][
                "values"
            ][0]
            found[name] = (node_name, [r["device"] for r in allocation["devices"]["results"]])
    return found
