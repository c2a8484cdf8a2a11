"""`make demo`: a local control plane, koordgang, a handful of workloads, and a report.

Run from the repository root: ``python -m e2e.demo``. If the demo started the control plane it
stops it at the end, unless KEEP=1 is set (then explore with
``kubectl --kubeconfig .cluster/kubeconfig get pods -A -o wide``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from kubernetes import config

from e2e.controlplane import DEFAULT_NODES_FILE, LocalControlPlane
from e2e.controlplane.crds import install_crds
from e2e.daemon import LocalDaemon
from e2e.kube import Cluster, pod_body, scheduled_condition
from koordgang.gangs_view import fetch, render_table

NAMESPACE = "demo"
GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


PODGROUP = {
    "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
    "kind": "PodGroup",
    "metadata": {"name": "train"},
    "spec": {"minMember": 4},
}


def _gang(name: str, gang: str, minimum: int, cpu: str, **extra: str) -> dict[str, object]:
    annotations = {
        "gang.scheduling.koordinator.sh/name": gang,
        "gang.scheduling.koordinator.sh/min-available": str(minimum),
        **{f"gang.scheduling.koordinator.sh/{k.replace('_', '-')}": v for k, v in extra.items()},
    }
    return pod_body(name, requests={"cpu": cpu, "memory": "1Gi"}, annotations=annotations)


def workloads() -> list[tuple[str, dict[str, object], str]]:
    """(name, pod body, what it shows)."""
    items: list[tuple[str, dict[str, object], str]] = []
    for i in range(4):
        body = pod_body(
            f"train-{i}",
            requests={"cpu": "8", "memory": "32Gi"},
            labels={"pod-group.scheduling.sigs.k8s.io": "train"},
        )
        items.append((f"train-{i}", body, "PodGroup gang of 4: all bound together"))
    for i in range(3):
        items.append(
            (f"sweep-{i}", _gang(f"sweep-{i}", "sweep", 4, "1"), "gang of min 4, only 3 pods exist")
        )
    for i in range(6):
        items.append(
            (
                f"huge-gang-{i}",
                _gang(f"huge-gang-{i}", "huge-gang", 6, "24"),
                "gang of 6 x 24 cpu: no room for all",
            )
        )
    for i in range(6):
        items.append(
            (
                f"web-{i}",
                pod_body(f"web-{i}", requests={"cpu": "2", "memory": "4Gi"}),
                "plain pods: most free room wins",
            )
        )
    for i in range(2):
        items.append(
            (
                f"trainer-{i}",
                pod_body(
                    f"trainer-{i}",
                    requests={"cpu": "16", "memory": "64Gi", GPU: "4"},
                    tolerations=[GPU_TOLERATION],
                ),
                "GPU pods; tolerate the dedicated taint",
            )
        )
    items.append(
        (
            "zone-b-only",
            pod_body(
                "zone-b-only",
                requests={"cpu": "1"},
                node_selector={"zone": "b"},
                tolerations=[GPU_TOLERATION],
            ),
            "nodeSelector zone=b",
        )
    )
    items.append(
        (
            "gpu-no-toleration",
            pod_body("gpu-no-toleration", requests={GPU: "8"}),
            "wants a whole GPU node, no toleration",
        )
    )
    items.append(("huge", pod_body("huge", requests={"cpu": "100"}), "bigger than any node"))
    items.append(
        (
            "nowhere",
            pod_body("nowhere", requests={"cpu": "1"}, node_selector={"zone": "mars"}),
            "no node matches",
        )
    )
    return items


def main() -> int:
    keep = os.environ.get("KEEP") == "1"
    plane = LocalControlPlane()
    started_here = not plane.is_up()
    say("local control plane (kube-apiserver + etcd + kwok); the first build takes a few minutes")
    kubeconfig = str(plane.up(nodes_file=DEFAULT_NODES_FILE))
    api_client = config.new_client_from_config(config_file=kubeconfig)
    install_crds(api_client)
    cluster = Cluster(api_client)
    nodes = cluster.core.list_node().items
    say(f"{len(nodes)} fake nodes: " + ", ".join(n.metadata.name for n in nodes))

    logs = Path(tempfile.mkdtemp(prefix="koordgang-demo-"))
    daemon = LocalDaemon(kubeconfig, logs)
    say("starting koordgang (log: " + str(daemon.log_path) + ")")
    daemon.start()
    try:
        try:
            cluster.core.read_namespace(NAMESPACE)
            say(f"namespace {NAMESPACE} exists: clearing its pods")
            cluster.delete_namespace_pods(NAMESPACE)
            for group in cluster.custom.list_namespaced_custom_object(
                "scheduling.sigs.k8s.io", "v1alpha1", NAMESPACE, "podgroups"
            )["items"]:
                cluster.custom.delete_namespaced_custom_object(
                    "scheduling.sigs.k8s.io",
                    "v1alpha1",
                    NAMESPACE,
                    "podgroups",
                    group["metadata"]["name"],
                )
        except Exception:
            cluster.create_namespace(NAMESPACE)
        items = workloads()
        say("creating PodGroup demo/train (minMember 4)")
        cluster.custom.create_namespaced_custom_object(
            "scheduling.sigs.k8s.io", "v1alpha1", NAMESPACE, "podgroups", PODGROUP
        )
        say(f"submitting {len(items)} pods with schedulerName koord-scheduler")
        for _, body, _ in items:
            cluster.create_pod(NAMESPACE, body)

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pods = cluster.pods(NAMESPACE)
            waiting = [p for p in pods if not p.spec.node_name and scheduled_condition(p) is None]
            placed = sum(1 for p in pods if p.spec.node_name)
            print(
                f"    {placed}/{len(pods)} bound, {len(waiting)} not yet decided",
                flush=True,
            )
            if not waiting:
                break
            time.sleep(1)
        report(cluster, items)
        say("koordgang gangs (what the daemon knows of each gang)")
        print(
            render_table(
                [
                    g
                    for g in fetch(f"http://127.0.0.1:{daemon.port}")
                    if g["gang"].startswith(f"{NAMESPACE}/")
                ]
            )
        )
        print()
    finally:
        say("stopping koordgang (SIGTERM)")
        daemon.stop()
        if started_here and not keep:
            say("stopping the control plane (KEEP=1 keeps it running)")
            plane.down()
        else:
            say(
                f"control plane left running; kubeconfig: {kubeconfig} "
                "(stop it with: make cluster-down)"
            )
    return 0


def report(cluster: Cluster, items: list[tuple[str, dict[str, object], str]]) -> None:
    what = {name: text for name, _, text in items}
    print()
    print(f"{'POD':<20} {'NODE':<10} {'WHAT IT SHOWS':<42} WHY IT WAITS")
    for pod in sorted(cluster.pods(NAMESPACE), key=lambda p: p.metadata.name):
        name = pod.metadata.name
        node = pod.spec.node_name or "-"
        why = ""
        if not pod.spec.node_name:
            condition = scheduled_condition(pod)
            why = condition.message if condition is not None else "(no decision yet)"
        print(f"{name:<20} {node:<10} {what.get(name, ''):<42} {why}")
    print()


if __name__ == "__main__":
    sys.exit(main())
