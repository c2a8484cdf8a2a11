"""Evicts preemption's victims, as the seed shows it: a ``DisruptionTarget`` condition naming
the preemptor first, then a graceful delete, then a ``Preempted`` Event on the victim.

Workers run as guarded tasks; a victim already gone is simply done.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass

import structlog

from koordgang.clients import events, pods
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.clients.retry import with_retries
from koordgang.engine.metrics import Metrics
from koordgang.model.objects import ObjectRef
from koordgang.model.pod import PodInfo

log = structlog.get_logger("koordgang.evictor")

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_REASON = "PreemptionByScheduler"


@dataclass(frozen=True, slots=True)
class Eviction:
    pod: PodInfo
    node: str
    #: The job the room is made for (``default/hello-job``) and the pod that asked.
    preemptor: str
    trigger: str
    #: The scheduler name the preemptor answers to ("": the daemon's first name).
    scheduler: str = ""
    #: Why, in the condition's words ("": ``PREEMPTING``).
    why: str = ""


#: What kube-scheduler's preemption writes on a victim's DisruptionTarget condition.
PREEMPTING = "preempting to accommodate higher priority pods"


def condition_message(scheduler_name: str, eviction: Eviction) -> str:
    return (
        f"{eviction.scheduler or scheduler_name}: {eviction.why or PREEMPTING}, "
        f"preemptor: {eviction.preemptor}, triggerpod: {eviction.trigger}"
    )


class Evictor:
    def __init__(
        self, api: KubeApi, scheduler_name: str, metrics: Metrics, *, workers: int = 8
    ) -> None:
        self._api = api
        self._scheduler_name = scheduler_name
        self._metrics = metrics
        self.workers = workers
        self._queue: asyncio.Queue[Eviction] = asyncio.Queue()
        #: Victims submitted and not yet written (uids): a victim is evicted once.
        self._pending: set[str] = set()

    def submit(self, eviction: Eviction) -> None:
        if eviction.pod.uid in self._pending:
            return
        self._pending.add(eviction.pod.uid)
        self._queue.put_nowait(eviction)

    @property
    def backlog(self) -> int:
        return len(self._pending)

    async def work(self) -> None:
        while True:
            eviction = await self._queue.get()
            try:
                await self._evict(eviction)
            finally:
                self._pending.discard(eviction.pod.uid)

    async def _evict(self, eviction: Eviction) -> None:
        pod = eviction.pod
        condition = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": PREEMPTION_REASON,
            "message": condition_message(self._scheduler_name, eviction),
            "lastTransitionTime": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "lastProbeTime": None,
        }
        try:
            await with_retries(
                lambda: pods.patch_condition(self._api, pod.namespace, pod.name, condition),
                attempts=3,
            )
            await with_retries(
                lambda: pods.delete(self._api, pod.namespace, pod.name, pod.uid), attempts=3
            )
        except ApiError as error:
            if error.not_found or error.status == 409:
                return  # gone already (or replaced by a pod of the same name)
            self._metrics.api_writes.labels("eviction", "error").inc()
            log.warning("victim not evicted", pod=pod.key, error=str(error))
            return
        except ApiUnavailable as error:
            self._metrics.api_writes.labels("eviction", "error").inc()
            log.warning("victim not evicted", pod=pod.key, error=str(error))
            return
        self._metrics.api_writes.labels("eviction", "ok").inc()
        log.info("preempted", victim=pod.key, node=eviction.node, preemptor=eviction.preemptor)
        try:
            await events.create_event(
                self._api,
                ObjectRef("Pod", pod.namespace, pod.name, pod.uid),
                type_="Normal",
                reason="Preempted",
                message=f"Preempted by {eviction.preemptor} (trigger pod {eviction.trigger}) "
                f"on node {eviction.node}",
                component=eviction.scheduler or self._scheduler_name,
                action="Preempting",
            )
        except (ApiError, ApiUnavailable) as error:
            log.warning("Preempted event not written", pod=pod.key, error=str(error))
