"""The peers' side of the bench, without a cluster: how each is built, configured and given
its gangs, which scenarios it runs, and what the report says about it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from bench.gang_api import COSCHEDULING_LABEL, GangApi, pod_groups, pod_manifest
from bench.peers.build import PEER_BINARIES
from bench.peers.config import bench_config, peer_flags
from bench.peers.reasons import peer_reasons
from bench.scenarios import SCENARIOS
from bench.schedulers import RAISED_QPS, parse_qps, select_schedulers
from bench.workload import GANG_MIN, GANG_NAME, SCHEDULER, gang_pods, plain_pods
from controlplane.build import control_plane_binaries, required_version


def test_each_peer_is_pinned_to_an_exact_release() -> None:
    versions = {b.name: b.version for b in PEER_BINARIES}
    apiserver = next(b for b in control_plane_binaries() if b.name == "kube-apiserver")
    assert versions["kube-scheduler"] == apiserver.version
    assert all(re.fullmatch(r"v\d+\.\d+\.\d+", v) for v in versions.values()), versions
    # scheduler-plugins' own pin of Kubernetes is replaced by a served patch release of the
    # same minor version, which the printed version says.
    coscheduling = next(b for b in PEER_BINARIES if b.name == "coscheduling")
    go_mod = coscheduling.module_dir / "go.mod"
    assert required_version(go_mod, "sigs.k8s.io/scheduler-plugins").startswith("v0.34.")
    assert "k8s.io/kubernetes => k8s.io/kubernetes v1.34." in go_mod.read_text()


def test_coscheduling_gets_a_pod_group_and_a_label_instead_of_annotations() -> None:
    (member, *_) = gang_pods("job", 1, 4, plain_pods("x", 1)[0].requests, min_available=3)
    pod = pod_manifest(member, GangApi.SCHEDULER_PLUGINS)
    assert pod["metadata"]["labels"][COSCHEDULING_LABEL] == "job-000"
    assert GANG_NAME not in pod["metadata"].get("annotations", {})
    assert pod["spec"]["schedulerName"] == SCHEDULER
    (group,) = pod_groups({"job-000": 3}, GangApi.SCHEDULER_PLUGINS)
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["metadata"]["name"] == "job-000" and group["spec"]["minMember"] == 3


def test_koordinator_annotations_are_left_for_koordgang_and_koord_scheduler() -> None:
    (member, *_) = gang_pods("job", 1, 2, plain_pods("x", 1)[0].requests)
    pod = pod_manifest(member, GangApi.KOORDINATOR)
    assert pod["metadata"]["annotations"] == {GANG_NAME: "job-000", GANG_MIN: "2"}
    assert COSCHEDULING_LABEL not in pod["metadata"]["labels"]
    assert pod_groups({"job-000": 2}, GangApi.KOORDINATOR) == []
    assert "annotations" not in pod_manifest(member, GangApi.NONE)["metadata"]


def _shipped(tmp_path: Path, relative: str, document: object) -> Path:
    target = tmp_path / relative
    target.parent.mkdir(parents=True)
    target.write_text(yaml.safe_dump(document))
    return tmp_path


def test_coscheduling_runs_its_shipped_profile_on_the_bench_pods(tmp_path: Path) -> None:
    shipped = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": True},
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [
                    {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}
                ],
            }
        ],
    }
    source = _shipped(tmp_path, "manifests/coscheduling/scheduler-config.yaml", shipped)
    config = bench_config("coscheduling", source, Path("/k/kubeconfig"), None)
    assert config["profiles"][0]["schedulerName"] == SCHEDULER
    plugin_config = config["profiles"][0]["pluginConfig"]
    assert plugin_config == [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}]
    assert config["leaderElection"] == {"leaderElect": False}
    # As shipped: no QPS of ours.
    assert config["clientConnection"] == {"kubeconfig": "/k/kubeconfig"}
    raised = bench_config("coscheduling", source, Path("/k"), RAISED_QPS)
    assert raised["clientConnection"]["qps"] == raised["clientConnection"]["burst"] == 5000


def test_koord_scheduler_configuration_is_read_from_its_config_map(tmp_path: Path) -> None:
    inner = {"kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "x"}]}
    config_map = {"kind": "ConfigMap", "data": {"koord-scheduler-config": yaml.safe_dump(inner)}}
    source = _shipped(tmp_path, "config/manager/scheduler-config.yaml", config_map)
    config = bench_config("koord-scheduler", source, Path("/k"), 5000)
    (profile,) = config["profiles"]
    assert profile["schedulerName"] == SCHEDULER
    assert config["clientConnection"]["qps"] == 5000


def test_koord_scheduler_runs_with_job_preemption_and_topology_switched_on(
    tmp_path: Path,
) -> None:
    shipped_profile = {
        "schedulerName": "koord-scheduler",
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"x": 1}}],
        "plugins": {
            "postFilter": {
                "disabled": [{"name": "*"}],
                "enabled": [
                    {"name": n} for n in ("Reservation", "Coscheduling", "DefaultPreemption")
                ],
            }
        },
    }
    inner = {"kind": "KubeSchedulerConfiguration", "profiles": [shipped_profile]}
    config_map = {"kind": "ConfigMap", "data": {"koord-scheduler-config": yaml.safe_dump(inner)}}
    source = _shipped(tmp_path, "config/manager/scheduler-config.yaml", config_map)
    (shipped,) = bench_config("koord-scheduler", source, Path("/k"), None)["profiles"]
    assert shipped["plugins"] == shipped_profile["plugins"]  # elsewhere: as shipped
    assert peer_flags("koord-scheduler") == ()
    (profile,) = bench_config("koord-scheduler", source, Path("/k"), None, job_features=True)[
        "profiles"
    ]
    args = {e["name"]: e["args"] for e in profile["pluginConfig"]}
    assert args["NodeResourcesFit"] == {"x": 1}
    assert args["Coscheduling"]["enablePreemption"] is True
    assert args["Coscheduling"]["awareNetworkTopology"] is True
    # No PostFilter after Coscheduling may preempt for a single member.
    enabled = [p["name"] for p in profile["plugins"]["postFilter"]["enabled"]]
    assert enabled[-1] == "Coscheduling" and "DefaultPreemption" not in enabled
    assert peer_flags("koord-scheduler", job_features=True) == (
        "--enable-network-topology-manager=true",
    )
    assert peer_flags("coscheduling", job_features=True) == ()


def test_kube_scheduler_runs_gangs_from_1_37_and_peers_skip_koordgang_only_ones() -> None:
    schedulers = select_schedulers("all", parse_qps("default,5000"))
    labels = [s.label for s in schedulers]
    assert labels[:2] == ["koordgang", "koordgang all events"] and len(labels) == 8
    assert "coscheduling qps 5000" in labels and "koord-scheduler" in labels
    by_name = {s.name: s for s in schedulers}
    scenarios = {s.name: s for s in SCENARIOS}
    kube = by_name["kube-scheduler"]
    assert kube.skip_reason(scenarios["plain"]) is None
    # 1.37's kube-scheduler schedules upstream PodGroups; 1.36's gang scheduling (alpha) is
    # compared in the DRA scenario only.
    if os.environ.get("KUBE") == "1.36":
        assert kube.skip_reason(scenarios["gang-1k"]) == "no gang API"
    else:
        assert kube.skip_reason(scenarios["gang-1k"]) is None
        assert kube.gang_api_for(scenarios["gang-1k"]) is GangApi.UPSTREAM
    assert by_name["coscheduling"].skip_reason(scenarios["gang-1k"]) is None
    # koord-scheduler has job-level preemption and topology placement; no other peer does.
    for name in ("preemption", "topology", "topology-plain"):
        assert by_name["koord-scheduler"].skip_reason(scenarios[name]) is None
        assert by_name["coscheduling"].skip_reason(scenarios[name])
        assert by_name["kube-scheduler"].skip_reason(scenarios[name])
    assert by_name["koord-scheduler"].skip_reason(scenarios["starvation-guard"])
    assert all(by_name["koordgang"].skip_reason(s) is None for s in SCENARIOS)
    assert select_schedulers("none", [None]) == schedulers[:1]


def test_peer_reasons_quote_distinct_failures_once(tmp_path: Path) -> None:
    log = tmp_path / "peer.log"
    log.write_text(
        "I1124 10:00:00.1 1 a.go:1] started\n"
        'E1124 10:00:01.1 1 b.go:2] "Unable to schedule pod" pod="ns/a-1" err="0/5 nodes"\n'
        'E1124 10:00:02.2 1 b.go:2] "Unable to schedule pod" pod="ns/a-2" err="0/5 nodes"\n'
        'E1124 10:00:03.3 1 c.go:3] "PreFilter failed" err="gang ns/g timed out"\n'
    )
    quoted = peer_reasons(log)
    assert len(quoted) == 2
    assert "a-2" in quoted[0] and "timed out" in quoted[1]
    assert peer_reasons(tmp_path / "missing.log") == []


def test_the_composite_scenario_writes_a_tree_both_schedulers_read() -> None:
    from bench.gang_api import composite_object
    from bench.scenarios import COMPOSITE_SCENARIOS

    (scenario,) = COMPOSITE_SCENARIOS
    workload = scenario.build(1.0)
    (plan,) = workload.composites
    assert plan.min_groups == len(plan.children) == 8
    objects = pod_groups(workload.gangs, GangApi.UPSTREAM, workload.composites)
    assert objects[0] == composite_object(plan)
    assert objects[0]["spec"]["schedulingConstraints"] == {"topology": [{"key": "bench/spine"}]}
    children = objects[1:]
    assert len(children) == 8
    for child in children:
        assert child["spec"]["parentCompositePodGroupName"] == "cpg"
        assert child["spec"]["schedulingConstraints"] == {"topology": [{"key": "bench/block"}]}
        assert child["spec"]["schedulingPolicy"] == {"gang": {"minCount": 64}}
    # One block holds exactly one child: 16 nodes of 4 cpu for 64 pods of 1 cpu.
    blocks: dict[str, int] = {}
    for spec in workload.nodes:
        blocks[spec.labels["bench/block"]] = blocks.get(spec.labels["bench/block"], 0) + 4
    assert set(blocks.values()) == {64} and len(blocks) == 16
    kube = {s.name: s for s in select_schedulers("all", [None])}
    assert kube["kube-scheduler"].skip_reason(scenario) is None
    assert kube["coscheduling"].skip_reason(scenario)
    assert kube["koordgang"].gang_api_for(scenario) is GangApi.UPSTREAM


def test_the_composite_check_finds_a_child_split_and_a_tree_across_spines() -> None:
    from bench.checks import composite_problems
    from bench.workload import CompositePlan

    plan = CompositePlan("cpg", 2, ("a", "b"), "spine", "block")
    nodes = [
        {"metadata": {"name": n, "labels": {"spine": s, "block": b}}}
        for n, s, b in (("n1", "s0", "k0"), ("n2", "s0", "k1"), ("n3", "s1", "k2"))
    ]
    members = {"a": ["a0", "a1"], "b": ["b0", "b1"]}

    def pods(**where: str) -> list[dict[str, Any]]:
        return [{"metadata": {"name": p}, "spec": {"nodeName": n}} for p, n in where.items()]

    assert (
        composite_problems(pods(a0="n1", a1="n1", b0="n2", b1="n2"), nodes, members, [plan]) == []
    )
    split = composite_problems(pods(a0="n1", a1="n2", b0="n2", b1="n2"), nodes, members, [plan])
    assert split == ["a spans block ['k0', 'k1']"]
    across = composite_problems(pods(a0="n1", a1="n1", b0="n3", b1="n3"), nodes, members, [plan])
    assert across == ["cpg spans spine ['s0', 's1']"]
    short = composite_problems(pods(a0="n1", a1="n1", b0="n2"), nodes, members, [plan])
    assert short == ["cpg: 1 children whole, min 2"]
