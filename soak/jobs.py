"""The jobs of the soak: one kind per gang API the daemon reads, plain pods, a high-priority
gang that preempts, and a gang gathered in one network block. Each job knows how to create
itself as its client would, how to find its pods, and how to go away."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from harness.kube import Cluster, pod_body

#: Every pod of the soak carries its job's name here.
JOB_LABEL = "soak.koordgang/job"
HIGH_PRIORITY = "soak-high"
SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"

#: (group, version, plural) of the group objects.
SIGS = ("scheduling.sigs.k8s.io", "v1alpha1", "podgroups")
X_K8S = ("scheduling.x-k8s.io", "v1alpha1", "podgroups")
VOLCANO = ("scheduling.volcano.sh", "v1beta1", "podgroups")

KINDS = (
    "koordinator",
    "koordinator-podgroup",
    "scheduler-plugins",
    "kubernetes-job",
    "volcano",
    "kueue",
    "plain",
    "preemptor",
    "gathered",
)


@dataclass
class SoakJob:
    name: str
    kind: str
    namespace: str
    members: int
    #: Members that must be bound together (0: plain pods, no gang).
    minimum: int
    cpu: int
    created_at: float
    #: The group object, if the job has one: (group, version, plural).
    group_object: tuple[str, str, str] | None = None
    #: An upstream Job owns the pods.
    batch_job: bool = False
    bound_at: float | None = None
    delete_at: float | None = None
    #: Pods seen at most, to notice members taken away (preemption victims).
    seen: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def selector(self) -> str:
        return f"{JOB_LABEL}={self.name}"

    @property
    def requested_cpu(self) -> int:
        return self.members * self.cpu


def _pods(
    job: SoakJob, labels: dict[str, str], annotations: dict[str, str], **kw: Any
) -> list[dict[str, Any]]:
    return [
        pod_body(
            f"{job.name}-{i}",
            requests={"cpu": str(job.cpu), "memory": "1Gi"},
            labels={JOB_LABEL: job.name, **labels},
            annotations=dict(annotations),
            **kw,
        )
        for i in range(job.members)
    ]


def _group(
    cluster: Cluster,
    job: SoakJob,
    api: tuple[str, str, str],
    spec: dict[str, Any],
    **meta: Any,
) -> None:
    job.group_object = api
    body = {
        "apiVersion": f"{api[0]}/{api[1]}",
        "kind": "PodGroup",
        "metadata": {"name": job.name, **meta},
        "spec": spec,
    }
    cluster.custom.create_namespaced_custom_object(api[0], api[1], job.namespace, api[2], body)


def create(cluster: Cluster, job: SoakJob) -> None:
    """Creates ``job`` as its client would: the group object first, then the pods (or the
    Job, whose controller makes them)."""
    gang = {
        "gang.scheduling.koordinator.sh/name": job.name,
        "gang.scheduling.koordinator.sh/min-available": str(job.minimum),
    }
    pods: list[dict[str, Any]] = []
    if job.kind == "koordinator":
        pods = _pods(job, {}, gang)
    elif job.kind == "preemptor":
        pods = _pods(job, {}, gang, priority_class=HIGH_PRIORITY)
    elif job.kind in ("koordinator-podgroup", "gathered"):
        meta: dict[str, Any] = {}
        if job.kind == "gathered":
            rule = {"gatherStrategy": [{"layer": "BlockLayer", "strategy": "PreferGather"}]}
            meta["annotations"] = {
                "gang.scheduling.koordinator.sh/network-topology-spec": json.dumps(rule)
            }
        _group(cluster, job, SIGS, {"minMember": job.minimum}, **meta)
        pods = _pods(job, {"pod-group.scheduling.sigs.k8s.io": job.name}, {})
    elif job.kind == "scheduler-plugins":
        _group(cluster, job, X_K8S, {"minMember": job.minimum})
        pods = _pods(job, {"scheduling.x-k8s.io/pod-group": job.name}, {})
    elif job.kind == "volcano":
        _group(cluster, job, VOLCANO, {"minMember": job.minimum})
        pods = _pods(job, {}, {"scheduling.k8s.io/group-name": job.name})
    elif job.kind == "kueue":
        pods = _pods(
            job,
            {"kueue.x-k8s.io/pod-group-name": job.name},
            {"kueue.x-k8s.io/pod-group-total-count": str(job.members)},
        )
    elif job.kind == "plain":
        pods = _pods(job, {}, {})
    elif job.kind == "kubernetes-job":
        # An Indexed Job with parallelism == completions: with WorkloadWithJob the Job
        # controller declares its gang in upstream Kubernetes' own PodGroup.
        template = pod_body(
            "member", requests={"cpu": str(job.cpu), "memory": "1Gi"}, labels={JOB_LABEL: job.name}
        )
        spec = dict(template["spec"])
        spec["restartPolicy"] = "Never"
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": job.name},
            "spec": {
                "parallelism": job.members,
                "completions": job.members,
                "completionMode": "Indexed",
                "template": {"metadata": {"labels": {JOB_LABEL: job.name}}, "spec": spec},
            },
        }
        client.BatchV1Api(cluster.api_client).create_namespaced_job(
            job.namespace, client.V1Job.model_validate(body)
        )
        job.batch_job = True
        return
    else:
        raise ValueError(f"unknown job kind {job.kind}")
    for body in pods:
        cluster.create_pod(job.namespace, body)


def delete(cluster: Cluster, job: SoakJob) -> None:
    """The job goes away: its pods, and its group object or Job."""
    try:
        if job.batch_job:
            client.BatchV1Api(cluster.api_client).delete_namespaced_job(
                job.name, job.namespace, propagation_policy="Background", grace_period_seconds=0
            )
        cluster.core.delete_collection_namespaced_pod(
            job.namespace, label_selector=job.selector, grace_period_seconds=0
        )
        if job.group_object is not None:
            group, version, plural = job.group_object
            cluster.custom.delete_namespaced_custom_object(
                group, version, job.namespace, plural, job.name
            )
    except ApiException as error:
        if error.status != 404:
            raise


def make(
    rng: random.Random, serial: int, namespace: str, now: float, kinds: tuple[str, ...] = KINDS
) -> SoakJob:
    """A job of a random kind and size (2-8 members of 1-4 cpu; 4 x 4 cpu to preempt)."""
    kind = rng.choice(kinds)
    members = rng.randint(2, 8)
    cpu = rng.randint(1, 4)
    if kind == "preemptor":
        members, cpu = 4, 4
    minimum = 0 if kind == "plain" else members
    if kind == "kueue":
        minimum = members  # the total count is the minimum
    return SoakJob(
        name=f"{kind}-{serial}",
        kind=kind,
        namespace=namespace,
        members=members,
        minimum=minimum,
        cpu=cpu,
        created_at=now,
    )
