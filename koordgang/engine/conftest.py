"""Fixtures for the engine's unit tests: a whole ``Scheduler`` with no cluster.

- ``FakeApi`` stands in for ``KubeApi``: it has ``request``'s signature, records every call
  (method, path, body) and answers from rules a test sets (by default: binds, PATCHes and
  Events succeed; GET of a pod answers what the test gave, else 404). Requests can be held
  in flight (``hold``) until the test releases them.
- ``FakeClock`` is the monotonic clock the engine is given; tests advance it.
- ``Harness`` builds ``Scheduler(Settings, FakeApi, default_framework(...))``, feeds it
  listings as the informers would, and runs it deterministically: ``step`` runs one round of
  the scheduling loop, ``settle`` turns the event loop (no real sleep) until binds, follow-ups
  and writes are done. The reporter's workers and the status writer run as tasks.
- ``with_retries`` waits nothing between attempts here (its backoff is patched to zero), so
  a transient error costs a few event-loop turns, not seconds.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
import tenacity

from koordgang.clients import retry
from koordgang.clients.api import JSON
from koordgang.clients.errors import ApiError
from koordgang.engine.intake import Intake
from koordgang.engine.kinds import KINDS
from koordgang.engine.loop import SchedulingLoop
from koordgang.engine.scheduler import Scheduler
from koordgang.gangapis import POD_ANNOTATION_KEYS
from koordgang.model.budgets import BudgetInfo
from koordgang.model.dra import (
    DeviceClassInfo,
    DeviceTaintRuleInfo,
    ResourceClaimInfo,
    ResourceSliceInfo,
    parse_device_class,
    parse_resource_slice,
)
from koordgang.model.koordinator import MIN_AVAILABLE_KEY, MODE_KEY, NAME_KEY, WAITING_TIME_KEY
from koordgang.model.namespace import NamespaceInfo
from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.model.volumes import ClaimInfo
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.state.cache import SchedulerCache
from koordgang.state.gangs import GangRegistry
from koordgang.state.network_topology import ClusterTopology
from koordgang.state.queue import SchedulingQueue
from koordgang.state.waiting import WaitingPods

SCHEDULER = "koord-scheduler"
NS = "ns"
#: The monotonic clock when a test starts, and the wall clock at monotonic 0.
START = 1_000.0
WALL0 = 1_700_000_000.0

_BINDING = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding$")
_POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$")
_POD_STATUS = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/status$")
_EVENTS = re.compile(r"^/api/v1/namespaces/([^/]+)/events$")


# -- retries ---------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def instant_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """``with_retries`` backs off with tenacity's jittered exponential wait (0.1 s and up, real
    time); here it waits zero: tenacity then only yields to the event loop."""
    monkeypatch.setattr(retry, "wait_exponential_jitter", lambda **_: tenacity.wait_none())


# -- the clock -------------------------------------------------------------------------------


class FakeClock:
    """Monotonic seconds; moves only when a test moves it."""

    def __init__(self, start: float = START) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now

    def wall(self) -> float:
        return WALL0 + self.now


# -- the API server --------------------------------------------------------------------------


@dataclass
class Call:
    method: str
    path: str
    body: Any
    content_type: str
    params: Mapping[str, str] | None
    #: "pending" while in flight, then "ok" or the exception's repr.
    outcome: str = "pending"
    #: Position among the calls that succeeded, in the order their replies came.
    landed: int = -1

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


Answer = Any  # an Exception to raise, a callable(Call) -> reply, or a reply


@dataclass
class _Rule:
    answers: list[Answer]
    #: The last answer repeats once the others are used up.
    index: int = 0

    def next(self) -> Answer:
        answer = self.answers[min(self.index, len(self.answers) - 1)]
        self.index += 1
        return answer


@dataclass
class _Hold:
    matches: Callable[[Call], bool]
    gate: asyncio.Event = field(default_factory=asyncio.Event)


class FakeApi:
    """``KubeApi.request`` without a server. Every call is recorded in ``calls`` in the order it
    was made; a call yields to the event loop once before it is answered, as a real one does."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._landed = itertools.count()
        self._rules: dict[tuple[str, str], _Rule] = {}
        #: GET of a pod answers this (namespace, name) -> object; 404 if absent.
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self._holds: list[_Hold] = []
        #: Requests in flight now, and the most ever in flight, per kind ("bind", "other").
        self.active: dict[str, int] = {"bind": 0, "other": 0}
        self.peak: dict[str, int] = {"bind": 0, "other": 0}
        #: Extra event-loop turns a call takes before it is answered (latency), if set.
        self.latency: Callable[[Call], int] | None = None
        #: Connections asked to be opened ahead of writes (``warm_writes``), per call.
        self.warmed: list[int] = []

    # -- programming -------------------------------------------------------------------------

    def answer(self, method: str, path: str, *answers: Answer) -> None:
        """Answers to ``method path`` in turn (the last one repeats): an exception is raised,
        a callable is called with the Call, anything else is returned."""
        self._rules[(method, path)] = _Rule(list(answers))

    def answer_bind(self, name: str, *answers: Answer, namespace: str = NS) -> None:
        self.answer("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", *answers)

    def hold(self, matches: Callable[[Call], bool]) -> asyncio.Event:
        """Requests for which ``matches`` is true wait until the returned event is set."""
        hold = _Hold(matches)
        self._holds.append(hold)
        return hold.gate

    def release_all(self) -> None:
        for hold in self._holds:
            hold.gate.set()

    # -- KubeApi -----------------------------------------------------------------------------

    async def warm_writes(self, count: int) -> int:
        self.warmed.append(count)
        return count

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float = 30.0,
    ) -> Any:
        call = Call(method, path, body, content_type, params)
        self.calls.append(call)
        kind = "bind" if _BINDING.match(path) else "other"
        self.active[kind] += 1
        self.peak[kind] = max(self.peak[kind], self.active[kind])
        try:
            for _ in range(1 + (self.latency(call) if self.latency else 0)):
                await asyncio.sleep(0)
            for hold in self._holds:
                if hold.matches(call):
                    await hold.gate.wait()
            reply = self._reply(call)
        except BaseException as error:
            call.outcome = repr(error)
            raise
        finally:
            self.active[kind] -= 1
        call.outcome = "ok"
        call.landed = next(self._landed)
        return reply

    def _reply(self, call: Call) -> Any:
        rule = self._rules.get((call.method, call.path))
        if rule is not None:
            answer = rule.next()
            if isinstance(answer, BaseException):
                raise answer
            return answer(call) if callable(answer) else answer
        if call.method == "GET":
            match = _POD.match(call.path)
            if match and (match[1], match[2]) in self.pods:
                return self.pods[(match[1], match[2])]
            raise ApiError(404, "NotFound", f"{call.path} not found")
        return {}

    # -- reading what was written ------------------------------------------------------------

    @property
    def idle(self) -> bool:
        return not any(self.active.values())

    def landed(self) -> list[Call]:
        """The calls that succeeded, in the order they were answered."""
        return sorted((call for call in self.calls if call.ok), key=lambda call: call.landed)

    def binds(self, *, landed: bool = True) -> list[tuple[str, str]]:
        """(pod name, node) of every binding POST (that succeeded, by default)."""
        return [
            (call.body["metadata"]["name"], call.body["target"]["name"])
            for call in (self.landed() if landed else self.calls)
            if _BINDING.match(call.path)
        ]

    def bind_attempts(self, name: str, namespace: str = NS) -> int:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
        return sum(1 for call in self.calls if call.path == path)

    def conditions(self, name: str, namespace: str = NS) -> list[dict[str, Any]]:
        """PodScheduled conditions written to a pod, in the order they landed."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/status"
        return [
            condition
            for call in self.landed()
            if call.path == path and call.method == "PATCH"
            for condition in call.body["status"]["conditions"]
        ]

    def condition(self, name: str, namespace: str = NS) -> dict[str, Any] | None:
        """The PodScheduled condition a pod shows now (the last written), if any."""
        written = self.conditions(name, namespace)
        return written[-1] if written else None

    def annotation_patches(self, name: str, namespace: str = NS) -> list[dict[str, Any]]:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        return [
            call.body["metadata"]["annotations"]
            for call in self.landed()
            if call.path == path and call.method == "PATCH"
        ]

    def events(self, name: str | None = None, reason: str | None = None) -> list[dict[str, Any]]:
        """Events posted (and accepted), in the order they landed, optionally for one object
        and one reason."""
        return [
            call.body
            for call in self.landed()
            if _EVENTS.match(call.path)
            and call.method == "POST"
            and (name is None or call.body["involvedObject"]["name"] == name)
            and (reason is None or call.body["reason"] == reason)
        ]

    def writes_to(self, name: str, namespace: str = NS) -> list[Call]:
        """Every write about one pod (status, annotations, Events), landed or not."""
        pod = f"/api/v1/namespaces/{namespace}/pods/{name}"
        return [
            call
            for call in self.calls
            if (call.path in (pod, pod + "/status") and call.method == "PATCH")
            or (_EVENTS.match(call.path) and call.body["involvedObject"]["name"] == name)
        ]

    def custom_status_patches(self, plural: str, name: str) -> list[dict[str, Any]]:
        return [
            call.body["status"]
            for call in self.landed()
            if call.path.startswith("/apis/") and call.path.endswith(f"/{plural}/{name}/status")
        ]


# -- objects as the API server returns them --------------------------------------------------


def node_json(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
    resource_version: str = "1",
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": dict(labels or {}),
            "resourceVersion": resource_version,
        },
        "spec": {"unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def node(name: str, **kwargs: Any) -> NodeInfo:
    return parse_node(node_json(name, **kwargs))


def uid_of(name: str, namespace: str = NS) -> str:
    return f"uid-{namespace}-{name}"


def pod_json(
    name: str,
    *,
    namespace: str = NS,
    uid: str | None = None,
    cpu: str = "1",
    scheduler: str = SCHEDULER,
    node_name: str = "",
    phase: str = "Pending",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    gates: Sequence[str] = (),
    node_selector: Mapping[str, str] | None = None,
    priority: int | None = None,
    preemption_policy: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
    }
    if priority is not None:
        spec["priority"] = priority
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    if node_name:
        spec["nodeName"] = node_name
    if gates:
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or uid_of(name, namespace),
            "resourceVersion": "1",
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def parse(obj: Mapping[str, Any]) -> PodInfo:
    """As the pod informer parses what it receives."""
    return parse_pod(obj, annotation_prefixes=POD_ANNOTATION_KEYS)


def pod(name: str, **kwargs: Any) -> PodInfo:
    return parse(pod_json(name, **kwargs))


def gang_annotations(
    gang: str, min_available: int, *, mode: str | None = None, waiting_time: str | None = None
) -> dict[str, str]:
    annotations = {NAME_KEY: gang, MIN_AVAILABLE_KEY: str(min_available)}
    if mode is not None:
        annotations[MODE_KEY] = mode
    if waiting_time is not None:
        annotations[WAITING_TIME_KEY] = waiting_time
    return annotations


def gang(
    gang: str,
    count: int,
    min_available: int,
    *,
    mode: str | None = None,
    waiting_time: str | None = None,
    cpu: str = "1",
    extra: Mapping[str, str] | None = None,
    first: int = 0,
) -> list[PodInfo]:
    """Members ``<gang>-<i>`` of gang ``ns/<gang>``, declared by Koordinator's annotations."""
    annotations = gang_annotations(gang, min_available, mode=mode, waiting_time=waiting_time)
    annotations.update(extra or {})
    return [
        pod(f"{gang}-{i}", cpu=cpu, annotations=annotations) for i in range(first, first + count)
    ]


#: The driver of the devices ``gpu_slice`` publishes, which ``gpu_class`` selects.
DRIVER = "gpu.example.com"


def gpu_slice(node_name: str, devices: int = 2) -> ResourceSliceInfo:
    return parse_resource_slice(
        {
            "metadata": {"name": f"{node_name}-gpus", "resourceVersion": "1"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node_name,
                "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {"name": f"gpu-{i}", "attributes": {"index": {"int": i}}}
                    for i in range(devices)
                ],
            },
        }
    )


def gpu_class(selector: str = f'device.driver == "{DRIVER}"') -> DeviceClassInfo:
    return parse_device_class(
        {
            "metadata": {"name": "gpu", "resourceVersion": "1"},
            "spec": {
                "selectors": [{"cel": {"expression": selector}}],
                "config": [{"opaque": {"driver": DRIVER, "parameters": {"mode": "train"}}}],
            },
        }
    )


def bound(info: PodInfo, node_name: str) -> PodInfo:
    """``info`` as the informer shows it once bound."""
    return replace(info, node_name=node_name, resource_version="2")


# -- the scheduler ---------------------------------------------------------------------------


class Harness:
    """One Scheduler over the fake API and clock, driven by the test."""

    def __init__(self, api: FakeApi, clock: FakeClock, settings: Settings) -> None:
        self.api = api
        self.clock = clock
        self.settings = settings
        self.gangs = GangRegistry(settings.default_gang_waiting_time)
        self.topology = ClusterTopology()
        self.framework = default_framework(
            settings, self.gangs, rng=random.Random(7), topology=self.topology
        )
        self.scheduler = Scheduler(
            settings,
            api,  # type: ignore[arg-type]
            self.framework,
            clock=clock,
            wall=clock.wall,
            gangs=self.gangs,
            topology=self.topology,
        )
        self.tasks: list[asyncio.Task[None]] = []

    # -- parts -------------------------------------------------------------------------------

    @property
    def cache(self) -> SchedulerCache:
        return self.scheduler.cache

    @property
    def queue(self) -> SchedulingQueue:
        return self.scheduler.queue

    @property
    def intake(self) -> Intake:
        return self.scheduler.intake

    @property
    def loop(self) -> SchedulingLoop:
        return self.scheduler.loop

    @property
    def waiting(self) -> WaitingPods:
        return self.framework.waiting

    def start_writers(self, workers: int | None = None, event_workers: int | None = None) -> None:
        """The reporter's workers and the status writer, as the daemon runs them (a test
        giving ``workers`` gets no event writers unless it asks for them too)."""
        reporter = self.scheduler.reporter
        for index in range(reporter.workers if workers is None else workers):
            self.tasks.append(asyncio.create_task(reporter.work(), name=f"reporter-{index}"))
        if event_workers is None:
            event_workers = reporter.event_workers if workers is None else 0
        for index in range(event_workers):
            self.tasks.append(
                asyncio.create_task(reporter.work(events_only=True), name=f"event-writer-{index}")
            )
        self.tasks.append(
            asyncio.create_task(self.scheduler.status_writer.work(), name="status-writer")
        )
        evictor = self.scheduler.evictor
        for index in range(evictor.workers):
            self.tasks.append(asyncio.create_task(evictor.work(), name=f"evictor-{index}"))

    # -- informers ---------------------------------------------------------------------------

    def list(
        self,
        *,
        nodes: Iterable[NodeInfo] = (),
        pods: Iterable[PodInfo] = (),
        namespaces: Iterable[NamespaceInfo] = (NamespaceInfo(NS, {}),),
        claims: Iterable[ClaimInfo] = (),
        budgets: Iterable[BudgetInfo] = (),
        resource_slices: Iterable[ResourceSliceInfo] = (),
        device_classes: Iterable[DeviceClassInfo] = (),
        resource_claims: Iterable[ResourceClaimInfo] = (),
        device_taint_rules: Iterable[DeviceTaintRuleInfo] = (),
    ) -> None:
        """The initial listings of every watched kind; the loop is ready after them."""
        listed: dict[str, Iterable[Any]] = {
            "nodes": nodes,
            "pods": pods,
            "namespaces": namespaces,
            "claims": claims,
            "budgets": budgets,
            "resourceslices": resource_slices,
            "deviceclasses": device_classes,
            "resourceclaims": resource_claims,
            "devicetaintrules": device_taint_rules,
        }
        for kind in KINDS:
            self.intake.kind(kind.name).listed(list(listed[kind.name]))

    def add(self, *pods: PodInfo) -> None:
        for info in pods:
            self.intake.on_pod_upsert(info)

    def observe_binds(self) -> None:
        """What the pod informer shows after binds landed: each bound pod with its node."""
        for name, node_name in self.api.binds():
            for info in list(self.cache.pods()):
                if info.name == name and not info.node_name:
                    self.intake.on_pod_upsert(bound(info, node_name))

    # -- running -----------------------------------------------------------------------------

    def step(self, limit: int = 100) -> int:
        return self.scheduler.loop.step(limit)

    def nudge_reporter(self) -> None:
        """Reports held (until due, or while binds are in flight) are looked at again only
        when something wakes the workers, or after a 0.2 s poll in real time; neither the fake
        clock nor the end of the last bind wakes anybody. Here the harness wakes them instead
        of waiting."""
        reporter = self.scheduler.reporter
        if reporter.backlog:
            reporter.nudge()

    def quiet(self) -> bool:
        return (
            self.api.idle
            and self.scheduler.binder.in_flight == 0
            and self.scheduler.reporter.backlog == 0
            and self.scheduler.evictor.backlog == 0
        )

    async def settle(self, turns: int = 2_000) -> bool:
        """Turns the event loop until binds, their follow-ups and writes are done (quiet for
        a few turns in a row), or ``turns`` ran out; no real time passes."""
        calm = 0
        for _ in range(turns):
            await asyncio.sleep(0)
            self.nudge_reporter()
            calm = calm + 1 if self.quiet() else 0
            if calm >= 10:
                return True
        return False

    async def run(self, limit: int = 100) -> int:
        """One round of the loop, then everything it started is carried out."""
        done = self.step(limit)
        await self.settle()
        return done

    async def close(self) -> None:
        self.api.release_all()
        scheduler = self.scheduler
        scheduler.loop.stop()
        await scheduler.binder.drain(1.0)
        await scheduler.bind_outcomes.drain(1.0)
        await scheduler.reporter.close(0.05)
        await scheduler.status_writer.close(0.05)
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def turns(count: int = 20) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def until(predicate: Callable[[], bool], *, turns: int = 2_000) -> bool:
    for _ in range(turns):
        if predicate():
            return True
        await asyncio.sleep(0)
    return predicate()


MakeScheduler = Callable[..., Harness]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
async def make_scheduler(api: FakeApi, clock: FakeClock) -> AsyncIterator[MakeScheduler]:
    """Makes harnesses over the test's API and clock (a restart is a second one); settings are
    the defaults, with ``Settings`` fields given as keywords, except that a pod is told why it
    waits at once (``explain_after=0``) unless a test asks for the hold. Writers run unless
    told not to."""
    made: list[Harness] = []

    def make(
        *,
        writers: bool = True,
        workers: int | None = None,
        event_workers: int | None = None,
        **overrides: Any,
    ) -> Harness:
        harness = Harness(api, clock, Settings(**{"explain_after": 0.0, **overrides}))
        if writers:
            harness.start_writers(workers, event_workers)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.close()


@pytest.fixture
async def sched(make_scheduler: MakeScheduler) -> Harness:
    return make_scheduler()
