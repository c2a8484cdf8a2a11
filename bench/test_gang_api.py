"""The bench's gangs in each gang API (``--gang-apis``), without a cluster: the pods and group
objects koordgang is given, read back with koordgang's own parsers, and what the report makes
of the runs."""

from __future__ import annotations

from typing import Any

import pytest

from bench import report
from bench.checks import bound_per_gang
from bench.gang_api import (
    BY_KEY,
    KUEUE_COUNT,
    KUEUE_LABEL,
    VOLCANO_ANNOTATION,
    GangApi,
    parse_gang_apis,
    pod_groups,
    pod_manifest,
)
from bench.results import ScenarioResult, is_koordgang
from bench.scenarios import LARGE_SCENARIOS, SCENARIOS
from bench.schedulers import select_schedulers
from bench.workload import BENCH_LABEL, GANG_MIN, GANG_NAME, Requests, gang_pods
from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.model.pod import parse_pod

ALL = list(BY_KEY.values())


def _member(minimum: int = 3) -> Any:
    (member, *_) = gang_pods("job", 1, minimum, Requests("1", "2Gi"))
    return member


def _as_koordgang_reads_it(manifest: dict[str, Any]) -> Any:
    manifest["metadata"]["namespace"] = "ns"
    return parse_pod(manifest)


@pytest.mark.parametrize("api", ALL, ids=[a.key for a in ALL])
def test_each_api_names_the_gang_once_and_koordgang_reads_it_there(api: GangApi) -> None:
    pod = _as_koordgang_reads_it(pod_manifest(_member(), api))
    (ref,) = Resolve(GANG_APIS)(pod)
    assert (ref.api, ref.namespace, ref.name) == (api.key, "ns", "job-000")


def test_each_api_writes_the_pod_in_its_own_words() -> None:
    member = _member(3)
    upstream = pod_manifest(member, GangApi.UPSTREAM)
    assert upstream["spec"]["schedulingGroup"] == {"podGroupName": "job-000"}
    assert "annotations" not in upstream["metadata"]
    volcano = pod_manifest(member, GangApi.VOLCANO)
    assert volcano["metadata"]["annotations"] == {VOLCANO_ANNOTATION: "job-000"}
    kueue = pod_manifest(member, GangApi.KUEUE)
    assert kueue["metadata"]["labels"] == {BENCH_LABEL: "1", KUEUE_LABEL: "job-000"}
    assert kueue["metadata"]["annotations"] == {KUEUE_COUNT: "3"}
    for api in ALL:
        if api is not GangApi.KOORDINATOR:
            annotations = pod_manifest(member, api)["metadata"].get("annotations", {})
            assert GANG_NAME not in annotations and GANG_MIN not in annotations
    # Plain pods are the same in every API.
    plain = gang_pods("p", 1, 1, Requests("1", "1Gi"))[0]
    plain = type(plain)(name="x", requests=plain.requests)
    assert all(pod_manifest(plain, api) == plain.manifest() for api in ALL)


@pytest.mark.parametrize(
    "api", [GangApi.SCHEDULER_PLUGINS, GangApi.UPSTREAM, GangApi.VOLCANO], ids=str
)
def test_group_objects_carry_the_minimum_where_koordgang_reads_it(api: GangApi) -> None:
    (group,) = pod_groups({"job-000": 7}, api)
    assert group["metadata"] == {"name": "job-000", "labels": {BENCH_LABEL: "1"}}
    reader = next(a for a in GANG_APIS if a.name == api.key)
    assert reader.resource is not None
    assert group["apiVersion"] in {f"{reader.resource.group}/{v}" for v in reader.resource.versions}
    assert group["kind"] == reader.resource.kind
    parsed = reader.parse({**group, "metadata": {**group["metadata"], "namespace": "ns"}})
    assert parsed.min_member == 7 and parsed.is_gang and not parsed.issues


def test_apis_without_a_group_object() -> None:
    assert pod_groups({"job-000": 2}, GangApi.KUEUE) == []
    assert pod_groups({"job-000": 2}, GangApi.KOORDINATOR) == []
    assert pod_groups({"job-000": 2}, GangApi.NONE) == []


def test_gang_apis_option_keeps_koordinator_first_as_the_baseline() -> None:
    assert parse_gang_apis("koordinator") == [GangApi.KOORDINATOR]
    assert parse_gang_apis("volcano,kueue,volcano") == [
        GangApi.KOORDINATOR,
        GangApi.VOLCANO,
        GangApi.KUEUE,
    ]
    assert parse_gang_apis("all") == ALL
    with pytest.raises(ValueError, match="unknown gang APIs"):
        parse_gang_apis("koordinator,slurm")


def test_koordgang_runs_once_more_per_api_on_its_gang_scenarios_only() -> None:
    apis = parse_gang_apis("scheduler-plugins,kueue")
    schedulers = select_schedulers("coscheduling", [None], apis)
    labels = [s.label for s in schedulers]
    assert labels == [
        "koordgang",
        "koordgang via scheduler-plugins",
        "koordgang via kueue",
        "koordgang all events",
        "coscheduling",
    ]
    base, via_x, _, _, peer = schedulers
    assert all(is_koordgang(label) for label in labels[:4]) and not is_koordgang(labels[4])
    assert via_x.gang_api is peer.gang_api is GangApi.SCHEDULER_PLUGINS
    assert base.gang_api is GangApi.KOORDINATOR and not base.variant
    scenarios = {s.name: s for s in SCENARIOS}
    assert via_x.covers(scenarios["gang-1k"]) and not via_x.covers(scenarios["plain"])
    assert via_x.skip_reason(scenarios["preemption"]) is None
    assert base.covers(scenarios["plain"])
    assert via_x.ceiling_label == base.ceiling_label == "before-koordgang"
    assert via_x.slug == "koordgang-via-scheduler-plugins"
    # Without the option: as before.
    assert [s.label for s in select_schedulers("none", [None])] == ["koordgang"]


def test_with_peers_koordgang_runs_once_more_writing_every_scheduled_event() -> None:
    schedulers = select_schedulers("kube-scheduler", [5000])
    assert [s.label for s in schedulers] == [
        "koordgang",
        "koordgang all events",
        "kube-scheduler qps 5000",
    ]
    base, every_event, _ = schedulers
    assert base.daemon_args == ()
    assert every_event.daemon_args == ("--scheduled-event-rate", "1000000")
    assert every_event.ceiling_label == "before-koordgang"
    scenarios = {s.name: s for s in SCENARIOS}
    # Every scenario a peer runs, the plain one and koord-scheduler's preemption included;
    # not the start-up one (no rate) nor those no peer runs.
    assert every_event.covers(scenarios["plain"]) and every_event.covers(scenarios["preemption"])
    assert not every_event.covers(scenarios["startup"])
    assert not every_event.covers(scenarios["starvation-guard"])
    assert not any(every_event.covers(s) for s in LARGE_SCENARIOS)
    # Past the daemon's queue of Events: plain at twice its size binds 10,000 in a burst.
    assert not every_event.covers(scenarios["plain"], scale=2.0)
    assert every_event.covers(scenarios["plain"], scale=0.1)


def test_partial_gangs_are_found_whatever_api_named_them() -> None:
    pods = [
        {"metadata": {"name": "job-000-0000"}, "spec": {"nodeName": "n1"}},
        {"metadata": {"name": "job-000-0001"}, "spec": {}},
        {"metadata": {"name": "other"}, "spec": {"nodeName": "n1"}},
    ]
    counts = bound_per_gang(pods, {"job-000": ["job-000-0000", "job-000-0001"]})
    assert counts == {"job-000": 1}


def _run(scheduler: str, api: GangApi, cpu_s: float, **extra: object) -> ScenarioResult:
    result = ScenarioResult("gang-1k", "", "all bound", 10, 100, 5, 100, scheduler=scheduler)
    result.gang_api = api.value
    result.bound = result.binds_seen = 100
    result.pods_per_s = 100.0 / cpu_s
    result.window_s = 1.0
    result.cores = {"scheduler": cpu_s}
    for key, value in extra.items():
        setattr(result, key, value)
    return result


def test_report_puts_each_api_beside_koordinator_and_flags_the_costly_ones() -> None:
    results = [
        _run("koordgang", GangApi.KOORDINATOR, 0.2),
        _run("koordgang via volcano", GangApi.VOLCANO, 0.21),
        _run("koordgang via kueue", GangApi.KUEUE, 0.3),
        _run("koordgang via kubernetes", GangApi.UPSTREAM, 1.0, skipped="not served"),
    ]
    lines = report.gang_api_lines(results)
    text = "\n".join(lines)
    assert "1.05x" in text and "1.50x" in text and "not run: not served" in text
    (flagged,) = [line for line in lines if line.startswith("WORSE")]
    assert GangApi.KUEUE.value in flagged
    side = report.side_by_side(results)
    assert "gang API" in side[0] and GangApi.VOLCANO.value in "\n".join(side)
    assert report.gang_api_lines(results[:1]) == []
    assert "gang API" not in report.side_by_side(results[:1])[0]


def test_report_compares_koordgang_and_a_peer_on_the_same_pod_groups() -> None:
    results = [
        _run("koordgang", GangApi.KOORDINATOR, 0.2),
        _run("koordgang via scheduler-plugins", GangApi.SCHEDULER_PLUGINS, 0.2),
        _run("coscheduling", GangApi.SCHEDULER_PLUGINS, 0.8, problems=["stalled"]),
    ]
    (line,) = report.same_api_lines(results)
    assert line.startswith("gang-1k, gangs as scheduling.x-k8s.io PodGroup: koordgang via")
    assert "(0.25x)" in line and "(4.0x)" in line
    # A koordgang variant is neither a peer nor a peer's problem.
    assert report.peer_problem_lines(results) == ["gang-1k / coscheduling: stalled"]
    crds = report.crd_lines(results)
    assert crds[1].endswith("its gangs declared as scheduling.x-k8s.io PodGroup")
