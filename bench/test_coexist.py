"""The coexist scenario's pure parts: its workload, a round's figures, and the "off" switch."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bench.coexist import (
    KUBE_SCHEDULER_NAME,
    OFF,
    ON,
    CoexistPlan,
    coexist_lines,
    coexist_workload,
    round_figures,
    sum_up,
)
from bench.coexist_off import switch_off
from bench.results import ScenarioResult
from bench.workload import SCHEDULER
from koordgang.plugins.noderesources.fit import Fit
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot
from koordgang.testing.builders import node as make_node
from koordgang.testing.builders import pod as make_pod


def test_a_round_interleaves_both_schedulers_pods() -> None:
    workload = coexist_workload(CoexistPlan(nodes=4, pods_each=16, gang_size=8), 1.0)
    schedulers = [p.scheduler for p in workload.pods]
    assert schedulers[:4] == [KUBE_SCHEDULER_NAME, SCHEDULER, KUBE_SCHEDULER_NAME, SCHEDULER]
    assert schedulers.count(SCHEDULER) == 16
    assert workload.gangs == {"kg-0000": 8, "kg-0001": 8}
    assert len(workload.nodes) == 4


def _node(name: str, cpu: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": "110"}}}


def _pod(name: str, node: str, scheduler: str) -> dict[str, Any]:
    resources = {"requests": {"cpu": "1"}}
    spec = {"nodeName": node, "schedulerName": scheduler, "containers": [{"resources": resources}]}
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": "Running"}}


def test_a_round_counts_overcommitted_nodes_and_partial_gangs() -> None:
    workload = coexist_workload(CoexistPlan(nodes=2, pods_each=2, gang_size=2), 1.0)
    pods = [
        _pod("ks-00000", "bench-coexist-0000", KUBE_SCHEDULER_NAME),
        _pod("ks-00001", "bench-coexist-0000", KUBE_SCHEDULER_NAME),
        _pod("kg-0000-00", "bench-coexist-0000", SCHEDULER),
        _pod("kg-0000-01", "", SCHEDULER),
    ]
    nodes = [_node("bench-coexist-0000", "2"), _node("bench-coexist-0001", "2")]
    figures = round_figures(OFF, workload, nodes, pods, 1.0)
    assert figures.overcommitted == ("bench-coexist-0000",)
    assert figures.partial == {"kg-0000": "1/2"}
    assert (figures.bound_koordgang, figures.bound_kube_scheduler) == (1, 2)
    result = ScenarioResult("coexist", "s", "f", 2, 4, 1, 4)
    on = replace(figures, variant=ON, overcommitted=(), partial={}, apiserver_binding=(0.3, 4))
    sum_up([figures, on], result)
    assert result.notes["off_per_1000_pods"] == 250.0
    assert result.notes["on_per_1000_pods"] == 0.0
    assert result.notes["on_apiserver_binding_ms"] == 75.0
    assert result.notes["off_apiserver_binding_ms"] is None
    assert len(result.problems) == 1
    table = coexist_lines([result])
    assert any(line.startswith("| off | 1 | 4 | 1 | 250.00 | 1 | 1 | 0 |") for line in table), table
    assert table[-1].endswith("both schedulers'; mean ms): on 75"), table


def test_off_ignores_other_schedulers_nominations_and_skips_the_recheck(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def free_cpu() -> int:
        cache = SchedulerCache(own_schedulers=(SCHEDULER,))
        cache.upsert_node(make_node("n1", cpu="4"))
        theirs = make_pod("theirs", cpu="3", scheduler=KUBE_SCHEDULER_NAME)
        cache.upsert_pod(replace(theirs, nominated_node_name="n1"))
        state = cache.node("n1")
        assert state is not None
        return Snapshot(cache).free(state, "cpu")

    assert free_cpu() == 1000
    original = Fit.verify
    switch_off(monkeypatch.setattr)
    assert free_cpu() == 4000
    assert Fit.verify is not original
    assert Fit.verify(Fit.__new__(Fit), []) == {}
