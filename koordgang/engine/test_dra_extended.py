"""DRA-backed extended resources (KEP-5004) through the engine over the fake API: a pod asking
for ``acc.example.com/gpu: 2`` gets two devices of the class that names it, on a node that has
no such allocatable, in a claim made for it as kube-scheduler makes it."""

from __future__ import annotations

from typing import Any

from koordgang.model.dra import parse_device_class
from koordgang.model.pod import PodInfo
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import (
    DRIVER,
    NS,
    device_class_json,
    gang_annotations,
    node,
    parse,
    pod_json,
    resource_slice,
    uid_of,
)
from koordgang.testing.claims import Claims
from koordgang.testing.harness import MakeScheduler

GPU = "acc.example.com/gpu"
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def acc_class(name: str = "acc", extended: str | None = GPU) -> Any:
    obj = device_class_json(name, selector=f'device.driver == "{DRIVER}"')
    if extended:
        obj["spec"]["extendedResourceName"] = extended
    return parse_device_class(obj)


def asking(name: str, amount: int = 2, resource: str = GPU, **kwargs: Any) -> PodInfo:
    return parse(pod_json(name, requests={resource: str(amount)}, **kwargs))


def made(claims: Claims) -> dict[str, dict[str, Any]]:
    """The claims made by the scheduler, by the pod that owns each."""
    return {
        obj["metadata"]["ownerReferences"][0]["name"]: obj
        for obj in claims.objects.values()
        if obj["metadata"].get("annotations", {}).get(ANNOTATION) == "true"
    }


def status_patches(api: FakeApi, pod_name: str) -> list[dict[str, Any]]:
    path = f"/api/v1/namespaces/{NS}/pods/{pod_name}/status"
    return [
        c.body["status"]["extendedResourceClaimStatus"]
        for c in api.landed()
        if c.method == "PATCH"
        and c.path == path
        and "extendedResourceClaimStatus" in c.body.get("status", {})
    ]


async def test_a_gang_of_three_gets_devices_on_nodes_without_the_allocatable(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [])
    members = [
        asking(f"w{i}", annotations=gang_annotations("train", 3), container="trainer")
        for i in range(3)
    ]
    sched.list(
        nodes=[node("n0", cpu="8"), node("n1", cpu="8")],
        pods=members,
        resource_slices=[resource_slice("n0", devices=4), resource_slice("n1", devices=2)],
        device_classes=[acc_class()],
    )
    await sched.run()
    binds = dict(api.binds())
    assert sorted(binds) == ["w0", "w1", "w2"]
    special = made(claims)
    assert sorted(special) == ["w0", "w1", "w2"]
    taken: set[tuple[str, str]] = set()
    for name, obj in special.items():
        meta = obj["metadata"]
        assert meta["name"].startswith(f"{name}-extended-resources-")
        owner = meta["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("Pod", uid_of(name), True)
        assert obj["spec"]["devices"]["requests"] == [
            {
                "name": "container-0-request-0",
                "exactly": {"deviceClassName": "acc", "allocationMode": "ExactCount", "count": 2},
            }
        ]
        allocation = obj["status"]["allocation"]
        results = allocation["devices"]["results"]
        assert [r["request"] for r in results] == ["container-0-request-0"] * 2
        node_name = allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]
        assert node_name["values"] == [binds[name]]
        taken |= {(binds[name], r["device"]) for r in results}
        assert obj["status"]["reservedFor"] == [
            {"resource": "pods", "name": name, "uid": uid_of(name)}
        ]
        assert status_patches(api, name) == [
            {
                "resourceClaimName": meta["name"],
                "requestMappings": [
                    {
                        "containerName": "trainer",
                        "resourceName": GPU,
                        "requestName": "container-0-request-0",
                    }
                ],
            }
        ]
    assert len(taken) == 6  # no device given twice


async def test_a_node_with_the_allocatable_serves_it_as_a_device_plugin_does(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [])
    sched.list(
        nodes=[node("plugin", allocatable={GPU: "2"})],
        pods=[asking("p")],
        resource_slices=[resource_slice("plugin", devices=4)],
        device_classes=[acc_class()],
    )
    await sched.run()
    assert api.binds() == [("p", "plugin")]
    assert made(claims) == {}
    assert status_patches(api, "p") == []
    # The device plugin's two are taken: the next pod does not fit there.
    sched.add(asking("q"))
    await sched.run()
    assert api.binds() == [("p", "plugin")]
    condition = api.condition("q")
    assert condition is not None
    assert f"Insufficient {GPU}" in condition["message"]


async def test_too_few_devices_bind_no_member_and_say_which_class(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [])
    members = [asking(f"w{i}", annotations=gang_annotations("train", 3)) for i in range(3)]
    sched.list(
        nodes=[node("n0", cpu="8"), node("n1", cpu="8")],
        pods=members,
        resource_slices=[resource_slice("n0", devices=2), resource_slice("n1", devices=2)],
        device_classes=[acc_class()],
    )
    await sched.run()
    assert api.binds() == []
    assert claims.objects == {}
    condition = api.condition("w2")
    assert condition is not None
    message = condition["message"]
    assert f"extended resource {GPU} (DeviceClass acc)" in message, message
    assert "wants 2 devices of class acc" in message, message


async def test_the_implicit_name_of_every_class_is_served(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    claims = Claims(api, [])
    implicit = "deviceclass.resource.kubernetes.io/acc"
    sched.list(
        nodes=[node("n0")],
        pods=[asking("p", amount=1, resource=implicit)],
        resource_slices=[resource_slice("n0", devices=1)],
        device_classes=[acc_class(extended=None)],
    )
    await sched.run()
    assert api.binds() == [("p", "n0")]
    obj = made(claims)["p"]
    request = obj["spec"]["devices"]["requests"][0]
    assert request["exactly"]["deviceClassName"] == "acc"
    assert status_patches(api, "p")[0]["requestMappings"][0]["resourceName"] == implicit


async def test_a_claim_left_from_an_earlier_attempt_is_deleted(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    left = {
        "metadata": {
            "name": "p-extended-resources-old",
            "namespace": NS,
            "uid": "uid-old",
            "resourceVersion": "7",
            "annotations": {ANNOTATION: "true"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "p",
                    "uid": uid_of("p"),
                    "controller": True,
                }
            ],
        },
        "spec": {"devices": {"requests": []}},
    }
    claims = Claims(api, [left])
    sched.list(
        nodes=[node("n0")],
        pods=[asking("p")],
        resource_slices=[resource_slice("n0", devices=2)],
        device_classes=[acc_class()],
        resource_claims=claims.infos(),
    )
    await sched.run()
    assert api.binds() == [("p", "n0")]
    assert claims.deleted == ["p-extended-resources-old"]
    assert list(made(claims)) == ["p"]


async def test_a_failed_binding_takes_back_the_claim_and_the_pod_status(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    from koordgang.clients.errors import ApiError

    sched = make_scheduler()
    claims = Claims(api, [])
    api.answer_bind("p", ApiError(500, "InternalError", "boom"))
    sched.list(
        nodes=[node("n0")],
        pods=[asking("p")],
        resource_slices=[resource_slice("n0", devices=2)],
        device_classes=[acc_class()],
    )
    await sched.run()
    assert api.binds() == []
    assert made(claims) == {}
    path = f"/api/v1/namespaces/{NS}/pods/p/status"
    undone = [
        c.body["status"]
        for c in api.landed()
        if c.method == "PATCH"
        and c.path == path
        and "extendedResourceClaimStatus" in c.body["status"]
    ]
    assert undone[-1] == {"extendedResourceClaimStatus": None}
