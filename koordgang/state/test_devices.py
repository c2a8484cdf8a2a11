"""The device ledger in the cache, and devices in snapshots (placed, removed, forked)."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.model.dra import (
    AllocatedDevice,
    ClaimAllocation,
    DeviceId,
    ResourceClaimInfo,
    ResourceSliceInfo,
    parse_resource_claim,
    parse_resource_slice,
)
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot

DRIVER = "gpu.example.com"


def node_slice(
    node: str,
    devices: list[str],
    *,
    name: str = "",
    pool: str = "",
    generation: int = 1,
    count: int = 1,
) -> ResourceSliceInfo:
    return parse_resource_slice(
        {
            "metadata": {"name": name or f"{node}-slice", "resourceVersion": "1"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {
                    "name": pool or node,
                    "generation": generation,
                    "resourceSliceCount": count,
                },
                "devices": [{"name": d} for d in devices],
            },
        }
    )


def gpu(node: str, device: str) -> DeviceId:
    return DeviceId(DRIVER, node, device)


def claim(
    name: str,
    *,
    devices: list[DeviceId] | None = None,
    reserved_for: list[str] | None = None,
    uid: str = "",
) -> ResourceClaimInfo:
    status: dict[str, Any] = {}
    if devices is not None:
        status["allocation"] = {
            "devices": {
                "results": [
                    {"request": "r", "driver": d.driver, "pool": d.pool, "device": d.device}
                    for d in devices
                ]
            }
        }
        status["reservedFor"] = [
            {"resource": "pods", "name": u, "uid": u} for u in (reserved_for or [])
        ]
    return parse_resource_claim(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": uid or name,
                "resourceVersion": "1",
            },
            "spec": {
                "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}
            },
            "status": status,
        }
    )


def allocation(node: str, *devices: str) -> ClaimAllocation:
    return ClaimAllocation.on_node(
        node, tuple(AllocatedDevice("r", DRIVER, node, d) for d in devices), ()
    )


def pod(name: str, node: str = "") -> PodInfo:
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]},
            "status": {"phase": "Running" if node else "Pending"},
        }
    )


def cache_with_nodes(*names: str) -> SchedulerCache:
    cache = SchedulerCache()
    for name in names:
        cache.upsert_node(
            parse_node(
                {
                    "metadata": {"name": name},
                    "status": {
                        "allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
        )
    return cache


class TestPools:
    def test_devices_of_a_slice_are_on_its_node(self) -> None:
        cache = cache_with_nodes("n1")
        cache.upsert_resource_slice(node_slice("n1", ["gpu-0", "gpu-1"]))
        assert [d.id.device for d in cache.devices.devices_on("n1")] == ["gpu-0", "gpu-1"]

    def test_only_the_highest_generation_of_a_pool_counts(self) -> None:
        cache = cache_with_nodes("n1")
        cache.upsert_resource_slice(node_slice("n1", ["old"], name="a", generation=1))
        cache.upsert_resource_slice(node_slice("n1", ["new"], name="b", generation=2))
        assert [d.id.device for d in cache.devices.devices_on("n1")] == ["new"]
        cache.remove_resource_slice("b")
        assert [d.id.device for d in cache.devices.devices_on("n1")] == ["old"]

    def test_a_pool_still_missing_slices_is_incomplete(self) -> None:
        cache = cache_with_nodes("n1")
        cache.upsert_resource_slice(node_slice("n1", ["a"], name="s1", count=2))
        [device] = cache.devices.devices_on("n1")
        assert not device.pool.complete
        cache.upsert_resource_slice(node_slice("n1", ["b"], name="s2", count=2))
        assert all(d.pool.complete for d in cache.devices.devices_on("n1"))

    def test_a_pool_with_a_duplicate_device_is_skipped_and_reported(self) -> None:
        cache = cache_with_nodes("n1")
        cache.upsert_resource_slice(node_slice("n1", ["a"], name="s1", count=2))
        change = cache.upsert_resource_slice(node_slice("n1", ["a"], name="s2", count=2))
        assert change.invalid and "duplicate device name 'a'" in change.invalid[0][1]
        assert cache.devices.devices_on("n1") == ()

    def test_a_republished_unchanged_device_keeps_its_selector_answers(self) -> None:
        cache = cache_with_nodes("n1")
        info = node_slice("n1", ["a"])
        cache.upsert_resource_slice(info)
        cache.devices.devices_on("n1")[0].answers["true"] = True
        cache.upsert_resource_slice(info)
        assert cache.devices.devices_on("n1")[0].answers == {"true": True}
        cache.upsert_resource_slice(node_slice("n1", ["a"]))  # a new description
        assert cache.devices.devices_on("n1")[0].answers == {}

    def test_a_slice_change_makes_its_node_a_changed_node(self) -> None:
        cache = cache_with_nodes("n1")
        node = cache.node("n1")
        assert node is not None
        before, position = node.version, cache.change_position
        cache.upsert_resource_slice(node_slice("n1", ["a"]))
        after = cache.node("n1")
        assert after is not None and after.version != before
        assert cache.shrinks_since(position) == ["n1"]


class TestUse:
    def test_devices_in_any_claims_allocation_are_in_use(self) -> None:
        cache = cache_with_nodes("n1")
        cache.upsert_resource_slice(node_slice("n1", ["gpu-0", "gpu-1"]))
        cache.upsert_resource_claim(claim("theirs", devices=[gpu("n1", "gpu-1")]))
        assert cache.devices.in_use(gpu("n1", "gpu-1"))
        assert not cache.devices.in_use(gpu("n1", "gpu-0"))
        cache.remove_resource_claim("ns/theirs")
        assert not cache.devices.in_use(gpu("n1", "gpu-1"))

    def test_an_assumed_allocation_holds_until_the_claim_shows_one(self) -> None:
        cache = cache_with_nodes("n1")
        cache.upsert_resource_slice(node_slice("n1", ["gpu-0"]))
        cache.upsert_resource_claim(claim("c"))
        cache.assume(pod("p"), "n1", {"ns/c": allocation("n1", "gpu-0")})
        assert cache.devices.in_use(gpu("n1", "gpu-0"))
        assert cache.devices.is_assumed("ns/c")
        cache.upsert_resource_claim(claim("c", devices=[gpu("n1", "gpu-0")], reserved_for=["p"]))
        assert not cache.devices.is_assumed("ns/c")
        assert cache.devices.holders(gpu("n1", "gpu-0")) == {"ns/c"}

    def test_forgetting_a_pod_frees_what_was_assumed_for_it(self) -> None:
        cache = cache_with_nodes("n1")
        cache.upsert_resource_slice(node_slice("n1", ["gpu-0"]))
        cache.upsert_resource_claim(claim("c"))
        cache.assume(pod("p"), "n1", {"ns/c": allocation("n1", "gpu-0")})
        cache.forget("p")
        assert not cache.devices.in_use(gpu("n1", "gpu-0"))

    def test_a_device_held_by_two_claims_is_a_conflict(self) -> None:
        cache = cache_with_nodes("n1")
        cache.upsert_resource_slice(node_slice("n1", ["gpu-0"]))
        cache.upsert_resource_claim(claim("ours"))
        cache.assume(pod("p"), "n1", {"ns/ours": allocation("n1", "gpu-0")})
        change = cache.upsert_resource_claim(claim("theirs", devices=[gpu("n1", "gpu-0")]))
        assert change.conflicts == [(gpu("n1", "gpu-0"), ("ns/ours", "ns/theirs"))]

    def test_a_restart_reads_every_allocation_back(self) -> None:
        claims = [
            claim("a", devices=[gpu("n1", "gpu-0")], reserved_for=["p1"]),
            claim("b", devices=[gpu("n1", "gpu-1")], reserved_for=["p2"]),
            claim("c"),
        ]
        cache = cache_with_nodes("n1")
        cache.replace_resource_claims(claims)
        cache.replace_resource_slices([node_slice("n1", ["gpu-0", "gpu-1", "gpu-2"])])
        free = [
            d.id.device for d in cache.devices.devices_on("n1") if not cache.devices.in_use(d.id)
        ]
        assert free == ["gpu-2"]
        assert cache.devices.claims_reserving("p1") == {"ns/a"}


class TestSnapshots:
    @pytest.fixture
    def cache(self) -> SchedulerCache:
        cache = cache_with_nodes("n1", "n2")
        cache.upsert_resource_slice(node_slice("n1", ["gpu-0", "gpu-1"]))
        cache.upsert_resource_claim(claim("c"))
        cache.upsert_resource_claim(claim("d"))
        return cache

    def test_an_allocation_in_a_snapshot_takes_its_devices_there_only(
        self, cache: SchedulerCache
    ) -> None:
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        version = snapshot.version_of(node)
        snapshot.add(pod("p"), node)
        snapshot.allocate(pod("p"), {"ns/c": allocation("n1", "gpu-0")})
        assert not snapshot.device_free("n1", gpu("n1", "gpu-0"))
        assert snapshot.device_free("n1", gpu("n1", "gpu-1"))
        assert snapshot.version_of(node) != version
        assert snapshot.claim_allocation("ns/c") is not None
        assert cache.devices.allocation("ns/c") is None
        assert not cache.devices.in_use(gpu("n1", "gpu-0"))

    def test_removing_a_placed_pod_gives_its_devices_back(self, cache: SchedulerCache) -> None:
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        snapshot.add(pod("p"), node)
        snapshot.allocate(pod("p"), {"ns/c": allocation("n1", "gpu-0")})
        snapshot.remove(pod("p"))
        assert snapshot.device_free("n1", gpu("n1", "gpu-0"))
        assert snapshot.claim_allocation("ns/c") is None

    def test_a_fork_sees_its_parent_and_its_changes_stay_its_own(
        self, cache: SchedulerCache
    ) -> None:
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        snapshot.add(pod("p"), node)
        snapshot.allocate(pod("p"), {"ns/c": allocation("n1", "gpu-0")})
        fork = snapshot.fork()
        fork.add(pod("q"), node)
        fork.allocate(pod("q"), {"ns/d": allocation("n1", "gpu-1")})
        assert not fork.device_free("n1", gpu("n1", "gpu-0"))
        assert not fork.device_free("n1", gpu("n1", "gpu-1"))
        del fork
        assert snapshot.device_free("n1", gpu("n1", "gpu-1"))

    def test_commit_makes_the_allocations_assumed_in_the_cache(self, cache: SchedulerCache) -> None:
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        work = snapshot.fork()
        work.add(pod("p"), node)
        work.allocate(pod("p"), {"ns/c": allocation("n1", "gpu-0")})
        work.commit()
        snapshot.commit()
        assert cache.devices.is_assumed("ns/c")
        assert cache.devices.assumed_for("p").keys() == {"ns/c"}
        assert cache.devices.in_use(gpu("n1", "gpu-0"))

    def test_removing_a_victim_frees_claims_reserved_for_it_alone(self) -> None:
        cache = cache_with_nodes("n1")
        cache.upsert_resource_slice(node_slice("n1", ["gpu-0", "gpu-1"]))
        cache.upsert_pod(pod("victim", "n1"))
        cache.upsert_pod(pod("other", "n1"))
        cache.upsert_resource_claim(
            claim("own", devices=[gpu("n1", "gpu-0")], reserved_for=["victim"])
        )
        cache.upsert_resource_claim(
            claim("shared", devices=[gpu("n1", "gpu-1")], reserved_for=["victim", "other"])
        )
        snapshot = Snapshot(cache)
        victim = cache.pod("victim")
        assert victim is not None
        snapshot.remove(victim)
        assert snapshot.device_free("n1", gpu("n1", "gpu-0"))
        assert not snapshot.device_free("n1", gpu("n1", "gpu-1"))
        node = snapshot.node("n1")
        assert node is not None
        snapshot.add(victim, node)  # reprieved: its claim is allocated again
        assert not snapshot.device_free("n1", gpu("n1", "gpu-0"))
        assert snapshot.claim_allocation("ns/own") is not None

    def test_a_claim_allocated_already_cannot_be_allocated_again(
        self, cache: SchedulerCache
    ) -> None:
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        snapshot.add(pod("p"), node)
        snapshot.allocate(pod("p"), {"ns/c": allocation("n1", "gpu-0")})
        snapshot.add(pod("q"), node)
        with pytest.raises(ValueError, match="allocated already"):
            snapshot.allocate(pod("q"), {"ns/c": allocation("n1", "gpu-1")})
