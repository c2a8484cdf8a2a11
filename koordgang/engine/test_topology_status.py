"""The ClusterNetworkTopology's status is written by the engine's controller from the state
the NetworkTopology plugin feeds (not by the plugin)."""

from __future__ import annotations

from typing import Any

from koordgang.testing.api import FakeApi
from koordgang.testing.builders import node
from koordgang.testing.harness import Harness

SPINE = "network.topology.example/spine"
TOPOLOGY_KIND = "clusternetworktopologies.scheduling.koordinator.sh"
PATH = "/apis/scheduling.koordinator.sh/v1alpha1/clusternetworktopologies/default/status"


def topology(*layers: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "default", "uid": "u-cnt"},
        "spec": {"networkTopologySpec": list(layers)},
    }


def written(api: FakeApi) -> list[dict[str, Any]]:
    return [c.body["status"] for c in api.landed() if c.method == "PATCH" and c.path == PATH]


async def test_the_topology_status_follows_the_object_and_the_nodes(
    sched: Harness, api: FakeApi
) -> None:
    sched.list(nodes=[node("a1", labels={SPINE: "s1"}), node("b1", labels={SPINE: "s2"})], pods=[])
    valid = topology(
        {"topologyLayer": "SpineLayer", "labelKey": [SPINE]},
        {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "SpineLayer"},
    )
    sched.intake.on_object(TOPOLOGY_KIND, "ADDED", valid)
    sched.scheduler.loop.tick(sched.clock.now)
    await sched.settle()

    [status] = written(api)
    assert status["conditions"][0]["status"] == "True"
    spines = [
        d["topologyInfo"]["topologyName"]
        for d in status["detailStatus"]
        if d["topologyInfo"]["topologyLayer"] == "SpineLayer"
    ]
    assert sorted(spines) == ["s1", "s2"]

    broken = topology(
        {"topologyLayer": "A", "parentTopologyLayer": "B", "labelKey": ["a"]},
        {"topologyLayer": "B", "parentTopologyLayer": "A", "labelKey": ["b"]},
    )
    sched.intake.on_object(TOPOLOGY_KIND, "MODIFIED", broken)
    sched.scheduler.loop.tick(sched.clock.now + 1)
    await sched.settle()

    condition = written(api)[-1]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "InvalidTopologySpec")
    assert "detailStatus" not in written(api)[-1]
