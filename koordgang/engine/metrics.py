"""Prometheus metrics of one scheduler instance (its own registry, so tests can make many)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from koordgang.framework.report import MetricSpec

_LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
)
_E2E_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)


class Metrics:
    """kube-scheduler's names and labels where it has the metric (dashboards built for it
    work), ``koordgang_`` names for the rest."""

    def __init__(
        self, profile: str = "koord-scheduler", plugin_metrics: Sequence[MetricSpec] = ()
    ) -> None:
        self.registry = CollectorRegistry()
        #: The plugins' own metrics (gangs, for one), by name.
        self._plugin_metrics: dict[str, Any] = {}
        self.profile = profile
        #: (metric, label values) -> its child: ``labels()`` takes a lock and builds a key on
        #: every call, and these are counted for every attempt and every bound pod.
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}
        self.attempts = Counter(
            "scheduler_schedule_attempts",
            "Scheduling attempts by result (scheduled, unschedulable, error) and profile.",
            ["result", "profile"],
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Time of one scheduling cycle (filter, score, assume), without binding.",
            ["result", "profile"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.binding_duration = Histogram(
            "koordgang_binding_duration_seconds",
            "Time to bind one pod, retries included.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.binding_landed = Histogram(
            "koordgang_binding_landed_seconds",
            "Time from the scheduling decision (the pod assumed on its node) to its Binding "
            "accepted by the API server: how long other schedulers cannot know of the room taken.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.watch_lag = Histogram(
            "koordgang_watch_lag_seconds",
            "Time from a Binding of ours accepted by the API server to the pod informer showing "
            "the pod bound: how stale the cache is (other schedulers' bindings come the same way).",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.e2e_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "Time from a pod entering the queue to its binding, by the attempts it took.",
            ["attempts"],
            buckets=_E2E_BUCKETS,
            registry=self.registry,
        )
        self.pod_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Attempts it took to schedule a pod.",
            buckets=(1, 2, 4, 8, 16),
            registry=self.registry,
        )
        self.binds = Counter(
            "koordgang_binds",
            "Bind requests by result (ok, gone, conflict, error).",
            ["result"],
            registry=self.registry,
        )
        self.binds_taken = Counter(
            "koordgang_binds_taken",
            "Pods another binder bound elsewhere while we bound them: a second scheduler answers "
            "to one of our names (or a user bound them by hand).",
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "scheduler_pending_pods",
            "Pods waiting in the queue, by queue (active, backoff, unschedulable, gated).",
            ["queue"],
            registry=self.registry,
        )
        self.binds_in_flight = Gauge(
            "koordgang_binds_in_flight", "Bind requests in flight.", registry=self.registry
        )
        self.cache_size = Gauge(
            "koordgang_cache_objects",
            "Objects the scheduler knows, by kind (nodes, pods, budgets).",
            ["kind"],
            registry=self.registry,
        )
        self.report_backlog = Gauge(
            "koordgang_report_backlog",
            "Explanations and Events waiting to be written.",
            registry=self.registry,
        )
        self.leader = Gauge(
            "koordgang_leader",
            "1 while this replica holds the leader lease (or runs without leader election).",
            registry=self.registry,
        )
        self.held_pods = Gauge(
            "koordgang_held_pods",
            "Pods placed and held for their group (NonStrict gangs short of their minimum).",
            registry=self.registry,
        )
        self.api_writes = Counter(
            "koordgang_api_writes",
            "Status and Event writes by kind and result.",
            ["kind", "result"],
            registry=self.registry,
        )

        # Named as kube-scheduler names them, so that existing dashboards apply.
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Preemption dry runs (jobs or pods that did not fit and had lower-priority pods).",
            registry=self.registry,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Pods evicted by one preemption.",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
            registry=self.registry,
        )
        self.preemption_dry_run = Histogram(
            "koordgang_preemption_dry_run_duration_seconds",
            "Time of one preemption dry run (victim search and reprieve).",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.nominated_pods = Gauge(
            "koordgang_nominated_pods",
            "Pods nominated to a node while victims leave (room held for them).",
            registry=self.registry,
        )
        self.others_in_flight = Gauge(
            "koordgang_other_pods_in_flight",
            "Pods of other schedulers not tried yet, counted on the node they are likely to go "
            "to (othersInFlightFor).",
            registry=self.registry,
        )
        for spec in plugin_metrics:
            self._register(spec)

    def _child(self, metric: Any, *values: str) -> Any:
        """``metric.labels(*values)``, looked up once."""
        key = (metric, values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def attempt(self, result: str, seconds: float, profile: str = "") -> None:
        """One scheduling attempt ended with ``result``; ``profile`` is the scheduler name the
        pod asked for (one daemon answers to several), "" the daemon's first."""
        profile = profile or self.profile
        self._child(self.attempts, result, profile).inc()
        self._child(self.attempt_duration, result, profile).observe(seconds)

    def _register(self, spec: MetricSpec) -> None:
        labels = [spec.label] if spec.label else []
        metric: Any
        if spec.kind == "gauge":
            metric = Gauge(spec.name, spec.help, labels, registry=self.registry)
        elif spec.kind == "counter":
            metric = Counter(spec.name, spec.help, labels, registry=self.registry)
        elif spec.kind == "histogram":
            buckets = spec.buckets or _E2E_BUCKETS
            metric = Histogram(
                spec.name, spec.help, labels, buckets=buckets, registry=self.registry
            )
        else:
            raise ValueError(
                f"metric {spec.name}: kind {spec.kind!r} is not gauge, counter or histogram"
            )
        self._plugin_metrics[spec.name] = metric

    def record(self, metric: str, value: float = 1.0, label: str = "") -> None:
        """A plugin's event (see ``Handle.record``): a counter counts ``value``, a histogram
        observes it; names no plugin declared are ignored."""
        found = self._plugin_metrics.get(metric)
        if found is None:
            return
        child = found.labels(label) if label else found
        if isinstance(found, Histogram):
            child.observe(value)
        elif isinstance(found, Counter):
            child.inc(value)

    def set_gauges(self, values: Mapping[str, Mapping[str, float]]) -> None:
        """The plugins' gauges, by metric name and label value."""
        for name, by_label in values.items():
            gauge = self._plugin_metrics.get(name)
            if not isinstance(gauge, Gauge):
                continue
            for label, value in by_label.items():
                (gauge.labels(label) if label else gauge).set(value)

    def bind_ended(self, outcome: str) -> None:
        """One Binding POST ended with ``outcome``."""
        self._child(self.binds, outcome).inc()

    def scheduled(self, seconds: float, attempts: int) -> None:
        """A pod got bound ``seconds`` after entering the queue, at attempt ``attempts``."""
        label = str(attempts) if attempts < 16 else "16+"
        self._child(self.e2e_duration, label).observe(seconds)
        self.pod_attempts.observe(attempts)

    def render(self) -> bytes:
        return generate_latest(self.registry)
