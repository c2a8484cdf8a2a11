"""The audit-log half of the shared checker (harness/invariants.py), on audit events written here:
no cluster needed."""

from __future__ import annotations

import datetime as dt
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from harness.dra import doubly_allocated
from harness.invariants import (
    AuditLog,
    double_bindings,
    overcommitted,
    overdrawn_devices,
    pod_deletes_by,
    pods_bound_twice,
    quantity,
    writes_by,
)
from harness.rbac import USERNAME


def event(
    verb: str,
    name: str,
    *,
    subresource: str | None = None,
    code: int = 201,
    agent: str = "koordgang/host_1",
    user: str = USERNAME,
    at: str = "2026-01-01T00:00:00.000000Z",
) -> dict[str, Any]:
    ref: dict[str, Any] = {"resource": "pods", "namespace": "ns", "name": name, "apiVersion": "v1"}
    if subresource:
        ref["subresource"] = subresource
    return {
        "verb": verb,
        "objectRef": ref,
        "user": {"username": user},
        "userAgent": agent,
        "responseStatus": {"code": code},
        "requestReceivedTimestamp": at,
    }


def write(path: Path, *events: dict[str, Any]) -> None:
    with path.open("a") as handle:
        for e in events:
            handle.write(json.dumps(e) + "\n")


def test_reads_from_where_it_began_across_a_rotation(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    write(path, event("create", "before", subresource="binding"))
    log = AuditLog(path)
    write(path, event("create", "a", subresource="binding"))
    # The API server rotates: the file is renamed, a new one takes its name.
    path.rename(tmp_path / "audit-2026-01-01T00-00-00.000.log")
    write(
        path,
        event("create", "a", subresource="binding"),
        event("create", "b", subresource="binding"),
    )
    with path.open("a") as handle:
        handle.write('{"verb": "create", "half a li')  # being written: left out
    events = log.events()
    assert [e["objectRef"]["name"] for e in events] == ["a", "a", "b"]
    assert pods_bound_twice(events) == {"ns/a": 2}


def test_a_refused_binding_and_other_users_deletes_do_not_count(tmp_path: Path) -> None:
    events = [
        event("create", "a", subresource="binding"),
        event("create", "a", subresource="binding", code=409),
        event("delete", "v", code=200),
        event("delete", "v", code=404),
        event("delete", "w", code=200, user="system:admin"),
    ]
    assert pods_bound_twice(events) == {}
    assert pod_deletes_by(events) == {"ns/v": 1}


def test_writes_by_one_daemon_in_a_time_window() -> None:
    events = [
        event("create", "a", agent="koordgang/host_1 (python)", at="2026-01-01T00:00:01Z"),
        event("create", "b", agent="koordgang/host_12", at="2026-01-01T00:00:02Z"),
        event("create", "c", agent="koordgang/host_1", at="2026-01-01T00:00:05Z"),
    ]
    since = dt.datetime(2026, 1, 1, 0, 0, 0, tzinfo=dt.UTC)
    until = dt.datetime(2026, 1, 1, 0, 0, 4, tzinfo=dt.UTC)
    assert [
        e["objectRef"]["name"]
        for e in writes_by(events, "koordgang/host_1", since=since, until=until)
    ] == ["a"]


# -- the over-commit half: the checker's own reading of requests --------------------------------


def node_json(name: str, **allocatable: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def pod_json(
    name: str,
    node: str,
    *requests: dict[str, str],
    init: tuple[dict[str, Any], ...] = (),
    phase: str = "Running",
    overhead: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeName": node,
        "containers": [
            {"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(requests)
        ],
        "initContainers": list(init),
    }
    if overhead:
        spec["overhead"] = overhead
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("1Gi", Fraction(2**30)),
        ("1536Mi", Fraction(1536 * 2**20)),
        ("1k", Fraction(1000)),
        ("1.5", Fraction(3, 2)),
        ("2e3", Fraction(2000)),
        ("1E", Fraction(10**18)),
    ],
)
def test_quantities_are_read_exactly(text: str, value: Fraction) -> None:
    assert quantity(text) == value


def test_pods_over_a_nodes_allocatable_are_found_per_resource() -> None:
    nodes = [node_json("n1", cpu="2", memory="1Gi", pods="3"), node_json("n2", cpu="2", pods="1")]
    pods = [
        pod_json("a", "n1", {"cpu": "1500m", "memory": "512Mi"}),
        pod_json("b", "n1", {"cpu": "600m", "memory": "512Mi"}),
        pod_json("done", "n1", {"cpu": "4"}, phase="Succeeded"),
        pod_json("c", "n2", {"cpu": "1"}),
        pod_json("d", "n2", {"cpu": "1"}),
        pod_json("pending", "", {"cpu": "64"}),
    ]
    assert overcommitted(nodes, pods) == {"n1": ["cpu"], "n2": ["pods"]}
    assert overcommitted(nodes, pods[2:]) == {"n2": ["pods"]}


def test_an_init_container_counts_when_it_asks_more_and_sidecars_always_count() -> None:
    init = ({"name": "setup", "resources": {"requests": {"cpu": "3"}}},)
    sidecar = (
        {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
    )
    nodes = [node_json("n1", cpu="2", pods="10")]
    assert overcommitted(nodes, [pod_json("big-init", "n1", {"cpu": "1"}, init=init)]) == {
        "n1": ["cpu"]
    }
    with_sidecar = pod_json("p", "n1", {"cpu": "1500m"}, init=sidecar)
    assert overcommitted(nodes, [with_sidecar]) == {"n1": ["cpu"]}
    overhead = pod_json("o", "n1", {"cpu": "1800m"}, overhead={"cpu": "250m"})
    assert overcommitted(nodes, [overhead]) == {"n1": ["cpu"]}
    assert overcommitted(nodes, [pod_json("fits", "n1", {"cpu": "2"})]) == {}


def binding(name: str, node: str, code: int, at: str, user: str = USERNAME) -> dict[str, Any]:
    e = event("create", name, subresource="binding", code=code, at=at, user=user)
    e["requestObject"] = {"kind": "Binding", "target": {"kind": "Node", "name": node}}
    return e


def created(uid: str, at: str) -> tuple[str, dt.datetime]:
    return (uid, dt.datetime.fromisoformat(at))


def test_a_pod_asked_for_two_nodes_is_a_double_binding_whatever_the_answers() -> None:
    events = [
        binding("a", "n1", 201, "2026-01-01T00:00:01Z"),
        binding("a", "n2", 409, "2026-01-01T00:00:02Z"),
    ]
    incarnations = {"ns/a": [created("uid-a", "2026-01-01T00:00:00Z")]}
    assert double_bindings(events, incarnations) == {"ns/a#uid-a": ["n1:201", "n2:409"]}
    # The answers do not matter: two refused requests for two nodes are two decisions too.
    refused = [
        binding("a", "n1", 500, "2026-01-01T00:00:01Z"),
        binding("a", "n2", 500, "2026-01-01T00:00:02Z"),
    ]
    assert list(double_bindings(refused, incarnations)) == ["ns/a#uid-a"]


def test_a_retry_to_the_same_node_and_a_name_recreated_are_not_double_bindings() -> None:
    events = [
        # The first answer was lost: the retry finds the pod bound where it asked.
        binding("a", "n1", 201, "2026-01-01T00:00:01Z"),
        binding("a", "n1", 409, "2026-01-01T00:00:02Z"),
        # ns/b is deleted and made again under its name: two pods, one binding each.
        binding("b", "n1", 201, "2026-01-01T00:00:01Z"),
        binding("b", "n2", 201, "2026-01-01T00:00:09Z"),
        # Refused before its body was read: no node to compare.
        binding("d", "n1", 201, "2026-01-01T00:00:02Z"),
        {**binding("d", "n2", 403, "2026-01-01T00:00:01Z"), "requestObject": None},
        # Another user's bindings are not the scheduler's.
        binding("c", "n1", 201, "2026-01-01T00:00:01Z", user="someone"),
        binding("c", "n2", 201, "2026-01-01T00:00:02Z", user="someone"),
    ]
    incarnations = {
        "ns/a": [created("uid-a", "2026-01-01T00:00:00Z")],
        "ns/d": [created("uid-d", "2026-01-01T00:00:00Z")],
        "ns/b": [
            created("uid-b1", "2026-01-01T00:00:00Z"),
            created("uid-b2", "2026-01-01T00:00:05Z"),
        ],
    }
    assert double_bindings(events, incarnations) == {}
    # Without the watch's second pod, ns/b would be one pod bound to two nodes.
    merged = {**incarnations, "ns/b": incarnations["ns/b"][:1]}
    assert list(double_bindings(events, merged)) == ["ns/b#uid-b1"]


def result(device: str, **extra: Any) -> dict[str, Any]:
    return {"request": "r", "driver": "d.example.com", "pool": "p", "device": device, **extra}


def allocated(*results: dict[str, Any]) -> dict[str, Any]:
    return {"status": {"allocation": {"devices": {"results": list(results)}}}}


def shared_slice(memory: str) -> dict[str, Any]:
    device = {
        "name": "gpu-0",
        "allowMultipleAllocations": True,
        "capacity": {"memory": {"value": memory}},
    }
    return {"spec": {"driver": "d.example.com", "pool": {"name": "p"}, "devices": [device]}}


def test_shares_of_a_device_are_no_double_allocation_but_may_not_overdraw_it() -> None:
    def share(n: int, gib: int) -> dict[str, Any]:
        return result("gpu-0", shareID=f"s{n}", consumedCapacity={"memory": f"{gib}Gi"})

    four = [allocated(share(n, 20)) for n in range(4)]
    device = ("d.example.com", "p", "gpu-0")
    assert doubly_allocated(four) == {}
    assert overdrawn_devices(four, [shared_slice("80Gi")]) == {}
    five = [*four, allocated(share(4, 20))]
    assert overdrawn_devices(five, [shared_slice("80Gi")]) == {
        device: f"memory: {100 * 2**30} > {80 * 2**30}"
    }
    # A share beside a claim holding the device whole is a device given twice.
    assert doubly_allocated([*four, allocated(result("gpu-0"))]) == {device: 2}
    assert doubly_allocated([allocated(result("gpu-0")), allocated(result("gpu-0"))]) == {device: 2}
