"""Settings of the daemon: one documented dataclass, filled from flags or the environment.

This module is the bottom layer: every other layer may read settings, none is imported here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ScoreStrategy(enum.StrEnum):
    """How nodes that fit a pod are ranked."""

    #: Spread: prefer the node with the most free room left (kube-scheduler's default).
    LEAST_ALLOCATED = "LeastAllocated"
    #: Binpack: prefer the fullest node that still fits, keeping whole nodes free for big
    #: jobs. What GPU clusters usually want.
    MOST_ALLOCATED = "MostAllocated"


class LogFormat(enum.StrEnum):
    JSON = "json"
    CONSOLE = "console"


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the daemon can be told. Defaults suit a production cluster."""

    #: Pods whose ``spec.schedulerName`` is one of these are ours; all others only use
    #: capacity. One engine and one view of the cluster serve every name (as kube-scheduler's
    #: profiles do); the first names the daemon itself (its Lease, its logs).
    scheduler_names: tuple[str, ...] = ("koord-scheduler",)
    #: Path to a kubeconfig; empty means in-cluster config, then ``~/.kube/config``.
    kubeconfig: str = ""
    log_format: LogFormat = LogFormat.CONSOLE
    log_level: str = "info"
    score_strategy: ScoreStrategy = ScoreStrategy.LEAST_ALLOCATED
    #: Upper bound of Binding requests in flight at once. On a busy API server a bind takes
    #: 50-100 ms, so throughput is about this many per 0.1 s (measured: 64 reached 59% of the
    #: bind ceiling with 1,000 nodes, 128 reached 74%).
    bind_concurrency: int = 128
    #: Most ``Scheduled`` Events written per second (with a burst of 500); the rest are dropped
    #: and counted, so that they never take the API server's capacity from binding. 0: none.
    scheduled_events_per_second: float = 100.0
    #: A pending pod is first told why it waits (PodScheduled=False and a FailedScheduling
    #: Event) after this many seconds; a pod bound by then is told nothing. The members of a gang
    #: that a Job creates one by one would otherwise each be told "waiting for N more members"
    #: as N counts down (measured: 3,500 writes for 1,000 pods created at 100/s). While binds
    #: are in flight it waits up to as long again, so that binding goes first. 0: at once.
    explain_after: float = 1.0
    #: Trace memory allocations (tracemalloc) and serve /debug/memory: the allocation sites
    #: that grew since start-up. For leak hunts and soak tests; costs CPU and memory.
    trace_memory: bool = False
    #: Port of the HTTP endpoints /healthz, /readyz and /metrics; 0 disables them.
    http_port: int = 10251
    #: Where they listen: loopback unless told otherwise (``/gangs`` shows pod names; a
    #: Deployment opens the port deliberately, for probes and Prometheus).
    http_host: str = "127.0.0.1"
    #: Longest time a gang may hold reservations while still short (seconds).
    default_gang_waiting_time: float = 600.0
    #: How long PreBind waits for a device's DRA binding conditions before giving the
    #: devices back (seconds; kube-scheduler's default).
    dra_binding_timeout: float = 600.0
    #: First and largest delay before a pod that failed is tried again (seconds).
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    #: A pod parked as unschedulable is retried at least this often, even without an event
    #: that could have made it schedulable (seconds).
    unschedulable_retry_interval: float = 60.0
    #: Evict lower-priority pods to make room for a job (or pod) of ours that does not fit.
    preemption: bool = True
    #: The starvation guard: a job that has not fitted for this long holds the nodes it will
    #: fit on once the pods of ours there (same or lower priority) finish, and nothing of ours
    #: at its priority or below is placed there meanwhile (seconds; 0 turns the guard off).
    #: Without it a stream of small pods can keep every node partly busy for ever.
    reserve_after: float = 30.0
    #: Most jobs holding nodes that way at once (a higher-priority job takes a lower one's
    #: place); every reservation idles the room the pods there leave until the job fits.
    max_reserving_jobs: int = 1
    #: Room a reserving job lends (backfill: pods whose time limits end before it starts run
    #: there) is taken back once it is all the job waits for: the pods it let in are evicted
    #: (``DisruptionTarget``), so that backfill never makes it start later than it would
    #: have. Off, they run to their ends and the job waits for them (by their limits, never
    #: past the start it was promised).
    reclaim_lent_room: bool = True
    #: A pod of another scheduler that it has not tried yet (no ``PodScheduled`` condition)
    #: counts on the node that scheduler is likely to give it (the least allocated that
    #: holds it) until it binds, is tried, or is this old (seconds; 0: such pods count
    #: nowhere until bound). Keeps the room kube-scheduler is about to take on shared nodes
    #: out of our decisions while its Binding is on its way.
    others_in_flight_for: float = 10.0
    #: How long a graceful shutdown waits for binds in flight (seconds).
    shutdown_grace: float = 20.0
    #: Run for a lease: only the replica holding it schedules and writes (high availability).
    leader_elect: bool = False
    #: How long a lease holds without renewal, how long the leader keeps trying to renew
    #: before it gives up, and how often both sides try (seconds, kube-scheduler's defaults).
    leader_elect_lease_duration: float = 15.0
    leader_elect_renew_deadline: float = 10.0
    leader_elect_retry_period: float = 2.0
    #: The Lease: its name, and its namespace ("" means this pod's namespace, else default).
    leader_elect_resource_name: str = "koordgang"
    leader_elect_resource_namespace: str = ""

    @property
    def scheduler_name(self) -> str:
        """The first of :attr:`scheduler_names`: the name the daemon goes by."""
        return self.scheduler_names[0]
