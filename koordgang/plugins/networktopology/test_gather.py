"""The gather algorithm through the framework: the seed's spine/block cluster, binpack among
blocks, MustGather never spreads, PreferGather does, rank order follows the network, the
ClusterNetworkTopology status; and synthetic trees of thousands of nodes."""

from __future__ import annotations

import json
from typing import Any

from koordgang.model.gather import GatherRule
from koordgang.model.koordinator import NETWORK_TOPOLOGY_INDEX_KEY, NETWORK_TOPOLOGY_SPEC_KEY
from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo
from koordgang.model.topology import TopologyTree, parse_topology_spec
from koordgang.plugins.networktopology import NetworkTopology
from koordgang.plugins.networktopology.gather import choose, domain_offers
from koordgang.testing.builders import member
from koordgang.testing.cycles import CycleHarness

SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"
CNT = {
    "metadata": {"name": "default", "uid": "cnt-uid"},
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
LAYOUT = [("s1", "b1")] * 2 + [("s1", "b2")] * 2 + [("s2", "b3")] * 2 + [("s2", "b4")] * 2


def topo_node(name: str, spine: str | None, block: str | None, cpu: str = "2") -> NodeInfo:
    labels = {}
    if spine:
        labels[SPINE] = spine
    if block:
        labels[BLOCK] = block
    return parse_node(
        {
            "metadata": {"name": name, "labels": labels},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def seed_nodes(cpu: str = "2") -> list[NodeInfo]:
    return [topo_node(f"node-{i}", s, b, cpu) for i, (s, b) in enumerate(LAYOUT)]


def spec(*rules: tuple[str, str]) -> str:
    return json.dumps(
        {"gatherStrategy": [{"layer": layer, "strategy": how} for layer, how in rules]}
    )


def job(name: str, count: int, rules: str, cpu: str = "1", ranked: bool = True) -> list[PodInfo]:
    pods = []
    for i in range(count):
        annotations = {NETWORK_TOPOLOGY_SPEC_KEY: rules}
        if ranked:
            annotations[NETWORK_TOPOLOGY_INDEX_KEY] = str(count - 1 - i)  # reverse of names
        pods.append(
            member(f"{name}-{i}", name, min_available=str(count), annotations=annotations, cpu=cpu)
        )
    return pods


def scheduler(pods: list[PodInfo], nodes: list[NodeInfo]) -> CycleHarness:
    sched = CycleHarness(pods, nodes)
    sched.framework.on_object("clusternetworktopologies.scheduling.koordinator.sh", "ADDED", CNT)
    return sched


def blocks_of(sched: CycleHarness, outcome: Any) -> list[str]:
    layout = dict(zip((f"node-{i}" for i in range(8)), LAYOUT, strict=True))
    return [layout[p.node_name][1] for p in outcome.bind]


def test_a_job_that_fits_one_block_lands_in_one_block() -> None:
    sched = scheduler(job("a", 4, spec(("BlockLayer", "PreferGather"))), seed_nodes())
    outcome = sched.cycle("a-0")
    assert len(outcome.bind) == 4
    assert len(set(blocks_of(sched, outcome))) == 1


def test_binpack_picks_the_block_whose_offer_is_closest_to_the_need() -> None:
    # b1 is half used (offers 2), the others offer 4: a job of 2 goes to b1.
    used = [member(f"busy-{i}", None, node=f"node-{i}", cpu="1") for i in range(2)]
    sched = scheduler([*used, *job("a", 2, spec(("BlockLayer", "PreferGather")))], seed_nodes())
    outcome = sched.cycle("a-0")
    assert blocks_of(sched, outcome) == ["b1", "b1"]


def test_must_gather_on_a_spine_never_spreads_and_says_why() -> None:
    # A spine offers 8 (4 nodes x 2 cpu); a job of 10 cannot be held by one.
    sched = scheduler(job("a", 10, spec(("SpineLayer", "MustGather"))), seed_nodes())
    outcome = sched.cycle("a-0")
    assert outcome.bind == [] and outcome.hold == []
    message = next(iter(outcome.unplaced.values()))
    assert "no SpineLayer domain can hold 10 members (best: s1 offers 8)" in message


def test_prefer_gather_spreads_when_no_domain_can_hold_the_job() -> None:
    sched = scheduler(job("a", 10, spec(("SpineLayer", "PreferGather"))), seed_nodes())
    outcome = sched.cycle("a-0")
    assert len(outcome.bind) == 10


def test_members_fill_blocks_in_rank_order() -> None:
    # 1 cpu per node: a job of 4 takes a whole spine; ranks 0-1 in its first block, 2-3 in
    # the second (names run the other way round).
    sched = scheduler(job("a", 4, spec(("SpineLayer", "MustGather"))), seed_nodes(cpu="1"))
    outcome = sched.cycle("a-0")
    rank = {p.name: int(p.annotations[NETWORK_TOPOLOGY_INDEX_KEY]) for p in outcome.group.members()}
    by_rank = sorted(outcome.bind, key=lambda p: rank[p.pod.name])
    layout = dict(zip((f"node-{i}" for i in range(8)), LAYOUT, strict=True))
    assert [layout[p.node_name] for p in by_rank] == [
        ("s1", "b1"), ("s1", "b1"), ("s1", "b2"), ("s1", "b2")
    ]  # fmt: skip


def test_must_gather_without_a_topology_keeps_the_job_pending() -> None:
    sched = CycleHarness(job("a", 2, spec(("BlockLayer", "MustGather"))), seed_nodes())
    outcome = sched.cycle("a-0")
    assert outcome.bind == []
    assert "no ClusterNetworkTopology named default exists" in next(iter(outcome.unplaced.values()))
    sched = CycleHarness(job("b", 2, spec(("BlockLayer", "PreferGather"))), seed_nodes())
    assert len(sched.cycle("b-0").bind) == 2


def test_the_status_lists_the_domains_and_follows_the_nodes() -> None:
    sched = scheduler([], seed_nodes())
    [plugin] = [p for p in sched.framework.plugins if isinstance(p, NetworkTopology)]
    status = plugin.topology.status(sched.cache)
    assert status is not None
    assert len(status["detailStatus"]) == 7
    assert status["conditions"][0]["status"] == "True"
    sched.add_node(topo_node("node-8", "s3", "b5"))
    status = plugin.topology.status(sched.cache)
    assert status is not None and len(status["detailStatus"]) == 9


def test_a_spec_with_a_cycle_is_not_used_and_says_so() -> None:
    sched = CycleHarness([], seed_nodes())
    broken = {
        "metadata": {"name": "default"},
        "spec": {
            "networkTopologySpec": [
                {"topologyLayer": "A", "parentTopologyLayer": "B", "labelKey": ["a"]},
                {"topologyLayer": "B", "parentTopologyLayer": "A", "labelKey": ["b"]},
            ]
        },
    }
    sched.framework.on_object("clusternetworktopologies.scheduling.koordinator.sh", "ADDED", broken)
    [plugin] = [p for p in sched.framework.plugins if isinstance(p, NetworkTopology)]
    status = plugin.topology.status(sched.cache)
    assert status is not None
    condition = status["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "InvalidTopologySpec")
    assert "cycle" in condition["message"]
    assert "detailStatus" not in status


def test_synthetic_tree_of_thousands_of_nodes_with_ties_fragments_and_multiples() -> None:
    # 4 spines x 8 blocks x 32 nodes; some nodes lack labels; offers are made up per node.
    spec_obj = parse_topology_spec(CNT)
    nodes = []
    offers: dict[str, int] = {}
    for s in range(4):
        for b in range(8):
            for n in range(32):
                name = f"s{s}-b{b}-n{n}"
                nodes.append((name, {SPINE: f"s{s}", BLOCK: f"b{b}"}))
                # Fragmented: block b0 of every spine is nearly full.
                offers[name] = 0 if (b == 0 and n % 4) else 1
    nodes.append(("stray", {}))
    offers["stray"] = 100
    tree = TopologyTree(spec_obj, nodes)
    by_domain = domain_offers(tree, offers, {})
    assert by_domain[("s0", "b0")] == 8 and by_domain[("s0", "b1")] == 32
    # A job of 8: the fragmented b0 blocks offer exactly 8; the first (s0/b0) wins the tie.
    choice = choose(tree, [GatherRule("BlockLayer", "PreferGather")], by_domain, 8)
    assert choice.domain is not None and choice.domain.path == ("s0", "b0")
    # A job of 40 fits no block: the smallest spine that can (all offer 232) -> s0.
    choice = choose(tree, [GatherRule("BlockLayer", "PreferGather"),
                           GatherRule("SpineLayer", "MustGather")], by_domain, 40)  # fmt: skip
    assert choice.domain is not None and choice.domain.path == ("s0",)
    # podCountMultiple 16 on blocks: a fragmented block offers 0, a full one 32.
    rounded = domain_offers(tree, offers, {1: 16})
    assert rounded[("s0", "b0")] == 0 and rounded[("s0", "b1")] == 32
    # Too large for any spine under MustGather: the best one is named.
    choice = choose(tree, [GatherRule("SpineLayer", "MustGather")], by_domain, 500)
    assert choice.failure == "no SpineLayer domain can hold 500 members (best: s0 offers 232)"
    assert choice.domain is None


GPU_MODEL = "nvidia.com/gpu.product"


def gpu_node(name: str, model: str, spine: str = "s1", block: str = "b1") -> NodeInfo:
    info = topo_node(name, spine, block, cpu="2")
    return parse_node(
        {
            "metadata": {"name": name, "labels": {**info.labels, GPU_MODEL: model}},
            "status": {
                "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def label_spec(strategy: str = "MustGather", *network: tuple[str, str]) -> str:
    entries: list[dict[str, str]] = [{"labelKey": GPU_MODEL, "strategy": strategy}]
    entries += [{"layer": layer, "strategy": how} for layer, how in network]
    return json.dumps({"gatherStrategy": entries})


def test_one_gpu_model_per_job_never_mixed() -> None:
    # 2 P100 nodes (4 slots) and 3 V100 nodes (6 slots): a job of 5 fits only on V100s.
    nodes = [gpu_node(f"p{i}", "P100") for i in range(2)] + [
        gpu_node(f"v{i}", "V100") for i in range(3)
    ]
    sched = scheduler(job("a", 5, label_spec()), nodes)
    outcome = sched.cycle("a-0")
    assert sorted({p.node_name[0] for p in outcome.bind}) == ["v"]
    assert len(outcome.bind) == 5


def test_a_job_no_single_gpu_model_can_hold_waits_and_says_so() -> None:
    nodes = [gpu_node(f"p{i}", "P100") for i in range(2)] + [
        gpu_node(f"v{i}", "V100") for i in range(2)
    ]
    sched = scheduler(job("a", 6, label_spec()), nodes)
    outcome = sched.cycle("a-0")
    assert outcome.bind == []
    message = next(iter(outcome.unplaced.values()))
    assert "no nodes of one nvidia.com/gpu.product value can hold 6 members" in message
    assert "P100 offers 4" in message and "V100 offers 4" in message


def test_the_gpu_model_rule_combines_with_the_network_rules() -> None:
    # V100 nodes in two blocks; binpack inside the V100 nodes picks the block that fits best.
    nodes = [
        gpu_node("v0", "V100", "s1", "b1"),
        gpu_node("v1", "V100", "s1", "b1"),
        gpu_node("v2", "V100", "s1", "b2"),
        gpu_node("p0", "P100", "s1", "b3"),
        gpu_node("p1", "P100", "s1", "b3"),
    ]
    sched = scheduler(job("a", 2, label_spec("MustGather", ("BlockLayer", "MustGather"))), nodes)
    outcome = sched.cycle("a-0")
    # b2 holds one V100 node (offer 2, exactly the need): binpack picks it over b1 (offer 4)
    # and over the P100 block b3 (offer 4).
    assert {p.node_name for p in outcome.bind} == {"v2"}


def test_users_hear_of_skipped_rules_matched_layer_names_and_incomplete_ranks() -> None:
    rules = spec(("RackLayer", "PreferGather"), ("blocklayer", "PreferGather"))
    pods = job("a", 3, rules)
    # a-2 loses its index; a-1 gets a-0's.
    pods[2] = member("a-2", "a", min_available="3", annotations={NETWORK_TOPOLOGY_SPEC_KEY: rules})
    pods[1] = member(
        "a-1",
        "a",
        min_available="3",
        annotations={NETWORK_TOPOLOGY_SPEC_KEY: rules, NETWORK_TOPOLOGY_INDEX_KEY: "2"},
    )
    sched = scheduler(pods, seed_nodes())
    outcome = sched.cycle("a-0")
    assert len(outcome.bind) == 3  # the job schedules
    said = {r.reason: r.message for r in sched.asked.reports}
    assert "layer RackLayer is not in ClusterNetworkTopology default" in said["TopologyRuleSkipped"]
    assert "layer blocklayer taken as BlockLayer" in said["TopologyLayerMatched"]
    assert "without an index: a-2" in said["TopologyIndexIncomplete"]
    assert "with a duplicate index: a-1 (2, as a-0)" in said["TopologyIndexIncomplete"]


def test_the_domain_a_gang_went_to_is_remembered_for_the_gang_view() -> None:
    sched = scheduler(job("a", 4, spec(("BlockLayer", "PreferGather"))), seed_nodes())
    outcome = sched.cycle("a-0")
    [plugin] = [p for p in sched.framework.plugins if isinstance(p, NetworkTopology)]
    block = blocks_of(sched, outcome)[0]
    spine = {"b1": "s1", "b2": "s1", "b3": "s2", "b4": "s2"}[block]
    assert plugin.domain_of("ns/a") == f"SpineLayer {spine} / BlockLayer {block}"


def test_gangs_of_one_group_with_differing_specs_use_the_first_and_are_told() -> None:
    group = "gang.scheduling.koordinator.sh/groups"
    members = json.dumps(["ns/a", "ns/b"])
    a = [
        member(f"a-{i}", "a", min_available="1", annotations={
            group: members, NETWORK_TOPOLOGY_SPEC_KEY: spec(("BlockLayer", "MustGather"))
        })
        for i in range(1)
    ]  # fmt: skip
    b = [
        member(f"b-{i}", "b", min_available="1", annotations={
            group: members, NETWORK_TOPOLOGY_SPEC_KEY: spec(("SpineLayer", "PreferGather"))
        })
        for i in range(1)
    ]  # fmt: skip
    sched = scheduler([*a, *b], seed_nodes())
    outcome = sched.cycle("a-0")
    assert len(outcome.bind) == 2
    assert len(set(blocks_of(sched, outcome))) == 1  # a's MustGather on blocks held
    said = [r.message for r in sched.asked.reports if r.reason == "TopologySpecsDiffer"]
    assert said and "ns/b differ from ns/a" in said[0]


def test_a_replacement_in_a_gathered_gang_prefers_the_gangs_block() -> None:
    from dataclasses import replace

    # Room for the whole job of 2 in every block; b3's node-4 keeps one core free later.
    sched = scheduler(job("a", 2, spec(("BlockLayer", "PreferGather"))), seed_nodes())
    outcome = sched.cycle("a-0")
    for placement in outcome.bind:  # the informer shows the bindings
        sched.add(replace(placement.pod, node_name=placement.node_name, phase="Running"))
    first_block = blocks_of(sched, outcome)[0]
    sched.delete("a-1")
    rules = spec(("BlockLayer", "PreferGather"))
    sched.add(member("a-9", "a", min_available="2", annotations={NETWORK_TOPOLOGY_SPEC_KEY: rules}))
    again = sched.cycle("a-9")
    assert [p.pod.name for p in again.bind] == ["a-9"]
    layout = dict(zip((f"node-{i}" for i in range(8)), LAYOUT, strict=True))
    assert layout[again.bind[0].node_name][1] == first_block


def test_pod_count_multiple_caps_what_each_block_receives() -> None:
    # b1 has 3 free cores (one is used), which counts as 2 with podCountMultiple 2.
    rules = json.dumps(
        {
            "gatherStrategy": [
                {"layer": "BlockLayer", "strategy": "PreferGather", "podCountMultiple": 2},
                {"layer": "SpineLayer", "strategy": "MustGather"},
            ]
        }
    )
    busy = member("busy", None, node="node-0", cpu="1")
    sched = scheduler([busy, *job("a", 6, rules)], seed_nodes())
    outcome = sched.cycle("a-0")
    blocks = blocks_of(sched, outcome)
    # s1 offers 2 + 4 = 6 (binpack over s2's 8); b1 takes 2, not 3.
    assert sorted(blocks) == ["b1", "b1", "b2", "b2", "b2", "b2"]


def test_offers_remembered_between_cycles_follow_the_nodes_that_changed() -> None:
    # Each block holds 4 one-core members. Job a fills one block; job b (same shape, so its
    # offers come from the same remembered counts) must see that block full and take another.
    rules = spec(("BlockLayer", "MustGather"))
    sched = scheduler([*job("a", 4, rules), *job("b", 4, rules)], seed_nodes())
    first = sched.cycle("a-0")
    second = sched.cycle("b-0")
    assert len(first.bind) == 4 and len(second.bind) == 4
    a_blocks, b_blocks = set(blocks_of(sched, first)), set(blocks_of(sched, second))
    assert len(a_blocks) == 1 and len(b_blocks) == 1
    assert a_blocks != b_blocks
