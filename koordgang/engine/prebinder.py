"""Carries out PreBind plans: the writes that must land before a batch of pods binds.

The writes of a batch go out together (each object's patches in order, each guarded by the
object's resourceVersion); the batch may bind only if every one of them landed. Otherwise, or
when the batch is given up later, what landed is undone (each landed patch's undo, last first)
and nothing else: objects this batch did not write are never touched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from koordgang.clients import custom
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable
from koordgang.clients.retry import with_retries
from koordgang.framework.prebind import ObjectWrite, PatchStep, PreBindPlan

log = structlog.get_logger("koordgang.prebind")


@dataclass(slots=True)
class Landed:
    """What one write got done: the patches that landed, and the version the last returned."""

    write: ObjectWrite
    steps: list[PatchStep] = field(default_factory=list)
    version: str = ""
    #: The path of the object the write made ("" when it made none).
    created: str = ""
    #: What the writes that followed the making of the object got done.
    followers: list[Landed] = field(default_factory=list)

    @property
    def target(self) -> str:
        return self.created or self.write.path

    @property
    def anything(self) -> bool:
        return bool(self.steps or self.created or self.followers)


@dataclass(slots=True)
class WriteResult:
    landed: list[Landed]
    #: Why the batch may not bind ("" when every write landed).
    failure: str = ""


class PreBinder:
    def __init__(self, api: KubeApi) -> None:
        self._api = api

    async def write(self, plan: PreBindPlan) -> WriteResult:
        """Every write of ``plan``, concurrently; the first failure is what the pods are told."""
        landed = [Landed(w, version=w.resource_version) for w in plan.writes]
        errors = await asyncio.gather(*(self._write(one) for one in landed))
        failure = next((e for e in errors if e), "")
        return WriteResult([one for one in landed if one.anything], failure)

    async def _write(self, landed: Landed) -> str:
        write = landed.write
        if write.create is not None:
            problem = await self._create(landed, write.create)
            if problem:
                return problem
        for step in write.steps:
            try:
                landed.version = await with_retries(
                    lambda step=step: custom.patch_guarded(  # type: ignore[misc]
                        self._api,
                        landed.target,
                        step.patch,
                        landed.version,
                        subresource=step.subresource,
                    )
                )
            except ApiError as error:
                why = "changed meanwhile" if error.conflict else f"{error.status} {error.reason}"
                log.info(
                    "pre-bind write refused", object=write.label, step=step.what, error=str(error)
                )
                return f"could not {step.what} in {write.label} ({why}): {error.message}"
            except ApiUnavailable as error:
                return f"could not {step.what} in {write.label}: {error}"
            landed.steps.append(step)
        if write.delete:
            problem = await self._delete(landed.target, write.label)
            if problem:
                return problem
        if write.then is not None and landed.created:
            for follower in write.then(landed.created.rpartition("/")[2]):
                one = Landed(follower, version=follower.resource_version)
                landed.followers.append(one)
                problem = await self._write(one)
                if problem:
                    return problem
        return ""

    async def _create(self, landed: Landed, body: Mapping[str, Any]) -> str:
        """Makes the write's object (once: a POST with a generated name is not retried, as
        a retry could make two)."""
        write = landed.write
        try:
            reply = await self._api.request("POST", write.path, body=dict(body))
        except ApiError as error:
            log.info("pre-bind create refused", object=write.label, error=str(error))
            why = f"{error.status} {error.reason}"
            return f"could not create {write.label} ({why}): {error.message}"
        except ApiUnavailable as error:
            return f"could not create {write.label}: {error}"
        meta = reply.get("metadata") if isinstance(reply, dict) else None
        name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
        if not name:
            return f"could not create {write.label}: the API server named no object"
        landed.created = f"{write.path}/{name}"
        landed.version = str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
        return ""

    async def _delete(self, path: str, label: str) -> str:
        try:
            await with_retries(lambda: self._api.request("DELETE", path))
        except ApiError as error:
            if error.status == 404:
                return ""
            return f"could not delete {label} ({error.status} {error.reason}): {error.message}"
        except ApiUnavailable as error:
            return f"could not delete {label}: {error}"
        return ""

    async def undo(self, landed: Sequence[Landed], only_for: Collection[str] | None = None) -> None:
        """Takes back what landed (of the writes needed by ``only_for`` pods alone, if given)."""
        chosen = [
            one
            for one in landed
            if only_for is None or (one.write.pods and set(one.write.pods) <= set(only_for))
        ]
        await asyncio.gather(*(self._undo(one) for one in chosen))

    async def _undo(self, landed: Landed) -> None:
        write = landed.write
        for follower in reversed(landed.followers):
            await self._undo(follower)
        landed.followers.clear()
        for step in reversed(landed.steps):
            if step.undo is None:
                continue
            try:
                landed.version = await with_retries(
                    lambda step=step: custom.patch_guarded(  # type: ignore[misc]
                        self._api,
                        landed.target,
                        step.undo or {},
                        landed.version,
                        subresource=step.subresource,
                    )
                )
            except (ApiError, ApiUnavailable) as error:
                # Left as it is: its consumers' controller (or the next attempt) sees to it;
                # another write of it meanwhile is not ours to overwrite.
                log.warning(
                    "pre-bind write not undone",
                    object=write.label,
                    step=step.what,
                    error=str(error),
                )
                return
        landed.steps.clear()
        if landed.created:
            problem = await self._delete(landed.created, write.label)
            if problem:
                log.warning("pre-bind object not deleted", object=write.label, error=problem)
                return
            landed.created = ""
