"""Crashes and restarts: a gang whose binding was cut short ends whole, nothing is bound twice,
and a satisfied gang stays satisfied."""

from __future__ import annotations

import threading
import time

from harness.daemon import Daemon, DaemonFactory
from harness.gangs import (
    Gang,
    GangBook,
    bound_members,
    scheduled_event_counts,
    wait_bound,
)
from harness.kube import Cluster, PodWatch, wait_until


class _KillOnFirstBinding(threading.Thread):
    """Watches a gang's members and SIGKILLs the daemon the moment one of them is bound."""

    def __init__(self, cluster: Cluster, gang: Gang, daemon: Daemon, timeout: int) -> None:
        super().__init__(daemon=True)
        self.cluster, self.gang, self.target, self.timeout = cluster, gang, daemon, timeout
        self.watching = threading.Event()
        self.killed = False
        self.error: BaseException | None = None

    def run(self) -> None:
        core = self.cluster.core
        try:
            listing = core.list_namespaced_pod(
                self.gang.namespace, label_selector=self.gang.selector
            )
            assert listing.metadata is not None, "a pod list without its resourceVersion"
            stream = PodWatch()
            self.watching.set()
            for pod in stream.pods(
                core,
                self.gang.namespace,
                label_selector=self.gang.selector,
                resource_version=listing.metadata.resource_version,
                timeout_seconds=self.timeout,
            ):
                if pod.spec.node_name:
                    self.target.kill()
                    self.killed = True
                    stream.stop()
                    return
        except BaseException as error:  # reported by the test thread
            self.error = error
        finally:
            self.watching.set()


def test_sigkill_while_a_gang_of_100_binds_then_restart_completes_it_once(
    clean_nodes: Cluster,
    namespace: str,
    daemon_factory: DaemonFactory,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes([f"hundred-{i}" for i in range(5)], {"cpu": "4", "memory": "16Gi"})
    gang = gang_book.gang("hundred", 100, requests={"cpu": "100m", "memory": "64Mi"})

    # One bind at a time, so that the kill lands while the gang is being bound.
    first: Daemon = daemon_factory("--bind-concurrency", "1")
    first.start()
    killer = _KillOnFirstBinding(cluster, gang, first, timeout=60)
    killer.start()
    killer.watching.wait(10)
    gang_book.create(gang)
    killer.join(70)
    assert killer.error is None, f"watching the gang failed: {killer.error!r}"
    assert killer.killed, "no member of the gang was bound within 60 s"

    time.sleep(1)  # a dead daemon binds nothing more
    before = {p.metadata.name: p.spec.node_name for p in bound_members(cluster, gang)}
    print(f"killed with {len(before)} of 100 members bound")
    assert 1 <= len(before) < 100, (
        f"{len(before)} members bound when the kill landed: not in the middle of binding"
    )

    second: Daemon = daemon_factory()
    second.start()
    pods = wait_bound(cluster, gang, 100, timeout=60)
    gang.satisfied_once = True
    # Members bound before the crash stayed where they were.
    for pod in pods:
        if pod.metadata.name in before:
            assert pod.spec.node_name == before[pod.metadata.name]
    # Nothing was bound or announced twice.
    time.sleep(2)
    counts = scheduled_event_counts(cluster, namespace)
    twice = {name: n for name, n in counts.items() if n > 1}
    assert not twice, f"pods announced as Scheduled more than once: {twice}"

    # The gang was satisfied before the restart: replacements bind alone (2 < min 100).
    for name in gang.pod_names()[:2]:
        cluster.force_delete(namespace, name)
    replacements = gang_book.create_pods(gang, [100, 101])
    wait_until(
        lambda: all(cluster.pod(namespace, n).spec.node_name for n in replacements),
        timeout=30,
        what="replacement members of the satisfied gang bound",
    )


def test_a_satisfied_gang_stays_satisfied_across_a_restart(
    clean_nodes: Cluster,
    namespace: str,
    daemon_factory: DaemonFactory,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["kept-1", "kept-2"], {"cpu": "4", "memory": "16Gi"})
    gang = gang_book.gang("kept", 4, way="podgroup", requests={"cpu": "1"})
    first: Daemon = daemon_factory()
    first.start()
    gang_book.create(gang)
    wait_bound(cluster, gang, 4)
    gang.satisfied_once = True

    def bound(name: str) -> bool:
        return bool(cluster.pod(namespace, name).spec.node_name)

    # While the daemon runs, a replacement schedules like an ordinary pod.
    cluster.force_delete(namespace, gang.pod_name(0))
    gang_book.create_pods(gang, [4])
    wait_until(lambda: bound(gang.pod_name(4)), timeout=30, what="the first replacement bound")

    # Crash; two members go and two replacements come while no scheduler runs.
    first.kill()
    for index in (1, 2):
        cluster.force_delete(namespace, gang.pod_name(index))
    replacements = gang_book.create_pods(gang, [5, 6])

    # The new daemon finds the gang with bound members: satisfied, so they bind alone.
    second: Daemon = daemon_factory()
    second.start()
    wait_until(
        lambda: all(bound(n) for n in replacements),
        timeout=30,
        what="replacements bound after the restart",
    )
