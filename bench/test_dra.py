"""The DRA scenario without a cluster: its sizes, the objects it creates, who runs it with which
gang API and flags, the checker on hand-made objects, and what the report makes of a run."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import report
from bench.dra import (
    CLAIM_FINALIZER,
    DEVICE_CLASS,
    DEVICES_PER_NODE,
    DRIVER,
    POD_REQUESTS,
    SPEC_DIGEST,
    claim_manifests,
    expected_claims,
    resource_slice,
)
from bench.dra_check import Objects, check, selects, withhold
from bench.gang_api import UPSTREAM_POD_FIELD, GangApi, pod_groups, pod_manifest
from bench.peers.config import peer_flags
from bench.results import ScenarioResult
from bench.scenarios import DRA_SCENARIOS, SCENARIOS, select
from bench.schedulers import parse_qps, select_schedulers
from bench.workload import STANDARD_NODE, Workload
from koordgang.model.quantity import parse_quantity

DRA = DRA_SCENARIOS[0]


def _build(scale: float) -> Workload:
    return DRA.build(scale)


# -- the workload --------------------------------------------------------------------------------


def test_full_scale_sizes_and_devices_all_fit() -> None:
    workload = _build(1.0)
    plan = workload.dra
    assert plan is not None
    assert len(workload.nodes) == 1_000 and len(plan.slices) == 1_000
    assert len(workload.pods) == 2_000 + 250 * 8
    assert len(workload.gangs) == 250
    assert all(len(names) == 8 for names in workload.members.values())
    assert set(workload.gangs.values()) == {8}
    assert plan.devices == 1_000 * DEVICES_PER_NODE == 8_000
    # 2,000 lone pods x 1, and per gang 4 x 1 + 4 x 2.
    assert plan.wanted == 2_000 + 250 * 12 == 5_000
    assert plan.wanted <= plan.devices
    assert workload.notes["devices_wanted"] == 5_000
    assert workload.expected_bound == len(workload.pods)


@pytest.mark.parametrize("scale", [0.1, 0.05, 0.5])
def test_scaled_sizes_scale_nodes_and_pods_alike(scale: float) -> None:
    workload = _build(scale)
    assert workload.dra is not None
    assert len(workload.nodes) == round(1_000 * scale)
    assert len(workload.gangs) == round(250 * scale)
    assert len(workload.pods) == round(2_000 * scale) + 8 * round(250 * scale)
    assert workload.dra.wanted <= workload.dra.devices


def test_each_pod_has_a_claim_of_its_own_gang_members_alternate_one_and_two() -> None:
    workload = _build(0.1)
    assert workload.dra is not None
    expected = expected_claims(workload.pods, workload.dra)
    assert len(expected) == len(workload.pods)
    assert len({claim for claim, _ in expected.values()}) == len(workload.pods)
    for pod in workload.pods:
        count = expected[pod.name][1]
        if pod.gang is None:
            assert count == 1
    for names in workload.members.values():
        assert [expected[n][1] for n in names] == [1, 2, 1, 2, 1, 2, 1, 2]
    # Deterministic: the same plan every time.
    again = _build(0.1).dra
    assert again is not None and again.claims == workload.dra.claims


def test_devices_not_cpu_bind() -> None:
    """Even a node whose every device went to a 1-device pod has cpu, memory and pod slots to
    spare: only devices can make a pod wait."""
    per_node = DEVICES_PER_NODE
    cpu = parse_quantity(POD_REQUESTS.cpu) * per_node
    memory = parse_quantity(POD_REQUESTS.memory) * per_node
    assert cpu < parse_quantity(STANDARD_NODE["cpu"]) / 4
    assert memory < parse_quantity(STANDARD_NODE["memory"]) / 4
    assert per_node < int(STANDARD_NODE["pods"])
    workload = _build(0.1)
    assert {p.requests for p in workload.pods} == {POD_REQUESTS}


def test_objects_are_node_local_pools_a_cel_class_and_claims_by_name() -> None:
    workload = _build(0.1)
    plan = workload.dra
    assert plan is not None
    node = workload.nodes[3].name
    piece = plan.slices[3]["spec"]
    assert piece["driver"] == DRIVER and piece["nodeName"] == node
    assert piece["pool"] == {"name": node, "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in piece["devices"]] == [f"gpu-{i}" for i in range(8)]
    (selector,) = plan.device_classes[0]["spec"]["selectors"]
    assert selector == {"cel": {"expression": 'device.driver == "gpu.example.com"'}}
    assert plan.device_classes[0]["metadata"]["name"] == DEVICE_CLASS
    claim = next(c for c in claim_manifests(plan) if c["metadata"]["name"].startswith("dra-job"))
    (request,) = claim["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == DEVICE_CLASS
    pod = workload.pods[-1].manifest()
    (use,) = pod["spec"]["resourceClaims"]
    assert use["resourceClaimName"] == f"{pod['metadata']['name']}-gpu"
    assert pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": use["name"]}]
    # The digest tells a slice to keep from one to replace.
    assert (
        resource_slice(node)["metadata"]["annotations"][SPEC_DIGEST]
        == (plan.slices[3]["metadata"]["annotations"][SPEC_DIGEST])
    )
    assert (
        resource_slice(node, 4)["metadata"]["annotations"][SPEC_DIGEST]
        != (plan.slices[3]["metadata"]["annotations"][SPEC_DIGEST])
    )


def test_an_upstream_gang_member_keeps_its_claim() -> None:
    workload = _build(0.1)
    member = next(p for p in workload.pods if p.gang is not None)
    pod = pod_manifest(member, GangApi.UPSTREAM)
    assert pod["spec"][UPSTREAM_POD_FIELD] == {"podGroupName": member.gang.name}  # type: ignore[union-attr]
    assert pod["spec"]["resourceClaims"]
    (group, *_) = pod_groups(workload.gangs, GangApi.UPSTREAM)
    assert group["spec"] == {"schedulingPolicy": {"gang": {"minCount": 8}}}


# -- who runs it, how ----------------------------------------------------------------------------


def test_selected_by_name_only() -> None:
    assert hash(DRA) == hash(DRA)  # scenarios stay hashable with their mapping of peers
    assert DRA not in select("all")
    assert DRA not in SCENARIOS
    assert select("dra") == [DRA]


def test_kube_scheduler_runs_it_as_gangs_with_its_gang_gates_and_others_do_not() -> None:
    schedulers = select_schedulers("all", parse_qps("default,5000"), [GangApi.UPSTREAM])
    by_label = {s.label: s for s in schedulers}
    for label in ("kube-scheduler", "kube-scheduler qps 5000"):
        kube = by_label[label]
        assert kube.skip_reason(DRA) is None
        assert kube.gang_api_for(DRA) is GangApi.UPSTREAM
        # Elsewhere: upstream PodGroups from 1.37, no gang API on 1.36.
        expected = GangApi.NONE if os.environ.get("KUBE") == "1.36" else GangApi.UPSTREAM
        assert kube.gang_api_for(SCENARIOS[1]) is expected
    assert by_label["kube-scheduler qps 5000"].qps == 5000
    assert by_label["kube-scheduler"].qps is None
    assert by_label["coscheduling"].skip_reason(DRA)
    assert by_label["koord-scheduler"].skip_reason(DRA)
    assert by_label["koordgang"].gang_api_for(DRA) is GangApi.KOORDINATOR
    assert by_label["koordgang via kubernetes"].gang_api_for(DRA) is GangApi.UPSTREAM
    (flag,) = peer_flags("kube-scheduler", upstream_gangs=True)
    assert flag.startswith("--feature-gates=") and "GenericWorkload=true" in flag
    # 1.37 folded the GangScheduling gate into GenericWorkload (and refuses the old name).
    assert ("GangScheduling=true" in flag) == (os.environ.get("KUBE") == "1.36")
    assert peer_flags("kube-scheduler") == ()


# -- the checker ---------------------------------------------------------------------------------


def _cluster() -> tuple[Objects, dict[str, tuple[str, int]], dict[str, list[str]]]:
    """Two nodes, a lone pod (1 device) and a gang of 2 (1 and 2 devices), all allocated."""
    nodes = [{"metadata": {"name": n, "labels": {"zone": n[-1]}}} for n in ("n-a", "n-b")]
    slices = [resource_slice("n-a", 4), resource_slice("n-b", 4)]
    pods: list[dict[str, Any]] = []
    claims: list[dict[str, Any]] = []
    layout = {
        "lone": ("n-a", ["gpu-0"]),
        "g-0": ("n-b", ["gpu-0"]),
        "g-1": ("n-b", ["gpu-1", "gpu-2"]),
    }
    for name, (node, devices) in layout.items():
        pods.append(
            {
                "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
                "spec": {"nodeName": node},
            }
        )
        claims.append(_claim(f"{name}-gpu", name, node, devices))
    expected = {"lone": ("lone-gpu", 1), "g-0": ("g-0-gpu", 1), "g-1": ("g-1-gpu", 2)}
    return Objects(pods, claims, slices, nodes), expected, {"g": ["g-0", "g-1"]}


def _claim(name: str, pod: str, node: str, devices: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "finalizers": [CLAIM_FINALIZER]},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": DRIVER, "pool": node, "device": d}
                        for d in devices
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"}],
        },
    }


def _broken(change: Callable[[Objects], None]) -> list[str]:
    objects, expected, members = _cluster()
    objects = copy.deepcopy(objects)
    change(objects)
    return check(objects, "ns", expected, members)


def test_a_correct_run_passes() -> None:
    objects, expected, members = _cluster()
    assert check(objects, "ns", expected, members) == []


def _claim_of(objects: Objects, name: str) -> dict[str, Any]:
    return next(c for c in objects.claims if c["metadata"]["name"] == name)  # type: ignore[misc]


def _pod_of(objects: Objects, name: str) -> dict[str, Any]:
    return next(p for p in objects.pods if p["metadata"]["name"] == name)  # type: ignore[misc]


def test_an_unbound_member_fails_the_pod_and_its_gang() -> None:
    problems = _broken(lambda o: _pod_of(o, "g-1")["spec"].pop("nodeName"))
    assert any("pods not bound" in p and "g-1" in p for p in problems)
    assert any("gangs not whole" in p and "g 1/2" in p for p in problems)


def test_a_claim_not_allocated_fails() -> None:
    problems = _broken(lambda o: _claim_of(o, "lone-gpu")["status"].pop("allocation"))
    assert problems == ["DRA: 1 claims of bound pods not allocated: lone-gpu"]


def test_devices_must_be_on_the_pods_node() -> None:
    def elsewhere(objects: Objects) -> None:
        result = _claim_of(objects, "lone-gpu")["status"]["allocation"]["devices"]["results"][0]
        result.update(pool="n-b", device="gpu-3")

    problems = _broken(elsewhere)
    assert any("devices not on their pod's node" in p for p in problems)


def test_a_device_given_twice_fails_even_to_a_claim_of_another_namespace() -> None:
    def twice(objects: Objects) -> None:
        other = _claim("left-over", "someone", "n-b", ["gpu-2"])
        other["metadata"]["namespace"] = "elsewhere"
        objects.claims.append(other)  # type: ignore[attr-defined]

    problems = _broken(twice)
    assert len(problems) == 1 and "more than one claim" in problems[0]
    assert "gpu.example.com/n-b/gpu-2" in problems[0]


def test_the_claim_must_be_reserved_for_its_pod_alone() -> None:
    def other_uid(objects: Objects) -> None:
        _claim_of(objects, "g-0-gpu")["status"]["reservedFor"][0]["uid"] = "stale"

    assert any("not reserved for exactly their pod" in p for p in _broken(other_uid))

    def two(objects: Objects) -> None:
        reserved = _claim_of(objects, "g-0-gpu")["status"]["reservedFor"]
        reserved.append({"resource": "pods", "name": "x", "uid": "x"})

    assert any("not reserved for exactly their pod" in p for p in _broken(two))


def test_wrong_count_unknown_device_missing_finalizer_and_wide_selector_fail() -> None:
    def few(objects: Objects) -> None:
        _claim_of(objects, "g-1-gpu")["status"]["allocation"]["devices"]["results"].pop()

    assert any("wrong number of devices" in p and "1/2" in p for p in _broken(few))

    def unknown(objects: Objects) -> None:
        result = _claim_of(objects, "lone-gpu")["status"]["allocation"]["devices"]["results"][0]
        result["device"] = "gpu-9"

    assert any("devices not published" in p for p in _broken(unknown))

    def no_finalizer(objects: Objects) -> None:
        _claim_of(objects, "lone-gpu")["metadata"]["finalizers"] = []

    assert any(CLAIM_FINALIZER in p for p in _broken(no_finalizer))

    def everywhere(objects: Objects) -> None:
        _claim_of(objects, "lone-gpu")["status"]["allocation"].pop("nodeSelector")

    assert any("not selecting exactly" in p for p in _broken(everywhere))

    def by_label(objects: Objects) -> None:
        # Another way to say "node n-a" is accepted: it selects that node only.
        _claim_of(objects, "lone-gpu")["status"]["allocation"]["nodeSelector"] = {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
            ]
        }

    assert _broken(by_label) == []


def test_missing_pods_and_claims_are_reported() -> None:
    assert any(
        "pods missing" in p
        for p in _broken(lambda o: o.pods.remove(_pod_of(o, "lone")))  # type: ignore[attr-defined]
    )
    assert any(
        "claims missing" in p
        for p in _broken(lambda o: o.claims.remove(_claim_of(o, "lone-gpu")))  # type: ignore[attr-defined]
    )


def test_node_selector_semantics() -> None:
    node = {"metadata": {"name": "n1", "labels": {"a": "1", "size": "5"}}}

    def term(*requirements: dict[str, Any], fields: bool = False) -> dict[str, Any]:
        key = "matchFields" if fields else "matchExpressions"
        return {"nodeSelectorTerms": [{key: list(requirements)}]}

    assert selects(term({"key": "a", "operator": "In", "values": ["1"]}), node)
    assert not selects(term({"key": "a", "operator": "NotIn", "values": ["1"]}), node)
    assert selects(term({"key": "b", "operator": "DoesNotExist"}), node)
    assert selects(term({"key": "size", "operator": "Gt", "values": ["4"]}), node)
    assert not selects(term({"key": "size", "operator": "Lt", "values": ["4"]}), node)
    assert selects(
        term({"key": "metadata.name", "operator": "In", "values": ["n1"]}, fields=True), node
    )
    assert not selects({"nodeSelectorTerms": [{}]}, node)
    assert not selects({"nodeSelectorTerms": []}, node)


def test_the_checker_shares_no_code_with_koordgang() -> None:
    code = (
        "import sys, bench.dra_check; "
        "print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('koordgang', 'e2e', 'harness')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"


# -- the report ----------------------------------------------------------------------------------


def _result(scheduler: str, problems: list[str] | None = None) -> ScenarioResult:
    result = ScenarioResult(
        name="dra",
        summary="",
        finish="all bound",
        nodes=100,
        pods=400,
        gangs=25,
        expected=400,
        bound=400,
        binds_seen=400,
        pods_per_s=200.0,
        pct_of_ceiling=20.0,
        gangs_complete=25,
        cores={"scheduler": 0.5, "kube-apiserver": 0.8, "etcd": 0.2},
        window_s=2.0,
        scheduler=scheduler,
        gang_api="koordinator annotations",
        notes={"devices_wanted": 500, "apiserver": {"POST pods/binding": 400.0, "gc cpu s": 1}},
        problems=problems or [],
    )
    if result.problems:
        withhold(result)
    return result


def test_report_puts_the_figures_side_by_side_and_a_failed_run_without_them() -> None:
    good = _result("koordgang")
    bad = _result("kube-scheduler", ["DRA: 1 claims of bound pods not allocated: x-gpu"])
    assert bad.pods_per_s is None and bad.pct_of_ceiling is None
    assert bad.notes["withheld"]["pods_per_s"] == 200.0
    lines = report.dra_lines([good, bad])
    header = lines[0]
    assert "scheduler CPU ms/pod" in header and "apiserver CPU ms/pod" in header
    row = next(line for line in lines if line.startswith("dra") and "koordgang" in line)
    # 0.5 cores x 2 s / 400 pods = 2.5 ms; the API server 4 ms.
    assert "200" in row and "2.50" in row and "4.00" in row and row.endswith("ok")
    failed = next(line for line in lines if "kube-scheduler" in line and "FAILED" in line)
    assert "2.50" not in failed
    assert any("POST pods/binding 1.00" in line for line in lines)
    assert any("not allocated" in line for line in lines)
    # Nor in the general tables.
    cost = report.cost_table([], [good, bad])
    assert not any("kube-scheduler" in line for line in cost)
    assert report.dra_lines([_result("koordgang")][:0]) == []
