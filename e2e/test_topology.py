"""Network-topology-aware placement on a real API server: the seed's two-spine, four-block,
8-node cluster, its ClusterNetworkTopology status, a job gathered in one block, and a
MustGather job too large for one spine that stays pending and is never spread."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from harness.daemon import Daemon
from harness.gangs import (
    GROUPS,
    PREFIX,
    GangBook,
    bound_members,
    groups_value,
    wait_bound,
    wait_explained,
)
from harness.kube import Cluster, json_object, pod_body, wait_until

SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"
GROUP, VERSION, PLURAL = "scheduling.koordinator.sh", "v1alpha1", "clusternetworktopologies"
SPEC_KEY = PREFIX + "network-topology-spec"
LAYOUT = {
    "topo-0": ("s1", "b1"),
    "topo-1": ("s1", "b1"),
    "topo-2": ("s1", "b2"),
    "topo-3": ("s1", "b2"),
    "topo-4": ("s2", "b3"),
    "topo-5": ("s2", "b3"),
    "topo-6": ("s2", "b4"),
    "topo-7": ("s2", "b4"),
}
CNT = {
    "apiVersion": f"{GROUP}/{VERSION}",
    "kind": "ClusterNetworkTopology",
    "metadata": {"name": "default"},
    "spec": {
        "networkTopologySpec": [
            {"labelKey": [SPINE], "topologyLayer": "SpineLayer"},
            {
                "labelKey": [BLOCK],
                "parentTopologyLayer": "SpineLayer",
                "topologyLayer": "BlockLayer",
            },
            {"parentTopologyLayer": "BlockLayer", "topologyLayer": "NodeTopologyLayer"},
        ]
    },
}


def spec(*rules: tuple[str, str]) -> str:
    return json.dumps({"gatherStrategy": [{"layer": a, "strategy": b} for a, b in rules]})


@pytest.fixture
def topology(clean_nodes: Cluster) -> Iterator[Cluster]:
    """The seed's cluster: 8 nodes of 2 cores in 2 spines x 2 blocks, and its topology."""
    cluster = clean_nodes
    for name, (spine, block) in LAYOUT.items():
        cluster.add_nodes(
            [name], {"cpu": "2", "memory": "8Gi"}, labels={SPINE: spine, BLOCK: block}
        )
    _delete_topology(cluster)
    cluster.custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, CNT)
    yield cluster
    _delete_topology(cluster)


def _delete_topology(cluster: Cluster) -> None:
    try:
        cluster.custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, "default")
    except ApiException as error:
        if error.status != 404:
            raise


def _key(entry: dict[str, Any]) -> tuple[str, str]:
    info = entry["topologyInfo"]
    return info["topologyLayer"], info["topologyName"]


def test_the_seed_cluster_gets_the_seed_status_and_a_job_lands_in_one_block(
    topology: Cluster, namespace: str, daemon: Daemon, gang_book: GangBook, check_invariants: None
) -> None:
    cluster = topology

    def detail() -> list[dict[str, Any]]:
        obj = json_object(
            cluster.custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, "default")
        )
        return list((obj.get("status") or {}).get("detailStatus") or [])

    status = wait_until(lambda: len(detail()) == 7 and detail(), what="detailStatus")
    by_key = {_key(e): e for e in status}
    assert by_key[("ClusterTopologyLayer", "")]["nodeNum"] == 8
    assert by_key[("ClusterTopologyLayer", "")]["childTopologyNames"] == ["s1", "s2"]
    assert by_key[("SpineLayer", "s1")]["childTopologyNames"] == ["b1", "b2"]
    assert by_key[("SpineLayer", "s2")]["parentTopologyInfo"] == {
        "topologyLayer": "ClusterTopologyLayer",
        "topologyName": "",
    }
    assert by_key[("BlockLayer", "b3")] == {
        "topologyInfo": {"topologyLayer": "BlockLayer", "topologyName": "b3"},
        "parentTopologyInfo": {"topologyLayer": "SpineLayer", "topologyName": "s2"},
        "childTopologyLayer": "NodeTopologyLayer",
        "nodeNum": 2,
    }

    rules = {SPEC_KEY: spec(("BlockLayer", "PreferGather"), ("SpineLayer", "PreferGather"))}
    gang = gang_book.gang("train", 4, way="podgroup", options=rules, requests={"cpu": "1"})
    gang_book.create(gang)
    members = wait_bound(cluster, gang)
    assert len({LAYOUT[p.spec.node_name] for p in members}) == 1, [
        p.spec.node_name for p in members
    ]


def test_must_gather_on_a_spine_keeps_a_job_too_large_pending_and_never_spreads(
    topology: Cluster, namespace: str, daemon: Daemon, gang_book: GangBook, check_invariants: None
) -> None:
    cluster = topology
    rules = {SPEC_KEY: spec(("SpineLayer", "MustGather"))}
    gang = gang_book.gang("big", 10, way="podgroup", options=rules, requests={"cpu": "1"})
    names = gang_book.create(gang)
    wait_explained(
        cluster, namespace, names, "no SpineLayer domain can hold 10 members (best: s1 offers 8)"
    )
    assert bound_members(cluster, gang) == []


INDEX_KEY = PREFIX + "network-topology-index"


def test_a_master_and_worker_gang_group_is_gathered_as_one_job(
    topology: Cluster, namespace: str, daemon: Daemon, gang_book: GangBook, check_invariants: None
) -> None:
    cluster = topology
    rules = spec(("BlockLayer", "PreferGather"))
    group = groups_value(f"{namespace}/master", f"{namespace}/worker")
    options = {SPEC_KEY: rules, GROUPS: group}
    master = gang_book.gang("master", 1, way="podgroup", options=options, requests={"cpu": "1"})
    worker = gang_book.gang("worker", 3, way="podgroup", options=options, requests={"cpu": "1"})
    gang_book.create_podgroup(master)
    gang_book.create_podgroup(worker)
    gang_book.create_pods(master)
    gang_book.create_pods(worker)
    placed = [*wait_bound(cluster, master), *wait_bound(cluster, worker)]
    assert len({LAYOUT[p.spec.node_name] for p in placed}) == 1, [p.spec.node_name for p in placed]


def test_members_in_rank_order_are_neighbours_in_the_network(
    topology: Cluster, namespace: str, daemon: Daemon, gang_book: GangBook, check_invariants: None
) -> None:
    cluster = topology
    rules = {SPEC_KEY: spec(("SpineLayer", "MustGather"))}
    gang = gang_book.gang("ranked", 8, way="podgroup", options=rules, requests={"cpu": "1"})
    gang_book.create_podgroup(gang)
    for i in range(8):
        # Ranks run against the names, so that name order cannot pass for rank order.
        body = gang.pod(i)
        body["metadata"].setdefault("annotations", {})[INDEX_KEY] = str(7 - i)
        cluster.create_pod(namespace, body)
    placed = wait_bound(cluster, gang)
    by_rank = sorted(placed, key=lambda p: int(p.metadata.annotations[INDEX_KEY]))
    layout = [LAYOUT[p.spec.node_name] for p in by_rank]
    assert len({spine for spine, _ in layout}) == 1
    blocks = [block for _, block in layout]
    assert blocks[:4] == [blocks[0]] * 4 and blocks[4:] == [blocks[4]] * 4
    assert blocks[0] < blocks[4]  # the first block by name takes the first ranks


def test_one_gpu_model_per_job_never_mixed(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    model = "nvidia.com/gpu.product"
    for name in ("p100-0", "p100-1"):
        cluster.add_nodes([name], {"cpu": "2", "memory": "8Gi"}, labels={model: "Tesla-P100"})
    for name in ("v100-0", "v100-1", "v100-2"):
        cluster.add_nodes([name], {"cpu": "2", "memory": "8Gi"}, labels={model: "Tesla-V100"})
    rules = json.dumps({"gatherStrategy": [{"labelKey": model, "strategy": "MustGather"}]})
    # 5 workers of 1 core: only the V100 nodes (6 cores) can take them all.
    gang = gang_book.gang("batch", 5, way="podgroup", options={SPEC_KEY: rules})
    gang_book.create(gang)
    placed = wait_bound(cluster, gang)
    assert {p.spec.node_name.split("-")[0] for p in placed} == {"v100"}


def test_binpack_picks_the_partly_used_block_and_prefer_gather_spreads_when_it_must(
    topology: Cluster, namespace: str, daemon: Daemon, gang_book: GangBook, check_invariants: None
) -> None:
    cluster = topology
    # b3 is half used: it offers 2 slots, every other block 4.
    for node in ("topo-4", "topo-5"):
        cluster.create_pod(
            namespace, pod_body(f"busy-{node}", requests={"cpu": "1"}, node_name=node)
        )
    rules = {SPEC_KEY: spec(("BlockLayer", "PreferGather"))}
    small = gang_book.gang("small", 2, way="podgroup", options=rules, requests={"cpu": "1"})
    gang_book.create(small)
    assert {LAYOUT[p.spec.node_name] for p in wait_bound(cluster, small)} == {("s2", "b3")}

    # 10 members, no spine holds them (each offers 8 or less): PreferGather spreads.
    wide = {SPEC_KEY: spec(("SpineLayer", "PreferGather"))}
    big = gang_book.gang("wide", 10, way="podgroup", options=wide, requests={"cpu": "1"})
    gang_book.create(big)
    placed = wait_bound(cluster, big)
    assert {LAYOUT[p.spec.node_name][0] for p in placed} == {"s1", "s2"}
