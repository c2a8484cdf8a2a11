"""Every check at once, for the end of a scenario: the invariants of ``invariants`` (nodes, pods,
devices, the audit log), the gangs of ``gangs`` (none bound below its minimum) and PodGroup
status (it counts its members as the API server shows them). Kept apart from both so that
neither imports the other."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.daemon import LocalDaemon
from harness.gangs import PG_GROUP, PG_PLURAL, PG_VERSION, POD_GROUP_LABEL, assert_no_partial_gangs
from harness.invariants import (
    AuditLog,
    assert_invariants,
    double_bindings,
    pod_deletes_by,
    pods_bound_twice,
)
from harness.kube import Cluster, json_object

# -- PodGroups -----------------------------------------------------------------------------------

#: How long a PodGroup's status may lag behind its members (the status writer coalesces).
STATUS_CONVERGES_WITHIN = 30.0


def podgroup_divergence(cluster: Cluster, namespace: str) -> list[str]:
    """PodGroups (scheduling.sigs.k8s.io) of ``namespace`` whose status does not count what the
    API server shows of their members: ``scheduled`` (bound), ``running`` (phase Running), and
    a phase at least Scheduled once the bound members reach ``minMember``. One line each."""
    listed = json_object(
        cluster.custom.list_namespaced_custom_object(PG_GROUP, PG_VERSION, namespace, PG_PLURAL)
    )
    groups: list[dict[str, Any]] = listed["items"]
    if not groups:
        return []
    members: dict[str, list[Any]] = defaultdict(list)
    for pod in cluster.pods(namespace):
        name = (pod.metadata.labels or {}).get(POD_GROUP_LABEL)
        if name and pod.metadata.deletion_timestamp is None:
            members[name].append(pod)
    wrong = []
    for group in groups:
        name = group["metadata"]["name"]
        status = group.get("status") or {}
        pods = members.get(name, [])
        bound = sum(1 for p in pods if p.spec.node_name)
        running = sum(1 for p in pods if p.status.phase == "Running")
        minimum = int((group.get("spec") or {}).get("minMember") or 0)
        said = (status.get("scheduled") or 0, status.get("running") or 0)
        phase = status.get("phase")
        if said != (bound, running):
            wrong.append(
                f"{namespace}/{name}: status says scheduled/running {said[0]}/{said[1]}, "
                f"the API server shows {bound}/{running}"
            )
        elif minimum and bound >= minimum and phase not in ("Scheduled", "Running", "Finished"):
            wrong.append(f"{namespace}/{name}: {bound} of min {minimum} bound, phase {phase}")
    return wrong


def assert_podgroups_converge(
    cluster: Cluster, namespaces: Iterable[str], timeout: float = STATUS_CONVERGES_WITHIN
) -> None:
    namespaces = list(namespaces)

    def diverging() -> list[str]:
        return [line for ns in namespaces for line in podgroup_divergence(cluster, ns)]

    deadline = time.monotonic() + timeout
    wrong = diverging()
    while wrong and time.monotonic() < deadline:
        time.sleep(0.5)
        wrong = diverging()
    assert not wrong, f"PodGroup status not converged after {timeout:.0f} s: {wrong}"


# -- all of it ------------------------------------------------------------------------------------


def assert_all_invariants(
    cluster: Cluster,
    namespaces: Iterable[str],
    *,
    gangs: Iterable[Any] = (),
    audit: AuditLog | None = None,
    incarnations: Mapping[str, Sequence[tuple[str, Any]]] | None = None,
    daemons: Iterable[LocalDaemon] = (),
) -> None:
    """Everything that must hold once a scenario (with its faults) is over, in ``namespaces``:

    - no node over-committed, no device allocated to two claims, kopf wrote to no pod, every
      pending pod of ours explained;
    - no gang bound below its minimum (``gangs``: the scenario's harness.gangs.Gang, to know which
      were satisfied once), no GangGroup half bound, no timed-out member bound;
    - every PodGroup's status counts its members as the API server shows them;
    - from the audit log (when given): no pod bound twice, no pod deleted twice by the scheduler;
      with ``incarnations`` (a watch's, harness.disruptions), no pod the scheduler asked to
      bind to two nodes, whatever the answers;
    - every daemon given still running.
    """
    namespaces = list(namespaces)
    for namespace in namespaces:
        assert_invariants(cluster, namespace)
    assert_no_partial_gangs(cluster, namespaces, list(gangs))
    assert_podgroups_converge(cluster, namespaces)
    if audit is not None:
        events = audit.events()
        twice = pods_bound_twice(events)
        assert not twice, f"pods bound more than once (audit log): {twice}"
        if incarnations is not None:
            doubles = double_bindings(events, incarnations)
            assert not doubles, f"pods the scheduler bound to two nodes (audit log): {doubles}"
        deleted = {pod: n for pod, n in pod_deletes_by(events).items() if n > 1}
        assert not deleted, f"pods deleted more than once by the scheduler: {deleted}"
    for daemon in daemons:
        assert daemon.process is not None and daemon.process.poll() is None, (
            f"the daemon exited ({daemon.returncode})"
        )


def check_then_delete(
    cluster: Cluster, namespace: str, resources: Iterable[tuple[str, str, str]]
) -> None:
    """After a client's scenario: the invariants and no partial gang in ``namespace``, then its
    objects of each (group, version, plural) deleted whatever the checks said."""
    try:
        assert_invariants(cluster, namespace)
        assert_no_partial_gangs(cluster, [namespace])
    finally:
        for group, version, plural in resources:
            cluster.custom.delete_collection_namespaced_custom_object(
                group, version, namespace, plural
            )
