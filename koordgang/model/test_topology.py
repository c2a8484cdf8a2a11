"""ClusterNetworkTopology specs and the domains nodes make of them: the seed's 8-node example
gives the seed's status; broken specs say what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.model.topology import TopologySpecError, TopologyTree, parse_topology_spec

SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"


def cnt(*layers: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "default"}, "spec": {"networkTopologySpec": list(layers)}}


SEED = cnt(
    {"labelKey": [SPINE], "topologyLayer": "SpineLayer"},
    {"labelKey": [BLOCK], "parentTopologyLayer": "SpineLayer", "topologyLayer": "BlockLayer"},
    {"parentTopologyLayer": "BlockLayer", "topologyLayer": "NodeTopologyLayer"},
)

SEED_NODES = [
    (f"node-{i}", {SPINE: spine, BLOCK: block})
    for i, (spine, block) in enumerate(
        [("s1", "b1")] * 2 + [("s1", "b2")] * 2 + [("s2", "b3")] * 2 + [("s2", "b4")] * 2
    )
]


def entry(
    layer: str, name: str, nodes: int, parent: tuple[str, str] | None, **child: Any
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "topologyInfo": {"topologyLayer": layer, "topologyName": name},
        "nodeNum": nodes,
    }
    if parent is not None:
        result["parentTopologyInfo"] = {"topologyLayer": parent[0], "topologyName": parent[1]}
    result.update(child)
    return result


def key(item: dict[str, Any]) -> tuple[str, str]:
    info = item["topologyInfo"]
    return info["topologyLayer"], info["topologyName"]


def test_the_seed_example_gives_the_seed_status() -> None:
    status = TopologyTree(parse_topology_spec(SEED), SEED_NODES).detail_status()
    cluster = ("ClusterTopologyLayer", "")
    expected = [
        entry(*cluster, 8, None, childTopologyLayer="SpineLayer", childTopologyNames=["s1", "s2"]),
        entry(
            "SpineLayer", "s1", 4, cluster,
            childTopologyLayer="BlockLayer", childTopologyNames=["b1", "b2"],
        ),
        entry("BlockLayer", "b1", 2, ("SpineLayer", "s1"), childTopologyLayer="NodeTopologyLayer"),
        entry("BlockLayer", "b2", 2, ("SpineLayer", "s1"), childTopologyLayer="NodeTopologyLayer"),
        entry(
            "SpineLayer", "s2", 4, cluster,
            childTopologyLayer="BlockLayer", childTopologyNames=["b3", "b4"],
        ),
        entry("BlockLayer", "b3", 2, ("SpineLayer", "s2"), childTopologyLayer="NodeTopologyLayer"),
        entry("BlockLayer", "b4", 2, ("SpineLayer", "s2"), childTopologyLayer="NodeTopologyLayer"),
    ]  # fmt: skip
    assert sorted(status, key=key) == sorted(expected, key=key)


def test_a_block_name_under_two_spines_is_two_domains_and_unlabelled_nodes_are_in_none() -> None:
    nodes = [("a", {SPINE: "s1", BLOCK: "b1"}), ("b", {SPINE: "s2", BLOCK: "b1"}), ("c", {})]
    tree = TopologyTree(parse_topology_spec(SEED), nodes)
    blocks = tree.domains(1)
    assert [(d.path, d.nodes) for d in blocks] == [(("s1", "b1"), ["a"]), (("s2", "b1"), ["b"])]
    assert tree.root.nodes == ["a", "b", "c"]
    assert tree.path_of["c"] == ()


@pytest.mark.parametrize(
    ("layers", "problem"),
    [
        (
            [
                {"topologyLayer": "A", "parentTopologyLayer": "B", "labelKey": ["a"]},
                {"topologyLayer": "B", "parentTopologyLayer": "A", "labelKey": ["b"]},
            ],
            "no top layer (a cycle)",
        ),
        (
            [{"topologyLayer": "A", "parentTopologyLayer": "Z", "labelKey": ["a"]}],
            "unknown parent Z",
        ),
        (
            [{"topologyLayer": "A", "labelKey": ["a"]}, {"topologyLayer": "B", "labelKey": ["b"]}],
            "two top layers (A, B)",
        ),
        ([], "declares no layer"),
    ],
)
def test_a_spec_that_cannot_be_used_says_why(layers: list[dict[str, Any]], problem: str) -> None:
    with pytest.raises(TopologySpecError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        parse_topology_spec(cnt(*layers))


def test_layer_names_match_case_insensitively() -> None:
    spec = parse_topology_spec(SEED)
    assert spec.depth("spineLayer") == 0
    assert spec.layer("blocklayer") is not None
    assert spec.depth("RackLayer") == -1
    assert spec.node_layer == "NodeTopologyLayer"
