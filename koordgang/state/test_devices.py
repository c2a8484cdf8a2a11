"""The DRA manager beside the cache, and devices in snapshots' claim views (placed, removed,
forked)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from koordgang.model.dra import (
    AllocatedDevice,
    ClaimAllocation,
    DeviceId,
    ResourceClaimInfo,
    ResourceSliceInfo,
    parse_device_taint_rule,
    parse_resource_claim,
    parse_resource_slice,
)
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.state.cache import SchedulerCache
from koordgang.state.dra import DraManager
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


def cache_with_nodes(*names: str) -> tuple[SchedulerCache, DraManager]:
    """A cache of these nodes whose pods take devices from the DRA manager returned too."""
    dra = DraManager()
    cache = SchedulerCache(extensions=(dra,))
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
    return cache, dra


class TestPools:
    def test_devices_of_a_slice_are_on_its_node(self) -> None:
        _cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(node_slice("n1", ["gpu-0", "gpu-1"]))
        assert [d.id.device for d in dra.devices_on("n1")] == ["gpu-0", "gpu-1"]

    def test_only_the_highest_generation_of_a_pool_counts(self) -> None:
        _cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(node_slice("n1", ["old"], name="a", generation=1))
        dra.upsert_slice(node_slice("n1", ["new"], name="b", generation=2))
        assert [d.id.device for d in dra.devices_on("n1")] == ["new"]
        dra.remove_slice("b")
        assert [d.id.device for d in dra.devices_on("n1")] == ["old"]

    def test_a_pool_still_missing_slices_is_incomplete(self) -> None:
        _cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(node_slice("n1", ["a"], name="s1", count=2))
        [device] = dra.devices_on("n1")
        assert not device.pool.complete
        dra.upsert_slice(node_slice("n1", ["b"], name="s2", count=2))
        assert all(d.pool.complete for d in dra.devices_on("n1"))

    def test_a_pool_with_a_duplicate_device_is_skipped_and_reported(self) -> None:
        _cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(node_slice("n1", ["a"], name="s1", count=2))
        change = dra.upsert_slice(node_slice("n1", ["a"], name="s2", count=2))
        assert [fields["reason"] for _, fields in change.warnings] == ["duplicate device name 'a'"]
        assert dra.devices_on("n1") == ()

    def test_a_republished_unchanged_device_keeps_its_selector_answers(self) -> None:
        _cache, dra = cache_with_nodes("n1")
        info = node_slice("n1", ["a"])
        dra.upsert_slice(info)
        dra.devices_on("n1")[0].answers["true"] = True
        dra.upsert_slice(info)
        assert dra.devices_on("n1")[0].answers == {"true": True}
        dra.upsert_slice(node_slice("n1", ["a"]))  # a new description
        assert dra.devices_on("n1")[0].answers == {}

    def test_a_slice_change_makes_its_node_a_changed_node(self) -> None:
        cache, dra = cache_with_nodes("n1")
        node = cache.node("n1")
        assert node is not None
        before, position = node.version, cache.change_position
        cache.touch_nodes(dra.upsert_slice(node_slice("n1", ["a"])))
        after = cache.node("n1")
        assert after is not None and after.version != before
        assert cache.shrinks_since(position) == ["n1"]


class TestUse:
    def test_devices_in_any_claims_allocation_are_in_use(self) -> None:
        _cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(node_slice("n1", ["gpu-0", "gpu-1"]))
        dra.upsert_claim(claim("theirs", devices=[gpu("n1", "gpu-1")]))
        assert dra.in_use(gpu("n1", "gpu-1"))
        assert not dra.in_use(gpu("n1", "gpu-0"))
        dra.remove_claim("ns/theirs")
        assert not dra.in_use(gpu("n1", "gpu-1"))

    def test_an_assumed_allocation_holds_until_the_claim_shows_one(self) -> None:
        cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(node_slice("n1", ["gpu-0"]))
        dra.upsert_claim(claim("c"))
        cache.assume(pod("p"), "n1")
        dra.assume("p", {"ns/c": allocation("n1", "gpu-0")})
        assert dra.in_use(gpu("n1", "gpu-0"))
        assert dra.is_in_flight("ns/c")
        dra.upsert_claim(claim("c", devices=[gpu("n1", "gpu-0")], reserved_for=["p"]))
        assert not dra.is_in_flight("ns/c")
        assert dra.holders(gpu("n1", "gpu-0")) == {"ns/c"}

    def test_forgetting_a_pod_frees_what_was_assumed_for_it(self) -> None:
        cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(node_slice("n1", ["gpu-0"]))
        dra.upsert_claim(claim("c"))
        cache.assume(pod("p"), "n1")
        dra.assume("p", {"ns/c": allocation("n1", "gpu-0")})
        cache.forget("p")
        assert not dra.in_use(gpu("n1", "gpu-0"))

    def test_a_device_held_by_two_claims_is_a_conflict(self) -> None:
        cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(node_slice("n1", ["gpu-0"]))
        dra.upsert_claim(claim("ours"))
        cache.assume(pod("p"), "n1")
        dra.assume("p", {"ns/ours": allocation("n1", "gpu-0")})
        change = dra.upsert_claim(claim("theirs", devices=[gpu("n1", "gpu-0")]))
        assert [fields for _, fields in change.warnings] == [
            {"device": str(gpu("n1", "gpu-0")), "claims": "ns/ours, ns/theirs"}
        ]

    def test_a_restart_reads_every_allocation_back(self) -> None:
        claims = [
            claim("a", devices=[gpu("n1", "gpu-0")], reserved_for=["p1"]),
            claim("b", devices=[gpu("n1", "gpu-1")], reserved_for=["p2"]),
            claim("c"),
        ]
        _cache, dra = cache_with_nodes("n1")
        dra.replace_claims(claims)
        dra.replace_slices([node_slice("n1", ["gpu-0", "gpu-1", "gpu-2"])])
        free = [d.id.device for d in dra.devices_on("n1") if not dra.in_use(d.id)]
        assert free == ["gpu-2"]
        assert dra.claims_reserving("p1") == {"ns/a"}


class TestSnapshots:
    @pytest.fixture
    def world(self) -> tuple[SchedulerCache, DraManager]:
        cache, dra = cache_with_nodes("n1", "n2")
        dra.upsert_slice(node_slice("n1", ["gpu-0", "gpu-1"]))
        dra.upsert_claim(claim("c"))
        dra.upsert_claim(claim("d"))
        return cache, dra

    def test_an_allocation_in_a_snapshot_takes_its_devices_there_only(
        self, world: tuple[SchedulerCache, DraManager]
    ) -> None:
        cache, dra = world
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        version = snapshot.version_of(node)
        snapshot.add(pod("p"), node)
        dra.view(snapshot).allocate("p", {"ns/c": allocation("n1", "gpu-0")})
        assert not dra.view(snapshot).device_free("n1", gpu("n1", "gpu-0"))
        assert dra.view(snapshot).device_free("n1", gpu("n1", "gpu-1"))
        assert snapshot.version_of(node) != version
        assert dra.view(snapshot).allocation("ns/c") is not None
        assert dra.allocation("ns/c") is None
        assert not dra.in_use(gpu("n1", "gpu-0"))

    def test_removing_a_placed_pod_gives_its_devices_back(
        self, world: tuple[SchedulerCache, DraManager]
    ) -> None:
        cache, dra = world
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        snapshot.add(pod("p"), node)
        dra.view(snapshot).allocate("p", {"ns/c": allocation("n1", "gpu-0")})
        snapshot.remove(pod("p"))
        assert dra.view(snapshot).device_free("n1", gpu("n1", "gpu-0"))
        assert dra.view(snapshot).allocation("ns/c") is None

    def test_a_fork_sees_its_parent_and_its_changes_stay_its_own(
        self, world: tuple[SchedulerCache, DraManager]
    ) -> None:
        cache, dra = world
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        snapshot.add(pod("p"), node)
        dra.view(snapshot).allocate("p", {"ns/c": allocation("n1", "gpu-0")})
        fork = snapshot.fork()
        fork.add(pod("q"), node)
        dra.view(fork).allocate("q", {"ns/d": allocation("n1", "gpu-1")})
        assert not dra.view(fork).device_free("n1", gpu("n1", "gpu-0"))
        assert not dra.view(fork).device_free("n1", gpu("n1", "gpu-1"))
        del fork
        assert dra.view(snapshot).device_free("n1", gpu("n1", "gpu-1"))

    def test_commit_makes_the_allocations_assumed_in_the_cache(
        self, world: tuple[SchedulerCache, DraManager]
    ) -> None:
        cache, dra = world
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        work = snapshot.fork()
        work.add(pod("p"), node)
        dra.view(work).allocate("p", {"ns/c": allocation("n1", "gpu-0")})
        work.commit()
        snapshot.commit()
        assert dra.is_in_flight("ns/c")
        assert dra.in_flight_for("p").keys() == {"ns/c"}
        assert dra.in_use(gpu("n1", "gpu-0"))

    def test_removing_a_victim_frees_claims_reserved_for_it_alone(self) -> None:
        cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(node_slice("n1", ["gpu-0", "gpu-1"]))
        cache.upsert_pod(pod("victim", "n1"))
        cache.upsert_pod(pod("other", "n1"))
        dra.upsert_claim(claim("own", devices=[gpu("n1", "gpu-0")], reserved_for=["victim"]))
        dra.upsert_claim(
            claim("shared", devices=[gpu("n1", "gpu-1")], reserved_for=["victim", "other"])
        )
        snapshot = Snapshot(cache)
        victim = cache.pod("victim")
        assert victim is not None
        snapshot.remove(victim)
        assert dra.view(snapshot).device_free("n1", gpu("n1", "gpu-0"))
        assert not dra.view(snapshot).device_free("n1", gpu("n1", "gpu-1"))
        node = snapshot.node("n1")
        assert node is not None
        snapshot.add(victim, node)  # reprieved: its claim is allocated again
        assert not dra.view(snapshot).device_free("n1", gpu("n1", "gpu-0"))
        assert dra.view(snapshot).allocation("ns/own") is not None

    def test_a_claim_allocated_already_cannot_be_allocated_again(
        self, world: tuple[SchedulerCache, DraManager]
    ) -> None:
        cache, dra = world
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        snapshot.add(pod("p"), node)
        dra.view(snapshot).allocate("p", {"ns/c": allocation("n1", "gpu-0")})
        snapshot.add(pod("q"), node)
        with pytest.raises(ValueError, match="allocated already"):
            dra.view(snapshot).allocate("q", {"ns/c": allocation("n1", "gpu-1")})


class TestTaintsAdminAndConsumers:
    def test_a_rule_adds_its_taint_to_the_devices_it_selects_and_touches_their_nodes(self) -> None:
        _cache, dra = cache_with_nodes("n1", "n2")
        dra.upsert_slice(node_slice("n1", ["gpu-0"]))
        dra.upsert_slice(node_slice("n2", ["gpu-0"]))
        rule = parse_device_taint_rule(
            {
                "metadata": {"name": "drain"},
                "spec": {
                    "deviceSelector": {"driver": DRIVER, "pool": "n1"},
                    "taint": {"key": "k", "effect": "NoSchedule"},
                },
            }
        )
        change = dra.taint_rule_store.upsert(rule)
        assert change.nodes == {"n1"}
        [n1] = dra.devices_on("n1")
        [n2] = dra.devices_on("n2")
        assert [t.key for t in dra.taints(n1)] == ["k"] and dra.taints(n2) == ()
        assert dra.counts()["tainted"] == 1
        assert dra.taint_rule_store.remove("drain").nodes == {"n1"}
        assert dra.taints(n1) == ()

    def test_results_given_for_admin_access_hold_no_device(self) -> None:
        _cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(node_slice("n1", ["gpu-0"]))
        obj_status = {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "r",
                            "driver": DRIVER,
                            "pool": "n1",
                            "device": "gpu-0",
                            "adminAccess": True,
                        }
                    ]
                }
            }
        }
        admin = parse_resource_claim(
            {
                "metadata": {"name": "watch", "namespace": "ns", "uid": "w"},
                "spec": {"devices": {"requests": []}},
                "status": obj_status,
            }
        )
        dra.upsert_claim(admin)
        assert not dra.in_use(gpu("n1", "gpu-0"))
        assert dra.counts()["admin"] == 1

    def test_consumers_count_pods_placed_here_until_the_claim_names_them(self) -> None:
        _cache, dra = cache_with_nodes("n1")
        dra.upsert_claim(claim("c", devices=[], reserved_for=["a"]))
        assert dra.consumers("ns/c") == 1
        dra.assume("b", {}, consuming=["ns/c"])
        assert dra.consumers("ns/c") == 2
        dra.upsert_claim(claim("c", devices=[], reserved_for=["a", "b"]))
        assert dra.consumers("ns/c") == 2
        dra.pod_released("b")
        assert dra.consumers("ns/c") == 2


def share(node: str, device: str, share_id: str, gib: int) -> AllocatedDevice:
    return AllocatedDevice(
        "r", DRIVER, node, device, share_id=share_id, consumed=(("memory", Fraction(gib * GIB)),)
    )


def shared_slice(node: str) -> ResourceSliceInfo:
    device = {
        "name": "gpu-0",
        "allowMultipleAllocations": True,
        "capacity": {"memory": {"value": "80Gi"}},
    }
    return parse_resource_slice(
        {
            "metadata": {"name": f"{node}-slice", "resourceVersion": "1"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [device],
            },
        }
    )


GIB = Fraction(2**30)


class TestShares:
    """Shares of a device several claims have at once: never in use as a whole, what they
    consume summed, in the manager and in snapshots."""

    @pytest.fixture
    def world(self) -> tuple[SchedulerCache, DraManager]:
        cache, dra = cache_with_nodes("n1")
        dra.upsert_slice(shared_slice("n1"))
        for name in ("a", "b", "c"):
            dra.upsert_claim(claim(name))
        return cache, dra

    def test_written_and_assumed_shares_add_up_and_deletion_gives_back(
        self, world: tuple[SchedulerCache, DraManager]
    ) -> None:
        _, dra = world
        device = gpu("n1", "gpu-0")
        written = ClaimAllocation.on_node("n1", (share("n1", "gpu-0", "s-a", 20),), ())
        info = claim("a")
        dra.upsert_claim(
            parse_resource_claim(
                {
                    "metadata": {"name": "a", "namespace": "ns", "uid": "a"},
                    "spec": {"devices": {"requests": []}},
                    "status": {"allocation": written.to_api()},
                }
            )
        )
        change = dra.assume(
            "p", {"ns/b": ClaimAllocation.on_node("n1", (share("n1", "gpu-0", "s-b", 30),), ())}
        )
        assert change.nodes == {"n1"} and not change.warnings
        assert not dra.in_use(device)
        assert dra.consumed(device) == {"memory": 50 * GIB}
        assert sorted(dra.shares(device)) == ["ns/a", "ns/b"]
        dra.remove_claim(info.key)
        assert dra.consumed(device) == {"memory": 30 * GIB}
        dra.pod_released("p")
        assert dra.consumed(device) is None

    def test_shares_beyond_the_capacity_are_warned_of(
        self, world: tuple[SchedulerCache, DraManager]
    ) -> None:
        _, dra = world
        dra.assume(
            "p", {"ns/a": ClaimAllocation.on_node("n1", (share("n1", "gpu-0", "s-a", 60),), ())}
        )
        change = dra.assume(
            "q", {"ns/b": ClaimAllocation.on_node("n1", (share("n1", "gpu-0", "s-b", 30),), ())}
        )
        assert [w for w, _ in change.warnings] == ["shared device allocated beyond its capacity"]
        assert dra.overdrawn(gpu("n1", "gpu-0"))

    def test_a_snapshot_counts_its_shares_and_a_fork_keeps_its_own(
        self, world: tuple[SchedulerCache, DraManager]
    ) -> None:
        cache, dra = world
        device = gpu("n1", "gpu-0")
        snapshot = Snapshot(cache)
        node = snapshot.node("n1")
        assert node is not None
        snapshot.add(pod("p"), node)
        dra.view(snapshot).allocate(
            "p", {"ns/a": ClaimAllocation.on_node("n1", (share("n1", "gpu-0", "s-a", 20),), ())}
        )
        fork = snapshot.fork()
        fork.add(pod("q"), node)
        dra.view(fork).allocate(
            "q", {"ns/b": ClaimAllocation.on_node("n1", (share("n1", "gpu-0", "s-b", 40),), ())}
        )
        assert dra.view(fork).consumed(device) == {"memory": 60 * GIB}
        assert dra.view(fork).device_free("n1", device)
        assert dra.view(snapshot).consumed(device) == {"memory": 20 * GIB}
        fork.remove(pod("q"))
        assert dra.view(fork).consumed(device) == {"memory": 20 * GIB}
        assert dra.consumed(device) is None
        snapshot.remove(pod("p"))
        assert dra.view(snapshot).consumed(device) is None

    def test_a_removed_pod_frees_its_claims_share_in_the_snapshot(
        self, world: tuple[SchedulerCache, DraManager]
    ) -> None:
        cache, dra = world
        device = gpu("n1", "gpu-0")
        cache.upsert_pod(pod("p", "n1"))
        dra.assume(
            "p", {"ns/a": ClaimAllocation.on_node("n1", (share("n1", "gpu-0", "s-a", 20),), ())}
        )
        snapshot = Snapshot(cache)
        placed = cache.pod("p")
        assert placed is not None
        snapshot.remove(placed)
        assert dra.view(snapshot).consumed(device) is None
        assert dra.consumed(device) == {"memory": 20 * GIB}
