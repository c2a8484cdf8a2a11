"""The daemon SIGKILLed half-way through a preemption, then replaced by a new one.

The daemon reaches the API server only through the fault proxy (harness/faultproxy.py), which
holds one class of its writes: the daemon is killed exactly between two of them, and the held
writes are then dropped (as if it had died before sending them). Two points:

- after the victims' DisruptionTarget conditions were written, before their deletes;
- after the deletes, before the job's members were nominated (and so before any bind).

A new daemon starts; the job must still end whole, no victim may be deleted twice or marked
twice by one daemon, no more pods may be evicted than the job needs, and the shared checker
(`assert_all_invariants`) must pass.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from harness.checks import assert_all_invariants
from harness.daemon import LocalDaemon
from harness.disruptions import DisruptionWatch
from harness.faultproxy import FaultProxy, Record, Rule, upstream_of, write_proxied_kubeconfig
from harness.gangs import (
    GangBook,
    wait_bound,
)
from harness.invariants import AuditLog, daemon_user_agent
from harness.kube import Cluster, deployment_body, pod_body, wait_until
from harness.rbac import rbac_denials

POD = r"^/api/v1/namespaces/[^/]+/pods/[^/]+$"
POD_STATUS = r"^/api/v1/namespaces/[^/]+/pods/[^/]+/status$"
_POD_OF = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)")
#: A status patch that nominates (not one that clears a nomination: that writes null).
NOMINATES = r'"nominatedNodeName":\s*"[^"]+"'
DISRUPTS = r'"type":\s*"DisruptionTarget"'
VICTIMS = 8
WAIT = 60.0


class Daemons:
    """Daemons run one after the other through the proxy; all stopped at the end."""

    def __init__(self, kubeconfig: Path, log_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.log_dir = log_dir
        self.made: list[LocalDaemon] = []

    def start(self) -> LocalDaemon:
        daemon = LocalDaemon(str(self.kubeconfig), self.log_dir)
        self.made.append(daemon)
        daemon.start()
        return daemon

    def logs(self) -> str:
        return "\n".join(d.logs() for d in self.made)


@pytest.fixture
def proxy(scheduler_kubeconfig: str) -> Iterator[FaultProxy]:
    server, ca = upstream_of(scheduler_kubeconfig)
    running = FaultProxy(server, ca, seed=18).start()
    yield running
    running.stop()


@pytest.fixture
def daemons(
    proxy: FaultProxy, scheduler_kubeconfig: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Daemons]:
    path = write_proxied_kubeconfig(scheduler_kubeconfig, proxy.url, tmp_path / "proxied")
    made = Daemons(path, tmp_path)
    yield made
    proxy.clear()
    for daemon in made.made:
        daemon.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for daemon in made.made:
            print(f"--- koordgang log ({daemon.log_path.name}) ---\n{daemon.logs()[-15000:]}")
    denied = rbac_denials(made.logs())
    assert not denied, f"the RBAC of manifests/ denied the scheduler: {denied}"


def pod_of(record: Record) -> str:
    match = _POD_OF.match(record.path)
    assert match is not None, record.path
    return f"{match.group(1)}/{match.group(2)}"


def done(proxy: FaultProxy, method: str, path: str, body: str = "") -> list[Record]:
    """Requests the API server accepted (2xx), of one kind."""
    return proxy.recorded(
        lambda r: (
            r.method == method
            and r.upstream is not None
            and 200 <= r.upstream < 300
            and re.match(path, r.path) is not None
            and (not body or re.search(body, r.body) is not None)
        )
    )


@pytest.mark.parametrize("point", ["before-deletes", "before-nominations"])
def test_daemon_killed_mid_preemption_and_replaced(
    point: str,
    clean_nodes: Cluster,
    namespace: str,
    proxy: FaultProxy,
    daemons: Daemons,
    audit_log: AuditLog,
    disruptions: DisruptionWatch,
    gang_book: GangBook,
    priority_classes: None,
    apps: client.AppsV1Api,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes([f"kill-{i}" for i in range(4)], {"cpu": "4", "memory": "32Gi"})
    first = daemons.start()
    filler = pod_body("filler", requests={"cpu": "1"}, priority_class="e2e-low")
    apps.create_namespaced_deployment(
        namespace, client.V1Deployment.model_validate(deployment_body("filler", 16, filler))
    )
    wait_until(
        lambda: sum(1 for p in cluster.pods(namespace, "app=filler") if p.spec.node_name) == 16,
        timeout=120,
        what="16 filler pods bound on 4 nodes",
    )

    job = gang_book.gang("urgent", 4, way="podgroup", requests={"cpu": "2"})
    binds = rf"^/api/v1/namespaces/{namespace}/pods/{job.name}-\d+/binding$"
    if point == "before-deletes":
        held = [proxy.add(Rule("hold", method="DELETE", path=POD))]
    else:
        # Nominations held, and the job's binds too: they may follow the deletes at once (the
        # last victim gone activates the job), and a kill before the nominations is before them.
        held = [
            proxy.add(Rule("hold", method="PATCH", path=POD_STATUS, body=NOMINATES)),
            proxy.add(Rule("hold", method="POST", path=binds)),
        ]
    gang_book.create_podgroup(job)
    gang_book.create_pods(job, priority_class="e2e-high")

    if point == "before-deletes":
        wait_until(
            lambda: (
                held[0].hits >= VICTIMS
                and len(done(proxy, "PATCH", POD_STATUS, DISRUPTS)) >= VICTIMS
            ),
            timeout=WAIT,
            what=f"{VICTIMS} victims marked and their deletes held",
        )
    else:
        # Deleted, and the daemon at rest: its members' nominations held or, if it went on to
        # bind them at once, their binds held.
        wait_until(
            lambda: (
                len(done(proxy, "DELETE", POD)) >= VICTIMS
                and max(held[0].hits, held[1].hits) >= job.members
            ),
            timeout=WAIT,
            what=f"{VICTIMS} victims deleted and the job's nominations or binds held",
        )
    # Killed precisely there: nothing of the next step reached the API server.
    if point == "before-deletes":
        assert not done(proxy, "DELETE", POD), "a victim was deleted before the kill"
    else:
        assert not done(proxy, "PATCH", POD_STATUS, NOMINATES), "a nomination was written"
        assert not done(proxy, "POST", binds), "a member was bound before the kill"
    first.kill()
    for rule in held:
        proxy.drop(rule)
    proxy.clear()
    first_agent = daemon_user_agent(first.process.pid) if first.process else "?"

    second = daemons.start()
    wait_bound(cluster, job, job.members, timeout=WAIT)

    assert_all_invariants(
        cluster,
        [namespace],
        gangs=gang_book.gangs,
        audit=audit_log,
        incarnations=disruptions.incarnations,
        daemons=[second],
    )
    # Per victim: deleted once at most, and marked once at most by each daemon.
    deleted = Counter(pod_of(r) for r in done(proxy, "DELETE", POD))
    marks = Counter(
        (pod_of(r), r.user_agent.startswith(first_agent))
        for r in done(proxy, "PATCH", POD_STATUS, DISRUPTS)
    )
    assert all(n == 1 for n in deleted.values()), deleted
    assert all(n == 1 for n in marks.values()), marks
    # The job needed 8 cpu of 1-cpu pods: exactly 8 evicted, whichever daemon did it.
    assert len(deleted) == VICTIMS, sorted(deleted)
    spared = sorted({pod for pod, _ in marks} - set(deleted))
    print(f"{point}: {len(marks)} marks, {len(deleted)} deleted, marked and spared: {spared}")
