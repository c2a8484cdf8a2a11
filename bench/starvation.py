"""The starvation scenario's plan and its arithmetic, without a cluster (the driver is
``starvation_run.py``).

What a user reproduced: a steady stream of one-core pods of ours, each running 15 s, keeps every
node of a small cluster partly busy (the daemon spreads them over the least-used nodes), so a
gang asking for whole nodes at the same priority never finds them free. koordgang's starvation
guard (``--reserve-after``) makes a gang that has waited that long hold the nodes it will fit on
while the pods there finish. The scenario runs twice, with the guard and without
(``--reserve-after 0``), and compares:

- the gang's wait: its last member created -> all its members bound (or "not started" by the
  cap);
- the small pods' throughput and latency in two windows:
  * *while the gang waited*: from the gang's arrival to its start (or to the cap): what the
    reservation's drain costs the stream (the held nodes take no small pod while the pods
    there finish);
  * *the cap*: the same ``cap`` seconds after the gang's arrival in both runs. A gang that
    started runs ``gang_runtime`` seconds and finishes (the bench deletes it, as its job
    would end), and the stream goes on until the cap: the small pods it held back are bound
    then. This is the throughput the stream keeps over a stretch in which a big job got its
    turn; the target (90% of without the guard) is checked on it.
  Latency: create -> bound of the small pods created in a window, followed to the run's end
  (one still waiting then counts as waiting until then, so the mean is a lower bound).
  While the gang runs it holds ``gang_size`` nodes, which leaves the stream less room than it
  asks for (see ``room_left_for_stream``): that is the price of running the gang at all.

kwok's nodes run no containers and a plain pod never finishes there, so the bench deletes each
small pod ``small_lifetime`` seconds after it saw it bound (grace 0), as if it had run that long.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bench import targets
from bench.results import percentile
from bench.workload import GangRef, PodPlan, Requests, Workload, node_specs

#: The daemon flag under comparison; 0 turns the guard off.
RESERVE_AFTER_FLAG = "--reserve-after"
#: Small-pod throughput with the guard over without, at least (bench/targets.py).
TARGET_THROUGHPUT_RATIO = targets.STARVATION_THROUGHPUT.limit
SMALL_PREFIX = "small"
GANG_PREFIX = "big"


@dataclass(frozen=True)
class StarvationPlan:
    """Sizes and times of the scenario. Not scaled by ``--scale``: the gang needs whole nodes
    of a cluster barely larger than itself, and the stream must outlive the guard's delay."""

    nodes: int = 12
    cores_per_node: int = 8
    #: Small pods created per second, each asking for one core, each deleted this long after
    #: it was bound.
    small_rate: float = 2.0
    small_lifetime: float = 15.0
    #: The stream runs this long before the gang arrives (steady once pods start leaving).
    warmup: float = 20.0
    gang_size: int = 10
    #: The run without the guard is given up this long after the gang arrived.
    cap: float = 180.0
    #: A gang that started runs this long, then finishes (the bench deletes it).
    gang_runtime: float = 30.0

    @property
    def small_requests(self) -> Requests:
        return Requests("1", "1Gi")

    @property
    def gang_requests(self) -> Requests:
        return Requests(str(self.cores_per_node), "16Gi")

    @property
    def steady_small_pods(self) -> float:
        """Small pods bound at once once the stream is steady (rate x lifetime)."""
        return self.small_rate * self.small_lifetime

    def room_left_for_stream(self) -> float:
        """The share of the stream's demand (in cores) the cluster can still hold while the gang
        runs: 1.0 or more when both fit together."""
        free = (self.nodes - self.gang_size) * self.cores_per_node
        return free / self.steady_small_pods if self.steady_small_pods else float("inf")

    def describe(self) -> str:
        return (
            f"1-core pods created at {self.small_rate:g}/s, each deleted {self.small_lifetime:g} "
            f"s after it is bound; after {self.warmup:g} s a gang of {self.gang_size} x "
            f"{self.cores_per_node} cores; {self.nodes} nodes of {self.cores_per_node} cores; "
            f"given up {self.cap:g} s after the gang arrived"
        )


def small_pod(index: int, plan: StarvationPlan) -> PodPlan:
    return PodPlan(name=f"{SMALL_PREFIX}-{index:05d}", requests=plan.small_requests)


def is_small(name: str) -> bool:
    return name.startswith(SMALL_PREFIX + "-")


def starvation_workload(plan: StarvationPlan) -> Workload:
    """The nodes and the gang (the small pods are streamed: their number depends on how long
    the run lasts)."""
    ref = GangRef(name=f"{GANG_PREFIX}-000", min_available=plan.gang_size)
    gang = [
        PodPlan(name=f"{ref.name}-{m:04d}", requests=plan.gang_requests, gang=ref)
        for m in range(plan.gang_size)
    ]
    capacity = {"cpu": str(plan.cores_per_node), "memory": "32Gi", "pods": "110"}
    return Workload(
        nodes=node_specs("bench-starve", plan.nodes, capacity),
        pods=gang,
        notes={"stream": plan.describe()},
    )


def reserve_after(daemon_args: Iterable[str]) -> float | None:
    """The ``--reserve-after`` value in a daemon's flags (the last one wins), None when absent
    (the daemon's default then)."""
    args = list(daemon_args)
    value: float | None = None
    for i, arg in enumerate(args):
        if arg == RESERVE_AFTER_FLAG and i + 1 < len(args):
            value = float(args[i + 1])
        elif arg.startswith(RESERVE_AFTER_FLAG + "="):
            value = float(arg.split("=", 1)[1])
    return value


def due_for_deletion(
    bound_at: Mapping[str, float], lifetime: float, now: float, handled: Collection[str]
) -> list[str]:
    """Small pods bound at least ``lifetime`` ago and not yet deleted (``handled``), oldest
    first."""
    due = [
        (when, name)
        for name, when in bound_at.items()
        if is_small(name) and name not in handled and when + lifetime <= now
    ]
    return [name for _, name in sorted(due)]


def gang_bound_at(bound_at: Mapping[str, float], members: Iterable[str]) -> float | None:
    """When the last of ``members`` was bound, None while any is not."""
    times = [bound_at.get(name) for name in members]
    if not times or any(t is None for t in times):
        return None
    return max(t for t in times if t is not None)


@dataclass(frozen=True)
class StreamFigures:
    """The small pods of a window."""

    seconds: float
    #: Small pods bound in the window, and per second.
    bound: int
    pods_per_s: float | None
    #: Create -> bound of the small pods created in the window, mean and P99 (None when none
    #: was created); one still unbound at the run's end counts as waiting until then.
    latency_mean_s: float | None
    latency_p99_s: float | None
    #: Small pods created before the window's end and not bound at its end.
    pending_at_end: int
    #: Small pods created in the window and still not bound at the run's end.
    unbound_at_run_end: int

    def as_notes(self, prefix: str) -> dict[str, Any]:
        return {
            f"{prefix}_window_s": round(self.seconds, 2),
            f"{prefix}_small_bound": self.bound,
            f"{prefix}_small_pods_per_s": _round(self.pods_per_s, 3),
            f"{prefix}_small_latency_mean_s": _round(self.latency_mean_s, 3),
            f"{prefix}_small_latency_p99_s": _round(self.latency_p99_s, 3),
            f"{prefix}_small_pending_at_end": self.pending_at_end,
            f"{prefix}_small_unbound_at_run_end": self.unbound_at_run_end,
        }


def stream_figures(
    created_at: Mapping[str, float],
    bound_at: Mapping[str, float],
    start: float,
    end: float,
    run_end: float | None = None,
) -> StreamFigures:
    """The small pods' throughput in [start, end] (binds in it per second) and the latency of
    those created in it, followed until ``run_end`` (default ``end``): ``created_at`` holds when
    each small pod's creation was acknowledged, ``bound_at`` when it was seen bound (a pod seen
    bound before its creation's reply counts 0 s)."""
    until = end if run_end is None else max(run_end, end)
    seconds = max(0.0, end - start)
    bound = sum(1 for name in created_at if start <= bound_at.get(name, -1.0) <= end)
    latencies: list[float] = []
    unbound = 0
    for name, created in created_at.items():
        if not start <= created <= end:
            continue
        when = bound_at.get(name)
        if when is None or when > until:
            unbound += 1
            when = until
        latencies.append(max(0.0, when - created))
    pending = sum(
        1
        for name, created in created_at.items()
        if created <= end and (name not in bound_at or bound_at[name] > end)
    )
    return StreamFigures(
        seconds=seconds,
        bound=bound,
        pods_per_s=bound / seconds if seconds > 0 else None,
        latency_mean_s=sum(latencies) / len(latencies) if latencies else None,
        latency_p99_s=percentile(latencies, 0.99),
        pending_at_end=pending,
        unbound_at_run_end=unbound,
    )


def throughput_ratio(
    guarded: Mapping[str, Any], unguarded: Mapping[str, Any], window: str = "cap"
) -> float | None:
    """Small-pod throughput in ``window`` ("cap" or "window": while the gang waited) with the
    guard over without (from the results' notes), None when either is missing."""
    with_guard = guarded.get(f"{window}_small_pods_per_s")
    without = unguarded.get(f"{window}_small_pods_per_s")
    if with_guard is None or not without:
        return None
    return float(with_guard) / float(without)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
