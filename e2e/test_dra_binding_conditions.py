"""Devices with binding conditions (DRADeviceBindingConditions, 1.37) on the real API server:
the gang's claims are allocated and written, its pods wait unbound, told what for, until the
driver (the test) sets the binding condition True on every claim's device."""

from __future__ import annotations

from typing import Any

from harness.daemon import Daemon
from harness.dra import GROUP, VERSION, Devices, allocated_devices, claim, with_claims
from harness.gangs import GangBook, holds, members, wait_bound
from harness.kube import Cluster, wait_until

READY = "dra.example.com/is-prepared"


def publish_prepared(devices: Devices, node: str) -> None:
    """Two devices on ``node`` that bind only once prepared."""
    name = f"{node}-{devices.driver}"
    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": devices.driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"dev-{i}",
                    "bindingConditions": [READY],
                    "bindingFailureConditions": ["dra.example.com/failed"],
                }
                for i in range(2)
            ],
        },
    }
    devices.custom.create_cluster_custom_object(GROUP, VERSION, "resourceslices", body)
    devices.slices.append(name)


def prepare(devices: Devices, namespace: str, obj: dict[str, Any]) -> None:
    """The driver: the binding condition True on the claim's device."""
    [(driver, pool, device)] = allocated_devices(obj)
    condition = {
        "type": READY,
        "status": "True",
        "reason": "Prepared",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    patch = {
        "status": {
            "devices": [
                {"driver": driver, "pool": pool, "device": device, "conditions": [condition]}
            ]
        }
    }
    name = obj["metadata"]["name"]
    devices.custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "resourceclaims", name, patch
    )


def test_a_gang_binds_once_the_driver_prepared_every_device(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    devices: Devices,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    [node] = cluster.add_nodes(["bc-0"], {"cpu": "8", "memory": "32Gi"})
    devices.create_class()
    publish_prepared(devices, node)
    gang = gang_book.gang("bc", 2, way="podgroup")
    gang_book.create_podgroup(gang)
    names = [f"bc-claim-{i}" for i in range(2)]
    for i, name in enumerate(names):
        devices.create_claim(namespace, name, 1)
        cluster.create_pod(
            namespace, with_claims(gang.pod(i), {"gpus": {"resourceClaimName": name}})
        )

    objs = wait_until(
        lambda: (
            (found := [claim(cluster, namespace, n) for n in names])
            and all(allocated_devices(o) for o in found)
            and found
        ),
        timeout=60,
        what="both claims allocated",
    )
    assert objs is not None
    for obj in objs:
        allocation = obj["status"]["allocation"]
        assert allocation["devices"]["results"][0]["bindingConditions"] == [READY]
        assert allocation["allocationTimestamp"]
    holds(
        lambda: not any(p.spec.node_name for p in members(cluster, gang)),
        2,
        what="no member bound before its device is prepared",
    )
    pod = members(cluster, gang)[0]
    [scheduled] = [c for c in pod.status.conditions or [] if c.type == "PodScheduled"]
    assert scheduled.reason == "BindingConditionsPending"
    assert READY in scheduled.message

    prepare(devices, namespace, objs[0])
    holds(
        lambda: not any(p.spec.node_name for p in members(cluster, gang)),
        1,
        what="no member bound while one device is not prepared",
    )
    prepare(devices, namespace, claim(cluster, namespace, names[1]))
    placed = wait_bound(cluster, gang, 2, timeout=30)
    assert {p.spec.node_name for p in placed} == {node}

    def scheduled_true() -> bool:
        return all(
            c.status == "True"
            for p in members(cluster, gang)
            for c in p.status.conditions or []
            if c.type == "PodScheduled"
        )

    # What the pods were told while waiting is not left behind once they are bound.
    holds(scheduled_true, 2, what="PodScheduled True on every bound member")
