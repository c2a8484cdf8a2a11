"""The audit-log half of the shared checker (e2e/invariants.py), on audit events written here:
no cluster needed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from e2e.invariants import (
    AuditLog,
    pod_deletes_by,
    pods_bound_twice,
    writes_by,
)
from e2e.rbac import USERNAME


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
