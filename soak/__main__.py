"""`make soak MINUTES=20`: hours of churn in minutes, with the faults of a production control
plane in turn, on a local control plane of its own (.cluster/soak).

Jobs of every gang API the daemon reads, plain pods, high-priority gangs that preempt and gangs
gathered in one network block come and go; every ``--fault-every`` seconds one fault: first
the daemon SIGKILLed (and started again), then in turn kube-apiserver restarted, kube-apiserver
frozen (SIGSTOP) 15 s, etcd frozen 10 s (the daemon that runs to the end is the one whose
memory is judged: it lives all but the first minutes). The daemon runs with the scheduler's
own ServiceAccount (the RBAC of manifests/) and with memory tracing on. At the end: the JSON
record and a plot under soak-results/, the verdict printed, exit 1 if it failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controlplane import LocalControlPlane, NodeSpec
from controlplane.kubeconfig import api_client_from
from harness.daemon import LocalDaemon
from harness.invariants import AuditLog, pods_bound_twice
from harness.kube import Cluster
from harness.rbac import make_scheduler_kubeconfig
from soak.jobs import BLOCK, HIGH_PRIORITY, SPINE
from soak.report import save, verdict
from soak.run import Soak, Violation

REPO = Path(__file__).resolve().parents[1]
STATE_DIR = REPO / ".cluster" / "soak"
NAMESPACE = "soak"
NODES = 24
NODE_CPU = 16
TOPOLOGY = {
    "apiVersion": "scheduling.koordinator.sh/v1alpha1",
    "kind": "ClusterNetworkTopology",
    "metadata": {"name": "default"},
    "spec": {
        "networkTopologySpec": [
            {"labelKey": [SPINE], "topologyLayer": "SpineLayer"},
            {
                "labelKey": [BLOCK],
                "parentTopologyLayer": "SpineLayer",
                "topologyLayer": "BlockLayer",
            },
            {"parentTopologyLayer": "BlockLayer", "topologyLayer": "NodeTopologyLayer"},
        ]
    },
}


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def nodes() -> list[NodeSpec]:
    """Two spines of three blocks of four nodes."""
    return [
        NodeSpec(
            f"soak-{i}",
            capacity={"cpu": str(NODE_CPU), "memory": "128Gi", "pods": "110"},
            labels={SPINE: f"s{i // 12}", BLOCK: f"b{i // 4}"},
        )
        for i in range(NODES)
    ]


def prepare(cluster: Cluster) -> None:
    try:
        cluster.core.delete_namespace(NAMESPACE)
        say(f"deleting the namespace {NAMESPACE} of an earlier soak")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                cluster.core.read_namespace(NAMESPACE)
            except ApiException as error:
                if error.status == 404:
                    break
            time.sleep(1)
    except ApiException as error:
        if error.status != 404:
            raise
    cluster.create_namespace(NAMESPACE)
    scheduling = client.SchedulingV1Api(cluster.api_client)
    try:
        scheduling.create_priority_class(
            client.V1PriorityClass(metadata=client.V1ObjectMeta(name=HIGH_PRIORITY), value=1000)
        )
    except ApiException as error:
        if error.status != 409:
            raise
    api = ("scheduling.koordinator.sh", "v1alpha1", "clusternetworktopologies")
    try:
        cluster.custom.create_cluster_custom_object(*api, TOPOLOGY)
    except ApiException as error:
        if error.status != 409:
            raise


def freeze(plane: LocalControlPlane, name: str, seconds: float) -> Callable[[], None]:
    def action() -> None:
        plane.freeze(name, seconds)

    return action


def restart(plane: LocalControlPlane, name: str) -> Callable[[], None]:
    def action() -> None:
        # kube-apiserver with clients connected does not exit within 15 s of SIGTERM.
        plane.restart(name, grace=3.0)

    return action


def restart_daemon(daemon: LocalDaemon) -> Callable[[], None]:
    def action() -> None:
        daemon.kill()
        daemon.start()

    return action


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument(
        "--fault-every", type=float, default=0.0, help="seconds (default: 12 faults)"
    )
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REPO / "soak-results")
    args = parser.parse_args(argv)

    plane = LocalControlPlane(STATE_DIR)
    say(f"local control plane of the soak in {STATE_DIR} ({NODES} nodes of {NODE_CPU} cpu)")
    kubeconfig = str(plane.up(nodes=nodes()))
    admin = Cluster(api_client_from(kubeconfig))
    prepare(admin)
    logs = Path(tempfile.mkdtemp(prefix="koordgang-soak-"))
    scheduler = make_scheduler_kubeconfig(kubeconfig, logs / "scheduler-kubeconfig")
    daemon = LocalDaemon(str(scheduler), logs, "--trace-memory", "true")
    say(f"starting koordgang with memory tracing (log: {daemon.log_path})")
    daemon.start()
    audit = AuditLog(plane.state.audit_log)

    first = [("daemon SIGKILL", 0.0, restart_daemon(daemon))]
    faults = [
        ("kube-apiserver restart", 0.0, restart(plane, "kube-apiserver")),
        ("kube-apiserver SIGSTOP 15s", 15.0, freeze(plane, "kube-apiserver", 15.0)),
        ("etcd SIGSTOP 10s", 10.0, freeze(plane, "etcd", 10.0)),
    ]
    every = args.fault_every or max(60.0, args.minutes * 60 / 12)
    soak = Soak(
        admin,
        daemon,
        NAMESPACE,
        minutes=args.minutes,
        capacity_cpu=NODES * NODE_CPU,
        faults=[] if args.no_faults else faults,
        first_faults=[] if args.no_faults else first,
        fault_every=every,
        seed=args.seed,
        say=say,
    )
    say(
        f"churning for {args.minutes:g} min"
        + ("" if args.no_faults else f", a fault every {every:.0f} s")
    )
    try:
        record = soak.run()
    finally:
        daemon.stop()
    for pod, count in pods_bound_twice(audit.events()).items():
        record.violations.append(Violation(0.0, "bound twice", f"{pod}: {count} bindings"))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path, picture = save(record, args.out, stamp)
    ok, lines = verdict(record)
    say(
        f"{record.jobs_created} jobs ({record.pods_created} pods), {record.jobs_bound} bound, "
        f"{record.jobs_disrupted} preempted, {record.jobs_given_up} given up; "
        f"{len(record.faults)} faults, {record.daemon_restarts} daemon restarts"
    )
    for line in lines:
        print(line)
    for violation in record.violations[:20]:
        print(f"  at {violation.at:.0f}s {violation.kind}: {violation.detail}")
    say(f"saved {path}" + (f" and {picture}" if picture else ""))
    say("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
