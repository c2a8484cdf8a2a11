"""Faults between the daemon and the API server, injected by a proxy of ours
(harness/faultproxy.py).

Each test runs a daemon whose only way to the API server is the proxy, switches one fault on,
submits gangs while it is on, switches it off and then checks: the fault fired (the proxy's
record shows it), every gang that fits ends whole, the one that does not fit ends fully pending
and explained, no node is over-committed, no pod got more than one successful Binding, and
the daemon is still running. Faults hit requests by count or by a seeded-random fraction.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.daemon import LocalDaemon
from harness.faultproxy import FaultProxy, Rule, upstream_of, write_proxied_kubeconfig
from harness.gangs import (
    Gang,
    GangBook,
    assert_no_partial_gangs,
    bound_count,
    podgroup_status,
    wait_bound,
    wait_explained,
)
from harness.invariants import assert_invariants
from harness.kube import Cluster, wait_until
from harness.rbac import rbac_denials

BINDING = r"^/api/v1/namespaces/[^/]+/pods/[^/]+/binding$"
POD_STATUS = r"^/api/v1/namespaces/[^/]+/pods/[^/]+/status$"
EVENTS = r"^/apis?/(events\.k8s\.io/v1|v1)/namespaces/[^/]+/events$"
POD_WATCH = r"^/api/v1/pods$"
_BINDING_POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding$")
WAIT = 60.0


@pytest.fixture
def proxy(scheduler_kubeconfig: str) -> Iterator[FaultProxy]:
    server, ca = upstream_of(scheduler_kubeconfig)
    running = FaultProxy(server, ca, seed=18).start()
    yield running
    running.stop()


@pytest.fixture
def proxied_daemon(
    proxy: FaultProxy, scheduler_kubeconfig: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[LocalDaemon]:
    """The daemon, with the scheduler's token, reaching the API server only through the proxy."""
    path = write_proxied_kubeconfig(scheduler_kubeconfig, proxy.url, tmp_path / "proxied")
    daemon = LocalDaemon(str(path), tmp_path)
    daemon.start()
    yield daemon
    proxy.clear()
    daemon.stop()
    print(f"--- fault proxy ---\n{fault_summary(proxy)}")
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(f"--- koordgang log ---\n{daemon.logs()[-20000:]}")
    denied = rbac_denials(daemon.logs())
    assert not denied, f"the RBAC of manifests/ denied the scheduler: {denied}"


def fault_summary(proxy: FaultProxy) -> str:
    """Every faulted request and every binding, one a line."""
    lines = []
    for r in proxy.recorded(lambda r: bool(r.fault) or r.path.endswith("/binding")):
        lines.append(
            f"{r.at:.2f} {r.method} {r.path} watch={r.watch} fault={r.fault or '-'} "
            f"status={r.status} upstream={r.upstream} events={r.events}"
        )
    return "\n".join(lines)


# -- the scenario ------------------------------------------------------------------------------


def bindings_201(proxy: FaultProxy) -> Counter[str]:
    """Successful Bindings per pod, as the API server answered them through the proxy."""
    counts: Counter[str] = Counter()
    for record in proxy.recorded(lambda r: r.method == "POST" and r.upstream == 201):
        match = _BINDING_POD.match(record.path)
        if match:
            counts[f"{match.group(1)}/{match.group(2)}"] += 1
    return counts


def scheduled_count(cluster: Cluster, gang: Gang) -> int:
    """The PodGroup's ``status.scheduled`` once it reaches the gang's size, and a little later
    (a pod counted twice would show as more)."""

    def reached() -> int:
        status = podgroup_status(cluster, gang.namespace, gang.name)
        count = int(status.get("scheduled") or 0)
        return count if count >= gang.members else 0

    wait_until(reached, timeout=WAIT, what=f"PodGroup {gang.key} status.scheduled")
    time.sleep(1)
    return int(podgroup_status(cluster, gang.namespace, gang.name).get("scheduled") or 0)


def submit(cluster: Cluster, book: GangBook, prefix: str) -> tuple[list[Gang], Gang]:
    """Two nodes of 8 CPUs; three gangs of 4 x 1 CPU that fit (one of them a PodGroup), and a
    gang of 3 x 2 CPUs submitted last that cannot fit beside them (12 + 6 > 16)."""
    fits = [
        book.gang(f"{prefix}-a", 4, way="podgroup"),
        book.gang(f"{prefix}-b", 4),
        book.gang(f"{prefix}-c", 4),
    ]
    for gang in fits:
        book.create(gang)
    return fits, book.gang(f"{prefix}-big", 3, requests={"cpu": "2"})


def nodes(cluster: Cluster) -> None:
    cluster.add_nodes(["fault-1", "fault-2"], {"cpu": "8", "memory": "32Gi"})


def finish(
    cluster: Cluster,
    book: GangBook,
    proxy: FaultProxy,
    daemon: LocalDaemon,
    fits: list[Gang],
    big: Gang | None,
) -> None:
    """With the faults off: the fitting gangs whole, the big one wholly pending and explained,
    and the invariants."""
    proxy.clear()
    for gang in fits:
        wait_bound(cluster, gang, gang.members, timeout=WAIT)
    if big is not None:
        names = book.create(big)
        wait_explained(cluster, book.namespace, names, "", timeout=WAIT)
        assert bound_count(cluster, big) == 0
    twice = {pod: n for pod, n in bindings_201(proxy).items() if n > 1}
    assert not twice, f"pods bound more than once: {twice}"
    assert_invariants(cluster, book.namespace)
    assert_no_partial_gangs(cluster, book.namespaces, book.gangs)
    assert daemon.process is not None and daemon.process.poll() is None, "the daemon exited"


# -- one test per fault ------------------------------------------------------------------------


def test_429_with_retry_after_on_a_third_of_bindings(
    clean_nodes: Cluster,
    namespace: str,
    proxied_daemon: LocalDaemon,
    proxy: FaultProxy,
    gang_book: GangBook,
) -> None:
    nodes(clean_nodes)
    rule = proxy.add(
        Rule("status", method="POST", path=BINDING, fraction=1 / 3, status=429, retry_after=1)
    )
    fits, big = submit(clean_nodes, gang_book, "tmr")
    wait_until(lambda: rule.hits >= 2, timeout=WAIT, what="429s on bindings")
    finish(clean_nodes, gang_book, proxy, proxied_daemon, fits, big)
    assert len(proxy.faults("status")) == rule.hits >= 2
    # The daemon waits as long as it was asked before it tries a binding again.
    bindings = proxy.recorded(lambda r: r.method == "POST" and bool(re.search(BINDING, r.path)))
    too_soon = [
        (later.path, round(later.at - earlier.at, 3))
        for earlier in bindings
        if earlier.fault == "status"
        for later in bindings
        if later.path == earlier.path and 0 < later.at - earlier.at < 0.95
    ]
    assert not too_soon, f"retried sooner than Retry-After: 1 s: {too_soon}"


def test_500_and_503_on_pod_status_and_events(
    clean_nodes: Cluster,
    namespace: str,
    proxied_daemon: LocalDaemon,
    proxy: FaultProxy,
    gang_book: GangBook,
) -> None:
    nodes(clean_nodes)
    # The gang that cannot fit first, so that its explanations (pod status) and FailedScheduling
    # Events are written while the faults are on.
    big = gang_book.gang("err-big", 3, requests={"cpu": "9"})
    names = gang_book.create(big)
    status_rule = proxy.add(Rule("status", method="PATCH", path=POD_STATUS, status=500, times=8))
    event_rule = proxy.add(Rule("status", method="POST", path=EVENTS, status=503, times=8))
    wait_until(
        lambda: status_rule.exhausted and event_rule.hits >= 1,
        timeout=WAIT,
        what="500s on pod status and 503s on events",
    )
    fits, _ = submit(clean_nodes, gang_book, "err")
    wait_explained(clean_nodes, namespace, names, "", timeout=WAIT)
    finish(clean_nodes, gang_book, proxy, proxied_daemon, fits, None)
    assert bound_count(clean_nodes, big) == 0
    assert {r.status for r in proxy.faults("status")} == {500, 503}


def test_connection_resets(
    clean_nodes: Cluster,
    namespace: str,
    proxied_daemon: LocalDaemon,
    proxy: FaultProxy,
    gang_book: GangBook,
) -> None:
    nodes(clean_nodes)
    # Reset before forwarding on a fifth of all plain requests, and after forwarding (the
    # Binding took effect, the daemon does not know) on a few bindings.
    before = proxy.add(Rule("reset", watch=False, fraction=0.3, times=10))
    after = proxy.add(Rule("reset_after", method="POST", path=BINDING, times=2))
    fits, big = submit(clean_nodes, gang_book, "rst")
    wait_until(lambda: after.exhausted and before.hits >= 3, timeout=WAIT, what="connection resets")
    finish(clean_nodes, gang_book, proxy, proxied_daemon, fits, big)
    assert len(proxy.faults("reset_after")) == 2
    # Bindings whose answer was lost took effect once, and were not done again.
    lost = proxy.faults("reset_after")
    assert all(r.upstream == 201 for r in lost)
    once = bindings_201(proxy)
    for record in lost:
        match = _BINDING_POD.match(record.path)
        assert match is not None
        assert once[f"{match.group(1)}/{match.group(2)}"] == 1


def test_pod_watch_cut_mid_stream(
    clean_nodes: Cluster,
    namespace: str,
    proxied_daemon: LocalDaemon,
    proxy: FaultProxy,
    gang_book: GangBook,
) -> None:
    nodes(clean_nodes)
    # The open pod watch is cut after 3 more events; the next two re-watches are refused (reset),
    # and pods are created in that time.
    refused = proxy.add(Rule("reset", method="GET", path=POD_WATCH, watch=True, times=2))
    cut = proxy.add(
        Rule("cut_watch", method="GET", path=POD_WATCH, watch=True, after_events=3, times=1)
    )
    first = gang_book.gang("cut-a", 4, way="podgroup")
    gang_book.create(first)
    wait_until(lambda: cut.exhausted, timeout=WAIT, what="the pod watch cut")
    second = gang_book.gang("cut-b", 4, way="podgroup")
    gang_book.create(second)
    third = gang_book.gang("cut-c", 4)
    gang_book.create(third)
    wait_until(lambda: refused.exhausted, timeout=WAIT, what="the refused re-watches")
    finish(clean_nodes, gang_book, proxy, proxied_daemon, [first, second, third], None)
    # Neither lost nor counted twice: the PodGroups count exactly their members.
    for gang in (first, second):
        assert scheduled_count(clean_nodes, gang) == gang.members
    watches = proxy.recorded(lambda r: r.watch and re.match(POD_WATCH, r.path) is not None)
    assert len(watches) >= 4, "the pod watch was not opened again after the cut"


def test_pod_watch_expires_and_the_daemon_lists_again(
    clean_nodes: Cluster,
    namespace: str,
    proxied_daemon: LocalDaemon,
    proxy: FaultProxy,
    gang_book: GangBook,
) -> None:
    nodes(clean_nodes)
    # The open pod watch ends with 410 Gone after 3 more events, and so does the first watch
    # opened after it (its resourceVersion is too old as well): only a new LIST helps. Pods
    # are created meanwhile.
    again = proxy.add(Rule("expire_watch", method="GET", path=POD_WATCH, watch=True, times=1))
    again.after_events = 0
    expire = proxy.add(
        Rule("expire_watch", method="GET", path=POD_WATCH, watch=True, after_events=3, times=1)
    )
    first = gang_book.gang("exp-a", 4, way="podgroup")
    gang_book.create(first)
    wait_until(lambda: expire.exhausted, timeout=WAIT, what="the pod watch expired")
    # From when the expiring watch was opened, as the proxy saw it: a streamed relist can go
    # out before this test's poll notices the expiry.
    expired_at = min(
        r.at
        for r in proxy.recorded(
            lambda r: r.fault == "expire_watch" and re.match(POD_WATCH, r.path) is not None
        )
    )
    second = gang_book.gang("exp-b", 4, way="podgroup")
    gang_book.create(second)
    third = gang_book.gang("exp-c", 4)
    gang_book.create(third)
    wait_until(lambda: again.exhausted, timeout=WAIT, what="the expired re-watch")
    finish(clean_nodes, gang_book, proxy, proxied_daemon, [first, second, third], None)
    # Listed again, and neither lost nor counted twice: the PodGroups count their members.
    lists = proxy.recorded(
        lambda r: r.lists and r.at > expired_at and re.match(POD_WATCH, r.path) is not None
    )
    assert lists, "the daemon did not list pods again after its watch expired"
    for gang in (first, second):
        assert scheduled_count(clean_nodes, gang) == gang.members


def test_2s_latency_on_everything_for_10s(
    clean_nodes: Cluster,
    namespace: str,
    proxied_daemon: LocalDaemon,
    proxy: FaultProxy,
    gang_book: GangBook,
) -> None:
    nodes(clean_nodes)
    rule = proxy.add(Rule("latency", latency=2.0))
    started = time.monotonic()
    fits, big = submit(clean_nodes, gang_book, "slow")
    time.sleep(max(0.0, 10.0 - (time.monotonic() - started)))
    proxy.clear()
    assert rule.hits >= 3
    assert any(r.fault == "latency" and re.match(BINDING, r.path) for r in proxy.recorded())
    finish(clean_nodes, gang_book, proxy, proxied_daemon, fits, big)
