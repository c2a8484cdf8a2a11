"""The trace ``bench.trace_sim`` runs: a cluster, and big gangs and small jobs arriving on it
over hours, each job with a duration drawn from a lognormal distribution (seeded) and a time
limit above it; and the objects the informers show of them."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from bench.workload import GANG_MIN, GANG_NAME
from koordgang.model.time import format_rfc3339

NAMESPACE = "trace"
#: ``terminationGracePeriodSeconds`` of every pod: a pod killed at its limit is gone this
#: much later.
GRACE_SECONDS = 30


@dataclass(frozen=True)
class Shape:
    """The cluster and what arrives on it."""

    nodes: int = 32
    node_cpu: int = 8
    hours: float = 6.0
    #: Big gangs: mean minutes between arrivals, members (whole nodes), duration (median
    #: minutes, and the lognormal's sigma).
    big_every_min: float = 90.0
    big_members: tuple[int, int] = (16, 24)
    big_median_min: float = 30.0
    big_sigma: float = 1.0
    #: Small jobs: arrivals an hour, pods, cpu per pod, duration.
    small_per_hour: float = 100.0
    small_pods: tuple[int, int] = (1, 4)
    small_cpu: tuple[int, int] = (1, 2)
    small_median_min: float = 10.0
    small_sigma: float = 1.2
    #: Time limit = duration x this, rounded up to the second.
    limit_factor: float = 1.5
    #: Share of jobs that run past their limit (killed at the limit, gone after the grace).
    overrun: float = 0.0
    #: No job runs longer than this (hours): the lognormal's tail, cut.
    longest_hours: float = 12.0

    @property
    def seconds(self) -> float:
        return self.hours * 3600


@dataclass(frozen=True)
class TraceJob:
    name: str
    big: bool
    #: Seconds from the trace's start.
    arrival: int
    members: int
    cpu: int
    duration: int
    limit: int

    @property
    def runs_for(self) -> int:
        """How long each pod holds its room once started: its duration, or up to its limit
        and the grace period when it would run longer."""
        return min(self.duration, self.limit + GRACE_SECONDS)


def make_trace(shape: Shape, seed: int) -> list[TraceJob]:
    """The jobs arriving over ``shape.hours``, in arrival order; the same for the same seed."""
    rng = random.Random(seed)
    longest = shape.longest_hours * 3600
    jobs: list[TraceJob] = []

    def duration(median_min: float, sigma: float) -> int:
        return math.ceil(
            min(longest, max(60.0, rng.lognormvariate(math.log(median_min * 60), sigma)))
        )

    def arrivals(mean_gap: float) -> list[int]:
        times, moment = [], rng.expovariate(1 / mean_gap)
        while moment < shape.seconds:
            times.append(math.ceil(moment))
            moment += rng.expovariate(1 / mean_gap)
        return times

    for i, moment in enumerate(arrivals(shape.big_every_min * 60)):
        members = min(shape.nodes, rng.randint(*shape.big_members))
        runs = duration(shape.big_median_min, shape.big_sigma)
        jobs.append(_job(f"big-{i:03d}", True, moment, members, shape.node_cpu, runs, shape, rng))
    for i, moment in enumerate(arrivals(3600 / shape.small_per_hour)):
        members = rng.randint(*shape.small_pods)
        cpu = rng.randint(*shape.small_cpu)
        runs = duration(shape.small_median_min, shape.small_sigma)
        jobs.append(_job(f"small-{i:04d}", False, moment, members, cpu, runs, shape, rng))
    return sorted(jobs, key=lambda j: (j.arrival, j.name))


def _job(
    name: str,
    big: bool,
    arrival: int,
    members: int,
    cpu: int,
    runs: int,
    shape: Shape,
    rng: random.Random,
) -> TraceJob:
    limit = math.ceil(runs * shape.limit_factor)
    if rng.random() < shape.overrun:
        runs = 2 * limit  # runs past its limit: the kubelet ends it there
    return TraceJob(name, big, arrival, members, cpu, runs, limit)


def node_object(name: str, cpu: int) -> dict[str, Any]:
    capacity = {"cpu": str(cpu), "memory": f"{8 * cpu}Gi", "pods": "110"}
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
        },
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_objects(job: TraceJob, scheduler: str, created: float) -> list[dict[str, Any]]:
    """The job's pods as their ADDED events show them: a gang (Koordinator's annotations)
    when it has more than one."""
    annotations = {GANG_NAME: job.name, GANG_MIN: str(job.members)} if job.members > 1 else {}
    requests = {"cpu": str(job.cpu), "memory": f"{job.cpu}Gi"}
    return [
        {
            "metadata": {
                "name": f"{job.name}-{m}",
                "namespace": NAMESPACE,
                "uid": f"uid-{job.name}-{m}",
                "resourceVersion": "1",
                "creationTimestamp": format_rfc3339(created),
                "annotations": dict(annotations),
            },
            "spec": {
                "schedulerName": scheduler,
                "activeDeadlineSeconds": job.limit,
                "terminationGracePeriodSeconds": GRACE_SECONDS,
                "containers": [{"name": "main", "resources": {"requests": requests}}],
            },
            "status": {"phase": "Pending"},
        }
        for m in range(job.members)
    ]
