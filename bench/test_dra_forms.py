"""The ``dra-forms`` scenario's objects, and its checker on objects written by hand as a
scheduler and the API server would leave them."""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest

from bench.dra_check import Objects
from bench.dra_forms_check import FormsObjects, check, quantity
from bench.gang_api import GangApi, pod_groups
from bench.scenarios import select

NS = "bench-ns"


def _workload() -> Any:
    return select("dra-forms")[0].build(0.02)


def test_every_node_has_a_pool_of_counters_and_devices_drawing_on_them() -> None:
    workload = _workload()
    plan = workload.dra
    node = workload.nodes[0].name
    counters, gpus = (s["spec"] for s in plan.slices[:2])
    assert counters["nodeName"] == gpus["nodeName"] == node
    assert (
        counters["pool"]
        == gpus["pool"]
        == {
            "name": node,
            "generation": 1,
            "resourceSliceCount": 2,
        }
    )
    assert "devices" not in counters and "sharedCounters" not in gpus
    sets = {c["name"]: c["counters"]["memory"]["value"] for c in counters["sharedCounters"]}
    assert sets == {f"gpu-{g}": "80Gi" for g in range(4)}
    draws: dict[str, int] = {}
    for device in gpus["devices"]:
        (use,) = device["consumesCounters"]
        if device["attributes"]["profile"]["string"] == "part":
            draws[use["counterSet"]] = draws.get(use["counterSet"], 0) + quantity(
                use["counters"]["memory"]["value"]
            )
    # The partitions of a GPU together draw exactly its memory.
    assert draws == {f"gpu-{g}": 80 * 2**30 for g in range(4)}
    fabric = plan.slices[-1]["spec"]
    assert fabric["allNodes"] is True and "nodeName" not in fabric


def test_pods_ask_in_three_forms_and_upstream_podgroups_name_their_gangs_claim() -> None:
    workload = _workload()
    manifests = {p.name: p.manifest() for p in workload.pods}
    ext = manifests["dra-ext-00000"]["spec"]["containers"][0]["resources"]
    assert ext["limits"] == {"gpu.example.com/gpu": "1"}
    assert "resourceClaims" not in manifests["dra-ext-00000"]["spec"]
    member = manifests["dra-pg-000-0003"]["spec"]["resourceClaims"]
    assert member == [
        {"name": "part", "resourceClaimName": "dra-pg-000-0003-part"},
        {"name": "fabric", "resourceClaimName": "dra-pg-000-fabric"},
    ]
    (group, *_) = pod_groups(workload.gangs, GangApi.UPSTREAM, (), workload.dra.group_claims)
    assert group["spec"]["resourceClaims"] == [
        {"name": "fabric", "resourceClaimName": "dra-pg-000-fabric"}
    ]
    # Other gang APIs have no such field: the members share a claim they all name.
    (other, *_) = pod_groups(workload.gangs, GangApi.VOLCANO, (), workload.dra.group_claims)
    assert "resourceClaims" not in other["spec"]
    classes = {c["metadata"]["name"]: c["spec"] for c in workload.dra.device_classes}
    assert classes["whole.gpu.example.com"]["extendedResourceName"] == "gpu.example.com/gpu"
    names = [c["metadata"]["name"] for c in workload.dra.claim_bodies]
    assert names.count("dra-pg-000-fabric") == 1


# -- the checker, on a small cluster written out by hand ----------------------------------------


def _slices() -> list[dict[str, Any]]:
    pool = {"name": "n1", "generation": 1, "resourceSliceCount": 2}
    draws = [
        ("gpu-0", "whole", "80Gi"),
        ("gpu-0-part-0", "part", "40Gi"),
        ("gpu-0-part-1", "part", "40Gi"),
    ]
    devices = [
        {
            "name": name,
            "attributes": {"profile": {"string": profile}},
            "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": gi}}}],
        }
        for name, profile, gi in draws
    ]
    devices.append(
        {
            "name": "gpu-1",
            "attributes": {"profile": {"string": "whole"}},
            "consumesCounters": [
                {"counterSet": "gpu-1", "counters": {"memory": {"value": "80Gi"}}}
            ],
        }
    )
    counters = [{"name": f"gpu-{g}", "counters": {"memory": {"value": "80Gi"}}} for g in range(2)]
    base = {"driver": "gpu.example.com", "nodeName": "n1", "pool": pool}
    fabric = {
        "driver": "fabric.example.com",
        "allNodes": True,
        "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "channel-0"}],
    }
    return [
        {"spec": {**base, "sharedCounters": counters}},
        {"spec": {**base, "devices": devices}},
        {"spec": fabric},
    ]


def _pod(name: str, uid: str, claims: dict[str, str], **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeName": "n1",
        "containers": [{"name": "main", "resources": {"requests": {}}}],
        "resourceClaims": [{"name": k, "resourceClaimName": v} for k, v in claims.items()],
    }
    spec.update(extra)
    return {"metadata": {"name": name, "uid": uid, "namespace": NS}, "spec": spec}


def _claim(
    name: str, device: tuple[str, str, str], reserved: list[dict[str, str]], **meta: Any
) -> dict[str, Any]:
    driver, pool, dev = device
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "finalizers": ["resource.kubernetes.io/delete-protection"],
            **meta,
        },
        "spec": {"devices": {"requests": [{"name": "dev"}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": "dev", "driver": driver, "pool": pool, "device": dev}]
                }
            },
            "reservedFor": reserved,
        },
    }


def _cluster() -> FormsObjects:
    """A member of PodGroup ``g`` with a partition and the PodGroup's fabric channel, and a pod
    given a whole GPU for the extended resource: everything as it must be."""
    member = _pod(
        "m0",
        "u-m0",
        {"part": "m0-part", "fabric": "g-fabric"},
        schedulingGroup={"podGroupName": "g"},
    )
    ext = _pod("e0", "u-e0", {})
    ext["spec"]["containers"][0]["resources"]["requests"]["gpu.example.com/gpu"] = "1"
    ext["status"] = {
        "extendedResourceClaimStatus": {
            "resourceClaimName": "e0-extended-resources-abcde",
            "requestMappings": [
                {
                    "containerName": "main",
                    "resourceName": "gpu.example.com/gpu",
                    "requestName": "dev",
                }
            ],
        }
    }
    group = {
        "metadata": {"name": "g", "uid": "u-g"},
        "spec": {"resourceClaims": [{"name": "fabric", "resourceClaimName": "g-fabric"}]},
    }
    claims = [
        _claim(
            "m0-part",
            ("gpu.example.com", "n1", "gpu-0-part-0"),
            [{"resource": "pods", "name": "m0", "uid": "u-m0"}],
        ),
        _claim(
            "g-fabric",
            ("fabric.example.com", "fabric", "channel-0"),
            [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g", "uid": "u-g"}],
        ),
        _claim(
            "e0-extended-resources-abcde",
            ("gpu.example.com", "n1", "gpu-1"),
            [{"resource": "pods", "name": "e0", "uid": "u-e0"}],
            annotations={"resource.kubernetes.io/extended-resource-claim": "true"},
            ownerReferences=[{"kind": "Pod", "name": "e0", "uid": "u-e0"}],
        ),
    ]
    nodes = [{"metadata": {"name": "n1"}}, {"metadata": {"name": "n2"}}]
    return FormsObjects(Objects([member, ext], claims, _slices(), nodes), [group])


def _check(objects: FormsObjects) -> list[str]:
    return check(objects, NS, ["m0", "e0"], {"g": ["m0"]})


def test_a_cluster_as_the_api_has_it_passes() -> None:
    assert _check(_cluster()) == []


def _claim_named(objects: FormsObjects, name: str) -> dict[str, Any]:
    found = next(c for c in objects.base.claims if c["metadata"]["name"] == name)
    return cast(dict[str, Any], found)


def test_a_whole_gpu_given_beside_its_partition_overdraws_the_counter_set() -> None:
    objects = copy.deepcopy(_cluster())
    claim = _claim_named(objects, "e0-extended-resources-abcde")
    claim["status"]["allocation"]["devices"]["results"][0]["device"] = "gpu-0"
    (problem,) = _check(objects)
    assert "counter sets overdrawn" in problem and "120Gi of 80Gi" in problem


def test_a_podgroup_claim_reserved_for_its_pod_instead_of_the_podgroup_fails() -> None:
    objects = copy.deepcopy(_cluster())
    claim = _claim_named(objects, "g-fabric")
    claim["status"]["reservedFor"] = [{"resource": "pods", "name": "m0", "uid": "u-m0"}]
    (problem,) = _check(objects)
    assert "not reserved as they must be" in problem and "g-fabric" in problem


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda pod, claim: pod.pop("status"), "without their extended-resource claim"),
        (
            lambda pod, claim: claim["metadata"].pop("annotations"),
            "without resource.kubernetes.io/extended-resource-claim",
        ),
        (
            lambda pod, claim: claim["metadata"].update(ownerReferences=[]),
            "not owned by their pod",
        ),
        (
            lambda pod, claim: claim["status"]["allocation"]["devices"]["results"][0].update(
                device="gpu-0-part-1"
            ),
            "devices of another class",
        ),
    ],
)
def test_an_extended_resource_claim_must_be_made_for_its_pod_and_give_a_whole_gpu(
    change: Any, expected: str
) -> None:
    objects = copy.deepcopy(_cluster())
    pod = next(p for p in objects.base.pods if p["metadata"]["name"] == "e0")
    change(pod, _claim_named(objects, "e0-extended-resources-abcde"))
    problems = _check(objects)
    assert any(expected in p for p in problems), problems


def test_a_partition_on_another_node_and_an_unbound_member_are_named() -> None:
    objects = copy.deepcopy(_cluster())
    member = next(p for p in objects.base.pods if p["metadata"]["name"] == "m0")
    member["spec"]["nodeName"] = "n2"
    problems = _check(objects)
    assert any("not on their pod's node" in p for p in problems), problems
    member["spec"]["nodeName"] = ""
    problems = _check(objects)
    assert any("pods not bound" in p for p in problems)
    assert any("gangs not whole" in p for p in problems)
