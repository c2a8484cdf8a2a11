"""`make demo`: a local control plane, koordgang, a handful of workloads, and a report.

Run from the repository root: ``python -m demo``. If the demo started the control plane it
stops it at the end, unless KEEP=1 is set (then explore with
``kubectl --kubeconfig .cluster/kubeconfig get pods -A -o wide``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controlplane import DEFAULT_NODES_FILE, LocalControlPlane
from controlplane.crds import install_crds
from controlplane.kubeconfig import api_client_from
from controlplane.releases import selected_release
from harness.daemon import LocalDaemon
from harness.kube import (
    Cluster,
    deployment_body,
    job_body,
    json_object,
    metadata,
    name_of,
    pod_body,
    scheduled_condition,
)
from koordgang.gangs_view import fetch, render_table
from koordgang.whatif.render import render_text
from koordgang.whatif_view import BadInput, WhatIfFailed, ask_daemon

NAMESPACE = "demo"
GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


WHAT = "demo.koordgang/what"
PG_API = ("scheduling.sigs.k8s.io", "v1alpha1")
HIGH_PRIORITY = "demo-high"


def podgroup(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member},
    }


def described(body: dict[str, Any], what: str) -> dict[str, Any]:
    """A workload whose pods say what they show (the report's middle column)."""
    template = body["spec"]["template"]
    template["metadata"].setdefault("annotations", {})[WHAT] = what
    return body


def controller_workloads() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(PodGroups, workloads made by controllers): a training Job as a gang in upstream
    Kubernetes' own API (an Indexed Job with parallelism == completions that asks for a gang,
    on 1.37 in ``spec.scheduling``: the Job controller writes a scheduling.k8s.io Workload and
    PodGroup, and points the pods at it), and a web Deployment of plain pods."""
    train = pod_body(
        "train",
        requests={"cpu": "8", "memory": "32Gi"},
        # Long enough to be seen running (kwok completes Job pods at once otherwise).
        annotations={"pod-complete.stage.kwok.x-k8s.io/delay": "1h"},
    )
    job = job_body("train", 4, train)
    job["spec"]["completionMode"] = "Indexed"
    if selected_release().podgroup_version != "v1alpha2":
        # 1.37 makes a gang only of a Job that asks (1.36: of every Indexed Job of this shape).
        job["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}}}
    web = pod_body("web", requests={"cpu": "2", "memory": "4Gi"})
    return (
        [],
        [
            described(job, "Indexed Job: upstream PodGroup of 4, together"),
            described(
                deployment_body("web", 6, web), "Deployment: plain pods, most free room wins"
            ),
        ],
    )


def urgent_job() -> tuple[dict[str, Any], dict[str, Any]]:
    """A high-priority training Job that needs two nodes' worth of cpu: room is made for it."""
    pod = pod_body(
        "urgent",
        requests={"cpu": "40", "memory": "64Gi"},
        labels={"pod-group.scheduling.sigs.k8s.io": "urgent"},
        tolerations=[GPU_TOLERATION],
        priority_class=HIGH_PRIORITY,
    )
    return podgroup("urgent", 2), described(
        job_body("urgent", 2, pod), "high-priority Job: preempts to fit"
    )


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
    say(
        "local control plane (kube-apiserver, kube-controller-manager, etcd, kwok); "
        "the first build takes a few minutes"
    )
    kubeconfig = str(plane.up(nodes_file=DEFAULT_NODES_FILE))
    api_client = api_client_from(kubeconfig)
    install_crds(api_client)
    cluster = Cluster(api_client)
    nodes = cluster.core.list_node().items
    say(f"{len(nodes)} fake nodes: " + ", ".join(name_of(n) for n in nodes))

    logs = Path(tempfile.mkdtemp(prefix="koordgang-demo-"))
    daemon = LocalDaemon(kubeconfig, logs)
    say("starting koordgang (log: " + str(daemon.log_path) + ")")
    daemon.start()
    try:
        fresh_namespace(cluster)
        items = workloads()
        groups, made_by_controllers = controller_workloads()
        for group in groups:
            cluster.custom.create_namespaced_custom_object(*PG_API, NAMESPACE, "podgroups", group)
        for workload in made_by_controllers:
            say(f"creating {workload['kind']} {NAMESPACE}/{workload['metadata']['name']}")
            create_workload(cluster, workload)
        say(f"submitting {len(items)} more pods with schedulerName koord-scheduler")
        for _, body, _ in items:
            cluster.create_pod(NAMESPACE, body)
        expected = len(items) + 4 + 6
        wait_decided(cluster, expected)
        report(cluster, items)

        say("act 2: a high-priority Job arrives on a busy cluster (PriorityClass demo-high)")
        ensure_priority_class(cluster, HIGH_PRIORITY, 1000)
        group, urgent = urgent_job()
        ask_first(daemon, group, urgent)
        cluster.custom.create_namespaced_custom_object(*PG_API, NAMESPACE, "podgroups", group)
        create_workload(cluster, urgent)
        wait_urgent(cluster)
        report_preemption(cluster)
        say("act 3: a training job that wants one network block (ClusterNetworkTopology default)")
        topology_act(cluster)
        report_upstream_podgroup(cluster)
        say("act 4: GPUs through Dynamic Resource Allocation (manifests/examples/dra-*.yaml)")
        dra_act(cluster)
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


def ask_first(daemon: LocalDaemon, *objects: dict[str, Any]) -> None:
    """What `koordgang whatif -f job.yaml` answers for the objects before they are created: the
    daemon works it out on a fork of its state and writes nothing."""
    say("first, what would happen? (koordgang whatif -f urgent.yaml: nothing is written)")
    docs = []
    for obj in objects:
        doc = json.loads(json.dumps(obj))
        doc["metadata"]["namespace"] = NAMESPACE
        docs.append(doc)
    try:
        answer = ask_daemon(f"http://127.0.0.1:{daemon.port}", yaml.safe_dump_all(docs))
    except (WhatIfFailed, BadInput) as error:
        say(f"whatif failed: {error}")
        return
    print(render_text(answer))
    print()


def fresh_namespace(cluster: Cluster) -> None:
    """An empty demo namespace: one left from an earlier run is deleted first (the namespace
    controller removes its Jobs, Deployments, pods and PodGroups)."""
    try:
        cluster.core.delete_namespace(NAMESPACE)
        say(f"namespace {NAMESPACE} exists: deleting it and what is in it")
    except ApiException as error:
        if error.status != 404:
            raise
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            cluster.core.read_namespace(NAMESPACE)
        except ApiException as error:
            if error.status == 404:
                break
            raise
        time.sleep(1)
    cluster.create_namespace(NAMESPACE)


TOPOLOGY_EXAMPLE = Path(__file__).resolve().parent / "manifests/examples/network-topology.yaml"
SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"
INDEX = "gang.scheduling.koordinator.sh/network-topology-index"


def topology_act(cluster: Cluster) -> None:
    """Applies the example topology, submits a 4-member job preferring one block, and draws
    where its members went: spine -> block -> node -> pods (by rank)."""
    body = yaml.safe_load(TOPOLOGY_EXAMPLE.read_text())
    api = ("scheduling.koordinator.sh", "v1alpha1", "clusternetworktopologies")
    try:
        cluster.custom.delete_cluster_custom_object(*api, "default")
    except ApiException as error:
        if error.status != 404:
            raise
    cluster.custom.create_cluster_custom_object(*api, body)
    group = podgroup("topo", 4)
    group["metadata"]["annotations"] = {
        "gang.scheduling.koordinator.sh/network-topology-spec": json.dumps(
            {"gatherStrategy": [{"layer": "BlockLayer", "strategy": "PreferGather"}]}
        )
    }
    cluster.custom.create_namespaced_custom_object(*PG_API, NAMESPACE, "podgroups", group)
    for rank in range(4):
        pod = pod_body(
            f"topo-{rank}",
            requests={"cpu": "2", "memory": "2Gi"},
            labels={"pod-group.scheduling.sigs.k8s.io": "topo"},
            annotations={INDEX: str(rank)},
            tolerations=[GPU_TOLERATION],
        )
        cluster.create_pod(NAMESPACE, pod)
    deadline = time.monotonic() + 30
    pods: list[Any] = []
    while time.monotonic() < deadline:
        pods = cluster.pods(NAMESPACE, "pod-group.scheduling.sigs.k8s.io=topo")
        if len(pods) == 4 and all(p.spec.node_name for p in pods):
            break
        time.sleep(1)
    labels = {name_of(n): metadata(n).labels or {} for n in cluster.core.list_node().items}
    tree: dict[str, dict[str, dict[str, list[str]]]] = {}
    for pod in sorted(pods, key=lambda p: int(p.metadata.annotations[INDEX])):
        node = pod.spec.node_name or "(pending)"
        spine = labels.get(node, {}).get(SPINE, "?")
        block = labels.get(node, {}).get(BLOCK, "?")
        rank = pod.metadata.annotations[INDEX]
        tree.setdefault(spine, {}).setdefault(block, {}).setdefault(node, []).append(
            f"{pod.metadata.name} (rank {rank})"
        )
    print()
    print("ClusterTopologyLayer")
    for spine, blocks in sorted(tree.items()):
        print(f"└── SpineLayer: {spine}")
        for block, nodes in sorted(blocks.items()):
            print(f"    └── BlockLayer: {block}")
            for node, members in sorted(nodes.items()):
                print(f"        └── {node}: {', '.join(members)}")
    print()


EXAMPLES = Path(__file__).resolve().parent / "manifests/examples"
DRA = ("resource.k8s.io", "v1")
#: Where each kind of the DRA example files is created: (group, version, plural, namespaced).
KINDS = {
    "DeviceClass": (*DRA, "deviceclasses", False),
    "ResourceSlice": (*DRA, "resourceslices", False),
    "ResourceClaimTemplate": (*DRA, "resourceclaimtemplates", True),
    "PodGroup": ("scheduling.x-k8s.io", "v1alpha1", "podgroups", True),
}


def apply_example(cluster: Cluster, name: str) -> None:
    """Creates the objects of ``manifests/examples/<name>`` (cluster-scoped ones made anew),
    as ``kubectl apply -f`` would."""
    for body in yaml.safe_load_all((EXAMPLES / name).read_text()):
        kind = body["kind"]
        if kind == "Job":
            create_workload(cluster, body)
            continue
        group, version, plural, namespaced = KINDS[kind]
        if namespaced:
            cluster.custom.create_namespaced_custom_object(group, version, NAMESPACE, plural, body)
            continue
        try:
            cluster.custom.delete_cluster_custom_object(
                group, version, plural, body["metadata"]["name"]
            )
        except ApiException as error:
            if error.status != 404:
                raise
        cluster.custom.create_cluster_custom_object(group, version, plural, body)


def claim_devices(cluster: Cluster, name: str) -> str:
    """The devices allocated to a ResourceClaim (``gpu-1/gpu-0, gpu-1/gpu-1``), "-" if none."""
    obj = json_object(
        cluster.custom.get_namespaced_custom_object(*DRA, NAMESPACE, "resourceclaims", name)
    )
    allocation = (obj.get("status") or {}).get("allocation")
    if not allocation:
        return "-"
    return ", ".join(f"{r['pool']}/{r['device']}" for r in allocation["devices"]["results"])


def dra_act(cluster: Cluster) -> None:
    """A DeviceClass and the GPU nodes' ResourceSlices (8 GPUs), a training gang of 4 workers
    with 2 GPUs each from a ResourceClaimTemplate (exactly enough), then a second gang that
    finds none left and says so. Shows which devices each worker got."""
    apply_example(cluster, "dra-deviceclass.yaml")
    apply_example(cluster, "dra-resourceslices.yaml")
    apply_example(cluster, "dra-training-gang.yaml")
    selector = "job-name=dra-train"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = cluster.pods(NAMESPACE, selector)
        bound = [p for p in pods if p.spec.node_name]
        print(f"    dra-train: {len(bound)}/4 bound", flush=True)
        if len(pods) == 4 and len(bound) == 4:
            break
        time.sleep(1)
    # A second job of 2 workers x 2 GPUs: no GPU is left, so neither starts.
    body = yaml.safe_load_all((EXAMPLES / "dra-training-gang.yaml").read_text())
    job = next(doc for doc in body if doc["kind"] == "Job")
    job["metadata"]["name"] = "dra-eval"
    job["spec"]["parallelism"] = job["spec"]["completions"] = 2
    job["spec"]["template"]["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "dra-eval"}
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "dra-eval"},
        "spec": {"minMember": 2},
    }
    group_api, version, plural, _ = KINDS["PodGroup"]
    cluster.custom.create_namespaced_custom_object(group_api, version, NAMESPACE, plural, group)
    create_workload(cluster, described(job, "second GPU gang: no GPU left"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        # Told why once their claims exist (until the controller makes them, they say so).
        waiting = cluster.pods(NAMESPACE, "job-name=dra-eval")
        conditions = [scheduled_condition(p) for p in waiting]
        if len(waiting) == 2 and all(
            c is not None and "resourceclaim controller" not in (c.message or "")
            for c in conditions
        ):
            break
        time.sleep(1)
    print()
    print(f"{'POD':<24} {'NODE':<8} {'CLAIM':<34} {'DEVICES (pool/device)'}")
    for pod in sorted(
        cluster.pods(NAMESPACE, "job-name in (dra-train,dra-eval)"),
        key=lambda p: (p.metadata.labels.get("job-name", ""), p.metadata.name),
    ):
        statuses = pod.status.resource_claim_statuses or []
        claim = statuses[0].resource_claim_name if statuses else ""
        found = claim_devices(cluster, claim) if claim else "-"
        print(f"{pod.metadata.name:<24} {pod.spec.node_name or '-':<8} {claim:<34} {found}")
        if not pod.spec.node_name:
            condition = scheduled_condition(pod)
            if condition is not None:
                print(f"    waits: {condition.message}")
    print()


def create_workload(cluster: Cluster, body: dict[str, Any]) -> None:
    if body["kind"] == "Job":
        job = client.V1Job.model_validate(body)
        client.BatchV1Api(cluster.api_client).create_namespaced_job(NAMESPACE, job)
    else:
        deployment = client.V1Deployment.model_validate(body)
        client.AppsV1Api(cluster.api_client).create_namespaced_deployment(NAMESPACE, deployment)


def ensure_priority_class(cluster: Cluster, name: str, value: int) -> None:
    body = client.V1PriorityClass(metadata=client.V1ObjectMeta(name=name), value=value)
    try:
        client.SchedulingV1Api(cluster.api_client).create_priority_class(body)
    except ApiException as error:
        if error.status != 409:
            raise


def wait_decided(cluster: Cluster, expected: int) -> None:
    """Until every pod is bound or told why not (controllers create theirs meanwhile)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = cluster.pods(NAMESPACE)
        waiting = [p for p in pods if not p.spec.node_name and scheduled_condition(p) is None]
        placed = sum(1 for p in pods if p.spec.node_name)
        print(f"    {placed}/{len(pods)} bound, {len(waiting)} not yet decided", flush=True)
        if len(pods) >= expected and not waiting:
            return
        time.sleep(1)


def urgent_pods(cluster: Cluster) -> list[Any]:
    return cluster.pods(NAMESPACE, "pod-group.scheduling.sigs.k8s.io=urgent")


def wait_urgent(cluster: Cluster) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = urgent_pods(cluster)
        bound = [p for p in pods if p.spec.node_name]
        nominated = [p for p in pods if p.status.nominated_node_name]
        print(
            f"    urgent: {len(bound)}/2 bound, {len(nominated)} nominated",
            flush=True,
        )
        if len(pods) == 2 and len(bound) == 2:
            return
        time.sleep(1)


def report_preemption(cluster: Cluster) -> None:
    events = cluster.core.list_namespaced_event(NAMESPACE).items
    preempted = sorted(
        (e for e in events if e.reason == "Preempted"), key=lambda e: e.involved_object.name or ""
    )
    print()
    print(f"preempted for demo/urgent: {len(preempted)} pod(s)")
    for event in preempted:
        print(f"    {event.involved_object.name:<28} {event.message}")
    for pod in sorted(urgent_pods(cluster), key=lambda p: p.metadata.name):
        print(
            f"    {pod.metadata.name:<28} nominated {pod.status.nominated_node_name or '-'}, "
            f"bound {pod.spec.node_name or '-'}"
        )
    print()


def report_upstream_podgroup(cluster: Cluster) -> None:
    """What the Job controller's PodGroup says (the condition kube-scheduler would write)."""
    version = selected_release().podgroup_version
    listed = json_object(
        cluster.custom.list_namespaced_custom_object(
            "scheduling.k8s.io", version, NAMESPACE, "podgroups"
        )
    )
    for item in listed["items"]:
        owners = ", ".join(
            f"{o['kind']} {o['name']}" for o in item["metadata"].get("ownerReferences") or ()
        )
        conditions = (item.get("status") or {}).get("conditions") or []
        shown = "; ".join(f"{c['type']}={c['status']} ({c.get('reason', '')})" for c in conditions)
        say(
            f"PodGroup scheduling.k8s.io/{version} {item['metadata']['name']} (owned by "
            f"{owners}): {shown or 'no condition yet'}"
        )


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
        shown = what.get(name) or (pod.metadata.annotations or {}).get(WHAT, "")
        print(f"{name:<20} {node:<10} {shown:<42} {why}")
    print()


if __name__ == "__main__":
    sys.exit(main())
