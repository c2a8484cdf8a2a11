"""The starvation guard on a real API server: a stream of small pods keeps every node partly
busy, a PodGroup job of whole-node members arrives at the same priority; after ``reserveAfter``
it holds nodes (its members show ``status.nominatedNodeName`` and say so), backfill keeps
flowing on the node it does not hold, small pods kept off a held node hear why, nothing is
evicted, and the job binds whole once the small pods on its nodes finish.

The nodes have no kubelet: the stream deletes each small pod some seconds after it was bound,
standing in for pods that finish."""

from __future__ import annotations

import threading
import time
from typing import Any

from harness.daemon import Daemon, LocalDaemon
from harness.gangs import (
    GangBook,
    members,
    wait_bound,
)
from harness.kube import Cluster, pod_body, scheduled_condition, wait_until
from koordgang.gangs_view import fetch

#: How long a small pod runs once bound, and how often one is created (seconds).
SMALL_LIFETIME = 8.0
SMALL_EVERY = 0.5
RESERVE_AFTER = 5


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
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    nodes = cluster.add_nodes([f"sg-{i}" for i in range(4)], {"cpu": "8", "memory": "32Gi"})
    daemon: Daemon = daemon_factory("--reserve-after", str(RESERVE_AFTER))
    daemon.start()
    stream = SmallStream(cluster, namespace)
    stream.start()
    try:
        wait_until(
            lambda: len({stream.bound[n] for n in stream.bound}) == len(nodes),
            timeout=60,
            what="small pods on every node",
        )
        # Three whole-node members, same priority as the stream.
        gang = gang_book.gang("big", 3, way="podgroup", requests={"cpu": "8"})
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
        later = [n for n in list(stream.bound)[binds_before:]]
        assert later, "no small pod was bound while the job held its nodes"
        assert {stream.bound[n] for n in later} >= {backfill_node}
        print(f"the job waited {waited:.1f}s; {len(later)} small pods bound meanwhile")
    finally:
        stream.stop()

    # Nothing was evicted for the job: no pod carries a DisruptionTarget condition.
    for pod in cluster.pods(namespace):
        for condition in pod.status.conditions or []:
            assert condition.type != "DisruptionTarget", pod.metadata.name
