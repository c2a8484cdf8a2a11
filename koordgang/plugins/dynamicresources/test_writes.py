"""The writes a claim gets before its pods bind, and how a conflict is found."""

from __future__ import annotations

from typing import Any

from koordgang.model.dra import (
    CLAIM_FINALIZER,
    AllocatedDevice,
    ClaimAllocation,
    DeviceId,
    parse_resource_claim,
    parse_resource_slice,
)
from koordgang.model.pod import PodInfo
from koordgang.plugins.dynamicresources.writes import conflict, give_back, reserve
from koordgang.state.dra import DraManager


def claim(status: dict[str, Any] | None = None, finalizers: list[str] | None = None) -> Any:
    return parse_resource_claim(
        {
            "metadata": {
                "name": "c",
                "namespace": "ns",
                "uid": "cu",
                "resourceVersion": "7",
                "finalizers": finalizers or [],
            },
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "g"}}]}},
            "status": status or {},
        }
    )


ALLOCATION = ClaimAllocation.on_node("n1", (AllocatedDevice("r", "d.io", "n1", "dev-0"),), ())


def test_a_fresh_allocation_adds_the_finalizer_first_then_allocation_and_consumer() -> None:
    write = reserve(claim(), [PodInfo(name="p", namespace="ns", uid="pu")], ALLOCATION, 0.0)
    assert write is not None
    assert write.resource_version == "7"
    assert write.path == "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c"
    finalizer, status = write.steps
    assert finalizer.patch == {"metadata": {"finalizers": [CLAIM_FINALIZER]}}
    assert finalizer.undo == {"metadata": {"finalizers": None}}
    assert status.subresource == "status"
    written = status.patch["status"]
    assert written["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "pu"}]
    assert written["allocation"]["devices"]["results"][0]["device"] == "dev-0"
    assert written["allocation"]["allocationTimestamp"] == "1970-01-01T00:00:00Z"
    assert status.undo == {"status": {"reservedFor": None, "allocation": None}}


def test_a_shared_claim_only_gains_a_consumer_and_its_undo_keeps_the_others() -> None:
    shared = claim(
        {
            "allocation": ALLOCATION.to_api(),
            "reservedFor": [{"resource": "pods", "name": "a", "uid": "au"}],
        },
        finalizers=[CLAIM_FINALIZER],
    )
    write = reserve(shared, [PodInfo(name="b", namespace="ns", uid="bu")], None, 0.0)
    assert write is not None
    [step] = write.steps
    assert "allocation" not in step.patch["status"]
    assert [c["uid"] for c in step.patch["status"]["reservedFor"]] == ["au", "bu"]
    assert step.undo == {
        "status": {"reservedFor": [{"resource": "pods", "name": "a", "uid": "au"}]}
    }


def test_nothing_is_written_for_pods_the_claim_is_reserved_for_already() -> None:
    done = claim(
        {
            "allocation": ALLOCATION.to_api(),
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "pu"}],
        },
        finalizers=[CLAIM_FINALIZER],
    )
    assert reserve(done, [PodInfo(name="p", namespace="ns", uid="pu")], None, 0.0) is None


def test_giving_a_claim_back_clears_allocation_and_consumers_only() -> None:
    write = give_back(claim(), PodInfo(name="p", namespace="ns", uid="pu"))
    [step] = write.steps
    assert step.patch == {"status": {"allocation": None, "reservedFor": None}}
    assert step.subresource == "status" and write.pods == ("pu",)


def test_a_device_held_by_another_claim_is_a_conflict_named_with_both() -> None:
    ledger = DraManager()
    ledger.upsert_slice(
        parse_resource_slice(
            {
                "metadata": {"name": "s"},
                "spec": {
                    "driver": "d.io",
                    "nodeName": "n1",
                    "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "dev-0"}],
                },
            }
        )
    )
    mine = {"ns/c": ALLOCATION}
    assert conflict(mine, ledger) == ""
    ledger.assume("pu", mine)
    assert conflict(mine, ledger) == ""
    theirs = {
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "g"}}]}},
        "status": {"allocation": ALLOCATION.to_api()},
    }
    ledger.upsert_claim(parse_resource_claim(theirs))
    message = conflict(mine, ledger)
    assert str(DeviceId("d.io", "n1", "dev-0")) in message and "resourceclaim ns/t" in message
