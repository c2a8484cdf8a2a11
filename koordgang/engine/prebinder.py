"""Carries out PreBind plans: the writes that must land before a batch of pods binds.

The writes of a batch go out together (each object's patches in order, each guarded by the
object's resourceVersion); the batch may bind only if every one of them landed. Otherwise, or
when the batch is given up later, what landed is undone (each landed patch's undo, last first)
and nothing else: objects this batch did not write are never touched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

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
        return WriteResult([one for one in landed if one.steps], failure)

    async def _write(self, landed: Landed) -> str:
        write = landed.write
        for step in write.steps:
            try:
                landed.version = await with_retries(
                    lambda step=step: custom.patch_guarded(  # type: ignore[misc]
                        self._api,
                        write.path,
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
        for step in reversed(landed.steps):
            if step.undo is None:
                continue
            try:
                landed.version = await with_retries(
                    lambda step=step: custom.patch_guarded(  # type: ignore[misc]
                        self._api,
                        write.path,
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
