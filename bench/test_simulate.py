"""The simulation's pure parts, and its engine on 50 nodes (well under a second)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench import simulate
from bench.scenarios import BLOCK, SPINE, select
from bench.simulate import (
    Batch,
    Figures,
    Layout,
    SizeFigures,
    StartUp,
    gang_batch,
    list_pages,
    node_object,
    plain_batch,
    result_lines,
    running_pod_object,
    saved_pages,
    write_list,
)
from bench.workload import GANG_MIN, GANG_NAME, TOPOLOGY_INDEX
from koordgang.model.node import parse_node
from koordgang.model.pod import parse_pod

TINY = Layout(50, nodes_per_block=5, blocks_per_spine=2)


def test_layout_puts_nodes_in_blocks_of_spines() -> None:
    assert TINY.running_pods == 500
    assert TINY.domain(0) == ("s000", "s000-b00")
    assert TINY.domain(5) == ("s000", "s000-b01")
    assert TINY.domain(10) == ("s001", "s001-b00")
    node = parse_node(node_object(TINY, 12))
    assert node.name == "node-000012"
    assert node.labels[SPINE] == "s001" and node.labels[BLOCK] == "s001-b00"


def test_running_pods_fill_their_node_in_turn_and_are_low_priority() -> None:
    pods = [parse_pod(running_pod_object(TINY, i)) for i in range(20)]
    assert [p.node_name for p in pods[9:11]] == ["node-000000", "node-000001"]
    assert {p.priority for p in pods} == {simulate.LOW_PRIORITY}
    assert len({p.uid for p in pods}) == 20
    assert all(len(p.uid) == 36 for p in pods)  # as long as a real uid
    assert pods[0].owner_kind == "ReplicaSet"


def test_batches_name_their_gangs() -> None:
    assert len(plain_batch("p", 7)) == 7
    pods = gang_batch("g", 2, 3, topology="{}")
    assert len(pods) == 6
    notes = pods[4]["metadata"]["annotations"]
    assert notes[GANG_NAME] == "g-0001" and notes[GANG_MIN] == "3"
    assert notes[TOPOLOGY_INDEX] == "1"


def test_a_saved_list_pages_as_the_informer_asks(tmp_path: Path) -> None:
    pages = list(list_pages("PodList", ({"i": i} for i in range(1_001))))
    assert [len(p["items"]) for p in pages] == [500, 500, 1]
    assert [bool(p["metadata"].get("continue")) for p in pages] == [True, True, False]
    path = tmp_path / "pods.jsonl"
    assert write_list(path, pages) == path.stat().st_size
    assert [len(p["items"]) for p in saved_pages(path)] == [500, 500, 1]


def test_the_engine_binds_plain_pods_and_gangs_on_a_tiny_cluster(tmp_path: Path) -> None:
    async def scenario() -> tuple[Batch, Batch, int]:
        sim = simulate.Simulation(TINY)
        startup = sim.load_list(*sim.save_list(tmp_path))
        assert (startup.nodes, startup.pods) == (50, 500)
        sim.start()
        try:
            plain = await sim.schedule("plain", plain_batch("p", 20))
            gang = await sim.schedule("gang", gang_batch("g", 1, 10))
        finally:
            await sim.stop()
        return plain, gang, sim.api.binds

    simulate.quiet_logs()
    plain, gang, binds = asyncio.run(scenario())
    assert (plain.pods, gang.pods, binds) == (20, 10, 30)
    assert plain.cpu_ms_per_pod > 0


def _batch(label: str, ms: float) -> Batch:
    return Batch(label, 1_000, ms, ms, 0.0)


def test_the_table_says_met_or_missed() -> None:
    startup = StartUp(5, 50, 1.0, 0.1, 0.1, 50.0, 60.0)
    small = SizeFigures(5, 50, startup, plain=_batch("plain", 1.0), gang=_batch("gang", 1.0))
    large = SizeFigures(50, 500, startup, plain=_batch("plain", 1.2), gang=_batch("gang", 2.0))
    figures = Figures(
        nodes=50,
        sizes=[small, large],
        gather={
            "members": 8,
            "placed": 8,
            "gather_s": 0.5,
            "tree_s": 0.0,
            "nodes": 2,
            "blocks": 1,
            "spines": 1,
        },
        preemption={
            "members": 4,
            "victims": 4,
            "dry_runs": 1,
            "dry_run_s": 1.5,
            "engine_wall_s": 2.0,
        },
        peak_rss_mb=1024.0,
    )
    rows = {line.split("  ")[0]: line for line in result_lines(figures)}
    assert rows["CPU ms per pod, plain"].endswith("met")
    assert "1.20x" in rows["CPU ms per pod, plain"]
    assert rows["CPU ms per pod, gang"].endswith("MISSED")
    assert rows["gather, job of 8"].endswith("met")
    assert rows["preemption dry run, job of 4"].endswith("MISSED")
    assert rows["peak RSS"].endswith("met")


def test_the_bench_knows_the_scenario_without_running_it_by_default() -> None:
    [scenario] = select("simulate-50k")
    assert scenario.simulated_nodes == simulate.FULL_NODES
    assert "simulate-50k" not in {s.name for s in select("all")}
    assert "simulate-50k" not in {s.name for s in select("large")}
