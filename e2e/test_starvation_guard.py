"""The starvation guard on a real API server: a stream of small pods keeps every node partly
busy, a PodGroup job of whole-node members arrives at the same priority; after ``reserveAfter``
(and not before: a watch sees when) it holds nodes (its members show
``status.nominatedNodeName`` and say so), backfill keeps flowing on the node it does not hold
and on no node it holds (every small pod's binding, seen by the watch, against the nodes held
at that moment), nothing is evicted or deleted by the scheduler (the audit log says), and the
job binds whole on the nodes it held once the small pods there finish.

The nodes have no kubelet: the stream deletes each small pod some seconds after it was bound,
standing in for pods that finish."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

from harness.daemon import Daemon, LocalDaemon
from harness.disruptions import DisruptionWatch
from harness.gangs import (
    GangBook,
    members,
    wait_bound,
)
from harness.invariants import AuditLog, pod_deletes_by, pod_evictions_by
from harness.kube import Cluster, pod_body, scheduled_condition, wait_until
from koordgang.gangs_view import fetch

#: How long a small pod runs once bound, and how often one is created (seconds).
SMALL_LIFETIME = 8.0
SMALL_EVERY = 0.5
#: Longer than the job's first retries (the unschedulable pods are retried every few seconds
#: without an event): a hold that did not wait for it would start before it.
RESERVE_AFTER = 12
#: The hold starts within this long after reserveAfter has passed (a retry of the job, at most
#: the unschedulable flush interval, and the nomination's write).
HOLD_WITHIN = 20.0
#: A binding decided just before the hold may land just after its nominations are written.
IN_FLIGHT = 1.0


def held_at(nominations: dict[str, list[tuple[str, float]]], moment: float) -> set[str]:
    """The nodes the job's members were nominated to at ``moment``, as the watch saw them."""
    held = set()
    for changes in nominations.values():
        current = [node for node, seen in changes if seen <= moment]
        if current and current[-1]:
            held.add(current[-1])
    return held


class SmallStream:
    """Creates a one-cpu pod every SMALL_EVERY seconds and deletes each SMALL_LIFETIME seconds
    after it was bound; records where each was bound."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self._cluster = cluster
        self._namespace = namespace
        self._stop = threading.Event()
        self.bound: dict[str, str] = {}
        self.created = 0
        self._thread = threading.Thread(target=self._run, daemon=True, name="small-stream")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        seen_at: dict[str, float] = {}
        next_create = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_create:
                name = f"small-{self.created}"
                body = pod_body(name, requests={"cpu": "1"}, labels={"app": "small"})
                self._cluster.create_pod(self._namespace, body)
                self.created += 1
                next_create += SMALL_EVERY
            for pod in self._cluster.pods(self._namespace, "app=small"):
                name, node = pod.metadata.name, pod.spec.node_name
                if node and name not in seen_at:
                    seen_at[name] = now
                    self.bound[name] = node
                elif node and now - seen_at[name] >= SMALL_LIFETIME:
                    self._cluster.force_delete(self._namespace, name)
            self._stop.wait(0.1)


def test_a_starving_job_holds_nodes_and_binds_whole_while_backfill_flows(
    clean_nodes: Cluster,
    namespace: str,
    daemon_factory: Any,
    disruptions: DisruptionWatch,
    gang_book: GangBook,
    check_invariants: None,
    request: pytest.FixtureRequest,
) -> None:
    cluster = clean_nodes
    # The audit log is the local control plane's (on kind, the watch's checks alone).
    audit: AuditLog | None = None
    if not os.environ.get("KOORDGANG_E2E_KUBECONFIG"):
        audit = request.getfixturevalue("audit_log")
    nodes = cluster.add_nodes([f"sg-{i}" for i in range(4)], {"cpu": "8", "memory": "32Gi"})
    daemon: Daemon = daemon_factory("--reserve-after", str(RESERVE_AFTER))
    daemon.start()
    stream = SmallStream(cluster, namespace)
    stream.start()
    # The checks after the scenario run whatever happened in it (each guards its own
    # behaviour); a failure of the scenario itself is raised after them.
    failed: AssertionError | None = None
    gang = gang_book.gang("big", 3, way="podgroup", requests={"cpu": "8"})
    created = time.monotonic()
    try:
        wait_until(
            lambda: len(set(dict(stream.bound).values())) == len(nodes),
            timeout=60,
            what="small pods on every node",
        )
        # Three whole-node members, same priority as the stream.
        created = time.monotonic()
        gang_book.create(gang)
        arrived = time.monotonic()

        def holding() -> list[Any] | None:
            pods = members(cluster, gang)
            nominated = [p for p in pods if p.status.nominated_node_name]
            return pods if len(pods) == 3 and len(nominated) == 3 else None

        held_pods = wait_until(holding, timeout=60, what="the job holding 3 nodes")
        held = {p.status.nominated_node_name for p in held_pods}
        assert len(held) == 3
        condition = scheduled_condition(held_pods[0])
        assert condition is not None
        assert condition.message.startswith(f"holding 3 nodes for {gang.key} since "), (
            condition.message
        )
        if isinstance(daemon, LocalDaemon):  # the in-cluster Deployment's port is not ours
            # `koordgang gangs` (the daemon's /gangs) shows the reservation too.
            rows = fetch(f"http://127.0.0.1:{daemon.port}")
            row = next(g for g in rows if g["gang"] == gang.key)
            assert sorted(row["reserved"]) == sorted(held)
            assert row["waitingFor"].startswith(f"holding 3 nodes for {gang.key} since ")
        backfill_node = next(iter(set(nodes) - held))
        binds_before = len(stream.bound)

        bound_pods = wait_bound(cluster, gang, timeout=90)
        waited = time.monotonic() - arrived
        assert {p.spec.node_name for p in bound_pods} == held
        # Backfill kept flowing meanwhile, on the node the job did not hold.
        small_bound = dict(stream.bound)
        later = list(small_bound)[binds_before:]
        assert later, "no small pod was bound while the job held its nodes"
        assert {small_bound[n] for n in later} >= {backfill_node}
        print(f"the job waited {waited:.1f}s; {len(later)} small pods bound meanwhile")
    except AssertionError as error:
        failed = error
    finally:
        stream.stop()

    try:
        _check_after(disruptions, audit, gang, created, cluster)
    except AssertionError as error:
        if failed is None:
            raise
        raise AssertionError(f"{error}\n(and the scenario failed: {failed})") from failed
    if failed is not None:
        raise failed


def _check_after(
    disruptions: DisruptionWatch,
    audit: AuditLog | None,
    gang: Any,
    created: float,
    cluster: Cluster,
) -> None:
    """What must hold whatever the scenario did."""
    # Nothing was evicted for the job: no pod ever carried a DisruptionTarget condition, and
    # the scheduler deleted or evicted no pod.
    assert not disruptions.seen, f"DisruptionTarget on {sorted(disruptions.seen)}"
    if audit is not None:
        events = audit.events()
        assert not pod_deletes_by(events), pod_deletes_by(events)
        assert not pod_evictions_by(events), pod_evictions_by(events)

    # The hold began no earlier than reserveAfter after the job arrived, and soon after.
    big = {p.metadata.name for p in members(cluster, gang)}
    nominations = {name: list(disruptions.nominated_at.get(name, [])) for name in big}
    assert nominations and all(nominations.values()), f"members not nominated: {nominations}"
    hold_began = min(changes[0][1] for changes in nominations.values())
    hold_full = max(changes[0][1] for changes in nominations.values())
    print(f"the hold began {hold_began - created:.1f}s after the job was submitted")
    assert hold_began - created >= RESERVE_AFTER, (
        f"the job held nodes {hold_began - created:.1f}s after it arrived, before reserveAfter "
        f"({RESERVE_AFTER}s)"
    )
    assert hold_full - created <= RESERVE_AFTER + HOLD_WITHIN, (
        f"the job held its nodes only {hold_full - created:.1f}s after it arrived"
    )
    # Every small pod bound while the job held nodes went to a node it did not hold then.
    seen_bound = dict(disruptions.bound)  # the watch's thread goes on adding to it
    job_bound = min(
        (seen_bound[name][1] for name in big if name in seen_bound),
        default=time.monotonic(),
    )
    during = {
        name: (node, seen)
        for name, (node, seen) in seen_bound.items()
        if name.startswith("small-") and hold_full + IN_FLIGHT <= seen < job_bound
    }
    assert during, "no small pod was seen bound while the job held its nodes"
    on_held = {
        name: node
        for name, (node, seen) in during.items()
        if node in held_at(nominations, seen - IN_FLIGHT)
    }
    assert not on_held, f"small pods bound on nodes held for the job: {on_held}"
