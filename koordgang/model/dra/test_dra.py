from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from koordgang.model.dra import (
    AllocatedDevice,
    AttributeValue,
    ClaimAllocation,
    DeviceId,
    PodClaimRef,
    parse_device_class,
    parse_pod_claims,
    parse_resource_claim,
    parse_resource_slice,
)
from koordgang.model.dra.capacity import CapacityRange, DeviceCapacity, RequestPolicy
from koordgang.model.errors import ModelError
from koordgang.model.pod import parse_pod

DRIVER = "gpu.example.com"


def slice_obj(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": DRIVER,
        "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 2},
        "nodeName": "node-1",
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {
                    "model": {"string": "a100"},
                    "other.com/index": {"int": 0},
                    "driverVersion": {"version": "1.2.3+build.7"},
                },
                "capacity": {"memory": {"value": "80Gi"}},
            }
        ],
    }
    body.update(spec)
    return {"metadata": {"name": "node-1-gpus", "resourceVersion": "5"}, "spec": body}


def claim_obj(devices: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "c", "namespace": "ns", "uid": "u1", "resourceVersion": "9"},
        "spec": {"devices": devices},
        "status": status or {},
    }


class TestSlices:
    def test_attributes_are_keyed_by_fully_qualified_name(self) -> None:
        info = parse_resource_slice(slice_obj())
        attributes = info.devices[0].attributes
        assert attributes[f"{DRIVER}/model"] == AttributeValue("string", "a100")
        assert attributes["other.com/index"] == AttributeValue("int", 0)
        # Versions compare without build metadata.
        assert attributes[f"{DRIVER}/driverVersion"] == AttributeValue("version", "1.2.3")

    def test_pool_fields_are_read(self) -> None:
        info = parse_resource_slice(slice_obj())
        assert (info.pool_key, info.generation, info.slice_count, info.node_name) == (
            (DRIVER, "node-1"),
            3,
            2,
            "node-1",
        )
        assert info.unsupported == ""

    def test_a_device_mapping_node_allocatable_resources_names_the_feature(self) -> None:
        device = {"name": "d", "nodeAllocatableResourceMappings": {"cpu": {"capacityKey": "c"}}}
        info = parse_resource_slice(slice_obj(devices=[device]))
        assert "nodeAllocatableResourceMappings" in info.devices[0].unsupported

    def test_a_shared_device_is_read_with_its_capacity_and_request_policies(self) -> None:
        device = {
            "name": "d",
            "allowMultipleAllocations": True,
            "capacity": {
                "memory": {
                    "value": "80Gi",
                    "requestPolicy": {
                        "default": "10Gi",
                        "validRange": {"min": "10Gi", "max": "40Gi", "step": "10Gi"},
                    },
                },
                "example.com/bandwidth": {
                    "value": "100G",
                    "requestPolicy": {"default": "10G", "validValues": ["50G", "10G"]},
                },
                "cores": {"value": "8"},
            },
        }
        [parsed] = parse_resource_slice(slice_obj(devices=[device])).devices
        assert parsed.multiple and parsed.unsupported == ""
        memory = parsed.capacity["memory"]
        gib, gb = Fraction(2**30), Fraction(10**9)
        assert memory.value == 80 * gib
        assert memory.policy == RequestPolicy(
            10 * gib, (), CapacityRange(10 * gib, 40 * gib, 10 * gib)
        )
        bandwidth = parsed.capacity["example.com/bandwidth"].policy
        assert bandwidth is not None and bandwidth.valid_values == (10 * gb, 50 * gb)
        assert parsed.capacity["cores"] == DeviceCapacity(Fraction(8))

    @pytest.mark.parametrize(
        ("capacity", "field"),
        [
            ({"memory": {}}, "capacity[memory].value"),
            ({"memory": {"value": "lots"}}, "capacity[memory].value"),
            (
                {"memory": {"value": "1", "requestPolicy": {"validRange": {"max": "1"}}}},
                "validRange.min",
            ),
            (
                {"m": {"value": "1", "requestPolicy": {"validRange": {"min": "0", "step": "0"}}}},
                "validRange.step",
            ),
        ],
    )
    def test_bad_capacity_names_the_field(self, capacity: dict[str, Any], field: str) -> None:
        with pytest.raises(ModelError) as caught:
            parse_resource_slice(slice_obj(devices=[{"name": "d", "capacity": capacity}]))
        assert field in str(caught.value)

    def test_binding_conditions_are_read_and_the_device_is_allocatable(self) -> None:
        device = {
            "name": "d",
            "bindingConditions": ["dra.example.com/is-prepared"],
            "bindingFailureConditions": ["dra.example.com/failed"],
            "bindsToNode": True,
        }
        [parsed] = parse_resource_slice(slice_obj(devices=[device])).devices
        assert parsed.unsupported == ""
        assert parsed.binding_conditions == ("dra.example.com/is-prepared",)
        assert parsed.binding_failure_conditions == ("dra.example.com/failed",)
        assert parsed.binds_to_node

    def test_a_devices_taints_are_read_and_only_blocking_effects_block(self) -> None:
        device = {
            "name": "d",
            "taints": [
                {"key": "k", "value": "v", "effect": "None"},
                {"key": "drain", "effect": "NoSchedule"},
            ],
        }
        [parsed] = parse_resource_slice(slice_obj(devices=[device])).devices
        assert parsed.unsupported == ""
        assert [(t.key, t.value, t.effect, t.blocks) for t in parsed.taints] == [
            ("k", "v", "None", False),
            ("drain", "", "NoSchedule", True),
        ]

    def test_pools_not_local_to_one_node_keep_where_their_devices_are(self) -> None:
        spec = slice_obj(allNodes=True)
        del spec["spec"]["nodeName"]
        info = parse_resource_slice(spec)
        assert (info.unsupported, info.all_nodes, info.node_name) == ("", True, "")
        selector = {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a"]}]}
            ]
        }
        spec = slice_obj(nodeSelector=selector)
        del spec["spec"]["nodeName"]
        assert parse_resource_slice(spec).node_selector == selector
        spec = slice_obj(perDeviceNodeSelection=True)
        del spec["spec"]["nodeName"]
        spec["spec"]["devices"][0]["nodeName"] = "node-2"
        info = parse_resource_slice(spec)
        assert info.per_device and info.devices[0].node_name == "node-2"

    def test_a_slice_with_a_bad_node_selector_is_refused_naming_the_field(self) -> None:
        spec = slice_obj(
            nodeSelector={
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "rack", "operator": "Near", "values": ["a"]}]}
                ]
            }
        )
        del spec["spec"]["nodeName"]
        with pytest.raises(ModelError, match=r"spec\.nodeSelector"):
            parse_resource_slice(spec)

    def test_a_slice_without_a_pool_name_is_refused_naming_the_field(self) -> None:
        with pytest.raises(ModelError, match=r"spec\.pool\.name"):
            parse_resource_slice(slice_obj(pool={"generation": 1}))


class TestClaims:
    def test_exact_and_first_available_requests(self) -> None:
        claim = parse_resource_claim(
            claim_obj(
                {
                    "requests": [
                        {"name": "a", "exactly": {"deviceClassName": "gpu", "count": 2}},
                        {
                            "name": "b",
                            "firstAvailable": [
                                {"name": "big", "deviceClassName": "gpu-big"},
                                {"name": "small", "deviceClassName": "gpu", "count": 2},
                            ],
                        },
                    ],
                    "constraints": [{"requests": ["a"], "matchAttribute": f"{DRIVER}/model"}],
                }
            )
        )
        a, b = claim.spec.requests
        assert (a.alternatives[0].device_class, a.alternatives[0].count) == ("gpu", 2)
        assert b.first_available
        assert [b.result_name(x) for x in b.alternatives] == ["b/big", "b/small"]
        assert claim.spec.constraints[0].applies_to("a", "a")
        assert not claim.spec.constraints[0].applies_to("b", "b/big")

    def test_claims_with_equal_specs_are_equal(self) -> None:
        devices = {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu"}}]}
        one, two = (
            parse_resource_claim(claim_obj(devices)),
            parse_resource_claim(claim_obj(devices)),
        )
        assert one.spec == two.spec and hash(one.spec) == hash(two.spec)

    def test_admin_access_and_capacity_requests_are_read(self) -> None:
        claim = parse_resource_claim(
            claim_obj(
                {
                    "requests": [
                        {"name": "a", "exactly": {"deviceClassName": "gpu", "adminAccess": True}},
                        {
                            "name": "b",
                            "exactly": {
                                "deviceClassName": "gpu",
                                "capacity": {"requests": {"memory": "1Gi"}},
                            },
                        },
                    ]
                }
            )
        )
        admin = claim.spec.requests[0].alternatives[0]
        assert admin.admin_access and not admin.unsupported
        asking = claim.spec.requests[1].alternatives[0]
        assert not asking.unsupported and asking.capacity == (("memory", Fraction(2**30)),)

    def test_a_negative_capacity_request_names_the_field(self) -> None:
        request = {"deviceClassName": "gpu", "capacity": {"requests": {"memory": "-1Gi"}}}
        claim = parse_resource_claim(claim_obj({"requests": [{"name": "a", "exactly": request}]}))
        assert "capacity.requests[memory]" in claim.problem

    def test_a_share_of_a_device_is_read_and_written_back(self) -> None:
        share = AllocatedDevice(
            "a",
            DRIVER,
            "p",
            "gpu-0",
            share_id="0f5c3f5e-8a39-4bd4-9d8b-2a0a3c8d5e71",
            consumed=(("memory", Fraction(20 * 2**30)),),
        )
        allocation = ClaimAllocation.on_node("node-1", (share,), ())
        written = allocation.to_api()
        [result] = written["devices"]["results"]
        assert result["shareID"] == share.share_id
        assert result["consumedCapacity"] == {"memory": "20Gi"}
        claim = parse_resource_claim(
            {**claim_obj({"requests": []}), "status": {"allocation": written}}
        )
        assert claim.allocation is not None
        [read] = claim.allocation.devices
        assert (read.share_id, read.consumed) == (share.share_id, share.consumed)
        assert read.describe() == f"{DRIVER}/p/gpu-0 (share: memory 20Gi)"
        # A share takes the device from nobody: only its capacity counts.
        assert claim.allocation.held_ids() == () and claim.allocation.shares() == (read,)

    def test_an_allocation_is_read_with_its_node_and_consumers(self) -> None:
        allocation = ClaimAllocation.on_node(
            "node-1", (), ({"source": "FromClass", "requests": ["a"]},)
        ).to_api()
        allocation["devices"]["results"] = [
            {"request": "a", "driver": DRIVER, "pool": "node-1", "device": "gpu-0"}
        ]
        claim = parse_resource_claim(
            claim_obj(
                {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu"}}]},
                {
                    "allocation": allocation,
                    "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-1"}],
                },
            )
        )
        assert claim.allocation is not None
        assert claim.allocation.node == "node-1"
        assert claim.allocation.device_ids() == (DeviceId(DRIVER, "node-1", "gpu-0"),)
        assert claim.allocation.allows("node-1", {}) and not claim.allocation.allows("node-2", {})
        assert claim.reserved_for_uid("pod-1")

    def test_an_unreadable_spec_keeps_the_allocation_and_says_why(self) -> None:
        claim = parse_resource_claim(
            claim_obj(
                {"requests": [{"name": "a"}]},
                {
                    "allocation": {
                        "devices": {
                            "results": [
                                {"request": "a", "driver": DRIVER, "pool": "p", "device": "d"}
                            ]
                        }
                    }
                },
            )
        )
        assert "exactly and firstAvailable" in claim.problem
        assert claim.allocation is not None and claim.allocation.device_ids()


class TestClassesAndPods:
    def test_a_class_keeps_its_selectors_and_config(self) -> None:
        info = parse_device_class(
            {
                "metadata": {"name": "gpu", "resourceVersion": "1"},
                "spec": {
                    "selectors": [{"cel": {"expression": 'device.driver == "x"'}}],
                    "config": [{"opaque": {"driver": "x", "parameters": {"a": 1}}}],
                },
            }
        )
        assert info.selectors == ('device.driver == "x"',)
        assert info.config[0]["opaque"]["parameters"] == {"a": 1}

    def test_a_pod_names_its_claims_and_the_claims_made_for_it(self) -> None:
        refs, statuses = parse_pod_claims(
            {
                "resourceClaims": [
                    {"name": "gpu", "resourceClaimTemplateName": "tmpl"},
                    {"name": "shared", "resourceClaimName": "team-gpus"},
                ]
            },
            {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x1"}]},
        )
        assert refs == (PodClaimRef("gpu", "", "tmpl"), PodClaimRef("shared", "team-gpus", ""))
        assert statuses == {"gpu": "p-gpu-x1"}

    def test_a_pod_claim_naming_both_ways_is_refused(self) -> None:
        with pytest.raises(ModelError, match=r"spec\.resourceClaims\[0\]"):
            parse_pod_claims(
                {
                    "resourceClaims": [
                        {"name": "g", "resourceClaimName": "a", "resourceClaimTemplateName": "t"}
                    ]
                },
                {},
            )

    def test_pods_share_a_shape_whatever_claims_they_name(self) -> None:
        # What the claims ask for keys the DynamicResources plugin's verdicts (SHAPE_DETAIL):
        # pods whose claims are made from one template, or have equal specs, share them.
        def pod(name: str, template: str) -> Any:
            return parse_pod(
                {
                    "metadata": {"name": name, "uid": name},
                    "spec": {
                        "containers": [{"name": "c"}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
                    },
                }
            )

        assert pod("a", "t").shape == pod("b", "t").shape == pod("c", "other").shape


def test_counter_sets_and_what_devices_consume_of_them_are_read_exactly() -> None:
    from fractions import Fraction

    from koordgang.testing.builders import partitioned_gpu_json

    counters, partitions = (parse_resource_slice(obj) for obj in partitioned_gpu_json("n0"))
    [counter_set] = counters.counter_sets
    assert counter_set.name == "gpu-0"
    assert counter_set.counters == {"memory": Fraction(80 * 2**30)}
    whole, *parts = partitions.devices
    assert whole.consumes[0].counters["memory"] == Fraction(80 * 2**30)
    assert [p.consumes[0].counters["memory"] for p in parts] == [Fraction(20 * 2**30)] * 4
    assert all(not d.unsupported for d in partitions.devices)


def test_a_podgroups_claims_and_the_claims_made_for_it_are_read() -> None:
    from koordgang.model.dra import PodGroupClaims, parse_podgroup_claims

    obj = {
        "metadata": {"name": "train", "namespace": "ns", "uid": "pg-1"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 4}},
            "resourceClaims": [
                {"name": "fabric", "resourceClaimTemplateName": "channel"},
                {"name": "shared", "resourceClaimName": "team"},
            ],
        },
        "status": {"resourceClaimStatuses": [{"name": "fabric", "resourceClaimName": "t-f-1"}]},
    }
    group = parse_podgroup_claims(obj)
    assert group.made == {"fabric": "t-f-1"}
    assert group.consumer.to_api() == {
        "apiGroup": "scheduling.k8s.io",
        "resource": "podgroups",
        "name": "train",
        "uid": "pg-1",
    }
    # A member's entry is the PodGroup's only when it matches exactly, as Kubernetes matches.
    assert group.binds(PodClaimRef("fabric", template_name="channel"))
    assert group.binds(PodClaimRef("shared", claim_name="team"))
    assert not group.binds(PodClaimRef("fabric", template_name="other"))
    assert not group.binds(PodClaimRef("fabric", claim_name="t-f-1"))
    bad = parse_podgroup_claims({**obj, "spec": {"resourceClaims": [{"name": "x"}]}})
    assert isinstance(bad, PodGroupClaims) and "exactly one of" in bad.problem


def test_a_claim_made_for_a_podgroup_names_it_as_owner() -> None:
    obj = claim_obj({"requests": []})
    owner = {"kind": "PodGroup", "name": "train", "uid": "pg-1", "controller": True}
    obj["metadata"]["ownerReferences"] = [{**owner, "apiVersion": "scheduling.k8s.io/v1beta1"}]
    assert parse_resource_claim(obj).owner_podgroup == "train"
    # Another API group's PodGroup (scheduler-plugins') makes no claims.
    obj["metadata"]["ownerReferences"] = [{**owner, "apiVersion": "scheduling.x-k8s.io/v1alpha1"}]
    assert parse_resource_claim(obj).owner_podgroup == ""
