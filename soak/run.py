"""One soak: jobs of every kind come and go on a local control plane while faults are injected
in turn; the daemon's memory and the pending pods are sampled, and the invariants checked.

The loop runs once a second: it creates a job while what is asked for stays under 150% of the
cluster's cpu (so that some jobs wait, and preemption has work), looks at every pod of the
soak with one LIST every two seconds, deletes jobs whose time is up (bound jobs live 10-40 s),
jobs that lost a member (a preemption victim: its client would restart it) and jobs still not
bound after five minutes. Faults come every ``fault_every`` seconds: the daemon's SIGKILL once,
first, then the control plane's faults in turn, so that the daemon that runs to the end has run
all but the first minutes of the soak (its memory is what the verdict is about). Its memory
tracer takes its baseline a minute after it started.
"""

from __future__ import annotations

import json
import random
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from harness.daemon import LocalDaemon
from harness.invariants import overcommitted_nodes
from harness.kube import SCHEDULER, Cluster
from soak import jobs
from soak.jobs import SoakJob

#: Reading the cluster may fail while a fault is on; the loop carries on.
TRANSIENT = (ApiException, HTTPError, OSError)
#: Jobs are created while what they ask for stays under this share of the cluster's cpu: some
#: wait, and the high-priority ones preempt.
OVERCOMMIT = 1.5
#: A bound job lives this long (seconds), then its client deletes it.
LIFETIME = (10.0, 40.0)
#: A job not bound after this long is given up by its client.
GIVE_UP_AFTER = 300.0
#: A gang seen bound below its minimum in two checks this far apart is a violation (binding
#: a gang takes well under a second; a frozen API server stalls it for its freeze).
CHECK_EVERY = 30.0
#: A pending pod of ours older than this must carry an explanation.
EXPLAIN_WITHIN = 20.0


@dataclass
class Sample:
    at: float
    rss_mb: float | None
    pending: int
    bound: int
    jobs: int
    daemon_starts: int
    #: The daemon's open sockets and threads: RSS that rises with them is connections' buffers.
    sockets: int | None = None
    threads: int | None = None


@dataclass
class Violation:
    at: float
    kind: str
    detail: str


@dataclass
class Fault:
    at: float
    name: str
    seconds: float
    ok: bool = True
    error: str = ""


@dataclass
class SoakRecord:
    minutes: float
    samples: list[Sample] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    jobs_created: int = 0
    jobs_bound: int = 0
    jobs_disrupted: int = 0
    jobs_given_up: int = 0
    pods_created: int = 0
    daemon_restarts: int = 0
    transient_errors: int = 0
    #: When the running daemon started (seconds since the soak's start): its RSS is judged.
    last_daemon_start: float = 0.0
    memory_at_start: dict[str, Any] = field(default_factory=dict)
    memory_at_end: dict[str, Any] = field(default_factory=dict)


FaultAction = Callable[[], None]


class Soak:
    def __init__(
        self,
        cluster: Cluster,
        daemon: LocalDaemon,
        namespace: str,
        *,
        minutes: float,
        capacity_cpu: int,
        faults: list[tuple[str, float, FaultAction]],
        fault_every: float,
        first_faults: list[tuple[str, float, FaultAction]] | None = None,
        seed: int = 1,
        say: Callable[[str], None] = print,
    ) -> None:
        self.cluster = cluster
        self.daemon = daemon
        self.namespace = namespace
        self.capacity_cpu = capacity_cpu
        self.rng = random.Random(seed)
        self.record = SoakRecord(minutes=minutes)
        self.faults = faults
        self.first_faults = list(first_faults or [])
        self.fault_every = fault_every
        #: When the running daemon's memory tracer takes its baseline (0: taken).
        self.baseline_at = 60.0
        self.say = say
        self.live: dict[str, SoakJob] = {}
        self.serial = 0
        self.start = time.monotonic()
        self.below_minimum: dict[str, float] = {}

    def now(self) -> float:
        return time.monotonic() - self.start

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> SoakRecord:
        end = self.record.minutes * 60
        next_look = next_sample = 0.0
        next_check = CHECK_EVERY
        next_fault = self.fault_every
        fault_index = 0
        next_progress = 60.0
        while (now := self.now()) < end:
            self._guarded(self._maybe_create)
            if now >= next_look:
                self._guarded(self._look)
                next_look = now + 2
            if now >= next_sample:
                self._guarded(self._sample)
                next_sample = now + 5
            if now >= next_check:
                self._guarded(self._check)
                next_check = now + CHECK_EVERY
            if self.baseline_at and now >= self.baseline_at:
                self.record.memory_at_start = self._memory()
                self.baseline_at = 0.0
            if (self.faults or self.first_faults) and now >= next_fault:
                if self.first_faults:
                    self._inject(*self.first_faults.pop(0))
                elif self.faults:
                    self._inject(*self.faults[fault_index % len(self.faults)])
                    fault_index += 1
                next_fault = self.now() + self.fault_every
            if now >= next_progress:
                self._progress(end)
                next_progress = now + 60
            time.sleep(max(0.0, 1.0 - (self.now() - now)))
        self.say("churn over: letting the last jobs settle (up to 120 s)")
        self._settle()
        self.record.memory_at_end = self._memory()
        return self.record

    def _guarded(self, step: Callable[[], None]) -> None:
        try:
            step()
        except TRANSIENT:
            self.record.transient_errors += 1

    def _progress(self, end: float) -> None:
        r = self.record
        last = r.samples[-1] if r.samples else None
        rss = f"{last.rss_mb:.0f} MB" if last and last.rss_mb else "?"
        if last and last.sockets is not None:
            rss += f" ({last.sockets} sockets, {last.threads} threads)"
        self.say(
            f"{self.now() / 60:.0f}/{end / 60:.0f} min: {r.jobs_created} jobs "
            f"({r.pods_created} pods), {len(self.live)} live, {len(r.faults)} faults, "
            f"{len(r.violations)} violations, daemon RSS {rss}"
        )

    # -- jobs --------------------------------------------------------------------------------

    def _maybe_create(self) -> None:
        asked = sum(j.requested_cpu for j in self.live.values())
        if asked >= self.capacity_cpu * OVERCOMMIT:
            return
        self.serial += 1
        job = jobs.make(self.rng, self.serial, self.namespace, self.now())
        jobs.create(self.cluster, job)
        self.live[job.name] = job
        self.record.jobs_created += 1
        self.record.pods_created += job.members

    def _look(self) -> None:
        pods = self.cluster.pods(self.namespace)
        by_job: dict[str, list[Any]] = {}
        for pod in pods:
            name = (pod.metadata.labels or {}).get(jobs.JOB_LABEL)
            if name and pod.metadata.deletion_timestamp is None:
                by_job.setdefault(name, []).append(pod)
        now = self.now()
        for job in list(self.live.values()):
            members = by_job.get(job.name, [])
            job.seen = max(job.seen, len(members))
            bound = sum(1 for p in members if p.spec.node_name)
            if job.bound_at is None and job.seen == job.members and bound == job.members:
                job.bound_at = now
                job.delete_at = now + self.rng.uniform(*LIFETIME)
                self.record.jobs_bound += 1
            if job.seen == job.members and len(members) < job.seen:
                self.record.jobs_disrupted += 1  # a member was taken away: preempted
                self._delete(job)
            elif job.delete_at is not None and now >= job.delete_at:
                self._delete(job)
            elif job.bound_at is None and now - job.created_at > GIVE_UP_AFTER:
                self.record.jobs_given_up += 1
                self._delete(job)

    def _delete(self, job: SoakJob) -> None:
        jobs.delete(self.cluster, job)
        self.live.pop(job.name, None)
        self.below_minimum.pop(job.name, None)

    # -- measuring ---------------------------------------------------------------------------

    def _rss_mb(self) -> float | None:
        process = self.daemon.process
        if process is None or process.poll() is not None:
            return None
        try:
            for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def _sockets_and_threads(self) -> tuple[int | None, int | None]:
        process = self.daemon.process
        if process is None or process.poll() is not None:
            return None, None
        try:
            fds = list(Path(f"/proc/{process.pid}/fd").iterdir())
            threads = len(list(Path(f"/proc/{process.pid}/task").iterdir()))
        except OSError:
            return None, None
        sockets = 0
        for fd in fds:
            try:
                sockets += fd.readlink().name.startswith("socket:")
            except OSError:  # closed since it was listed
                continue
        return sockets, threads

    def _sample(self) -> None:
        rss = self._rss_mb()
        sockets, threads = self._sockets_and_threads()
        ours = [p for p in self.cluster.pods(self.namespace) if p.spec.scheduler_name == SCHEDULER]
        bound = sum(1 for p in ours if p.spec.node_name)
        self.record.samples.append(
            Sample(
                at=round(self.now(), 1),
                rss_mb=None if rss is None else round(rss, 1),
                pending=len(ours) - bound,
                bound=bound,
                jobs=len(self.live),
                daemon_starts=self.daemon.starts,
                sockets=sockets,
                threads=threads,
            )
        )

    def _memory(self) -> dict[str, Any]:
        try:
            url = f"http://127.0.0.1:{self.daemon.port}/debug/memory"
            with urllib.request.urlopen(url, timeout=30) as reply:
                answer: dict[str, Any] = json.loads(reply.read())
                return answer
        except (OSError, ValueError):
            return {}

    # -- invariants --------------------------------------------------------------------------

    def _violation(self, kind: str, detail: str) -> None:
        self.record.violations.append(Violation(round(self.now(), 1), kind, detail))
        self.say(f"VIOLATION {kind}: {detail}")

    def _check(self) -> None:
        for node, short in overcommitted_nodes(self.cluster).items():
            self._violation("over-committed", f"{node}: {', '.join(short)}")
        now = self.now()
        pods = self.cluster.pods(self.namespace)
        by_job: dict[str, list[Any]] = {}
        for pod in pods:
            name = (pod.metadata.labels or {}).get(jobs.JOB_LABEL)
            if name and pod.metadata.deletion_timestamp is None:
                by_job.setdefault(name, []).append(pod)
        for job in self.live.values():
            members = by_job.get(job.name, [])
            bound = sum(1 for p in members if p.spec.node_name)
            if job.minimum and 0 < bound < job.minimum and len(members) == job.members:
                since = self.below_minimum.setdefault(job.name, now)
                if now - since >= CHECK_EVERY:
                    self._violation(
                        "gang below its minimum", f"{job.name}: {bound}/{job.minimum} bound"
                    )
            else:
                self.below_minimum.pop(job.name, None)
        for pod in pods:
            if pod.spec.node_name or pod.spec.scheduler_name != SCHEDULER:
                continue
            if pod.metadata.deletion_timestamp is not None:
                continue
            age = time.time() - pod.metadata.creation_timestamp.timestamp()
            told = any(
                c.type == "PodScheduled" and c.status == "False" and c.message
                for c in pod.status.conditions or []
            )
            if age > EXPLAIN_WITHIN + CHECK_EVERY and not told:
                self._violation("unexplained", f"{pod.metadata.name} pending {age:.0f}s")

    def _settle(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            self._guarded(self._look)
            waiting = [j for j in self.live.values() if j.bound_at is None]
            if not waiting:
                break
            time.sleep(2)
        self._guarded(self._check)

    # -- faults ------------------------------------------------------------------------------

    def _inject(self, name: str, seconds: float, action: FaultAction) -> None:
        fault = Fault(at=round(self.now(), 1), name=name, seconds=seconds)
        self.say(f"fault: {name}")
        try:
            action()
        except Exception as error:  # a fault that could not be injected is reported, not fatal
            fault.ok = False
            fault.error = repr(error)
            self.say(f"fault {name} failed: {error!r}")
        self.record.faults.append(fault)
        if name == "daemon SIGKILL":
            self.record.daemon_restarts += 1
            self.record.last_daemon_start = self.now()
            self.baseline_at = self.now() + 60.0
