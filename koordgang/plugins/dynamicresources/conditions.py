"""Binding conditions (DRADeviceBindingConditions): a device whose driver must prepare it
(attach it over the fabric, say) before its pods may bind. The allocation names the
conditions; after it is written, PreBind waits, off the scheduling loop, for the claim's
``status.devices`` entry of each such device to have every binding condition True (bind), or
any failure condition True, or the timeout to pass (give the batch back: the engine undoes
its writes and the pods are tried again). The wait is woken by the claim informer's updates;
the API is never polled."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from koordgang.framework.prebind import WaitOutcome
from koordgang.framework.report import Report
from koordgang.model.dra import AllocatedDevice, ClaimAllocation
from koordgang.model.pod import PodInfo
from koordgang.plugins.dynamicresources.writes import claim_path
from koordgang.state.dra import DraManager

__all__ = ["BindingConditions", "awaited"]

#: Real seconds between looks at the clock while nothing changes (a timeout is noticed then).
_TICK = 0.5


def _pending_report(pod: PodInfo, message: str) -> Report:
    """The pod's PodScheduled condition (and an Event) saying what its binding awaits;
    written although the pod is assumed (it is not bound yet)."""
    return Report.for_pod(
        pod,
        "Normal",
        "BindingConditionsPending",
        message,
        condition=("False", "BindingConditionsPending"),
        always=True,
    )


def awaited(allocations: Mapping[str, ClaimAllocation]) -> dict[str, tuple[AllocatedDevice, ...]]:
    """Claim key -> its allocated devices that carry binding conditions (claims without
    such devices left out)."""
    found: dict[str, tuple[AllocatedDevice, ...]] = {}
    for key, allocation in allocations.items():
        devices = tuple(d for d in allocation.devices if d.binding_conditions)
        if devices:
            found[key] = devices
    return found


@dataclass(slots=True)
class BindingConditions:
    """One batch's wait (a ``PreBindWait``)."""

    dra: DraManager
    devices: Mapping[str, tuple[AllocatedDevice, ...]]
    pods: Sequence[PodInfo]
    clock: Callable[[], float]
    timeout: float
    report: Callable[[Report], None]

    async def __call__(self) -> WaitOutcome:
        wake = asyncio.Event()
        unwatch = [self.dra.watch_claim(key, wake.set) for key in self.devices]
        deadline = self.clock() + self.timeout
        told = ""
        try:
            while True:
                failure, pending = self._state()
                if failure:
                    return WaitOutcome(failure, self._versions())
                if not pending:
                    return WaitOutcome()
                if self.clock() >= deadline:
                    why = (
                        f"binding conditions not met within {self.timeout:g}s: {pending}; "
                        "devices given back"
                    )
                    return WaitOutcome(why, self._versions())
                if pending != told:
                    told = pending
                    for pod in self.pods:
                        self.report(_pending_report(pod, pending))
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), _TICK)
        finally:
            for stop in unwatch:
                stop()

    def _state(self) -> tuple[str, str]:
        """Why the batch is given back ("" if not), and what it still waits for ("" for
        nothing)."""
        for key, devices in self.devices.items():
            claim = self.dra.claim(key)
            if claim is None or self.dra.allocation(key) is None:
                return f"resourceclaim {key} lost its allocation before its devices bound", ""
            for device in devices:
                true = claim.device_conditions.get(device.id, frozenset())
                failed = [c for c in device.binding_failure_conditions if c in true]
                if failed:
                    return (
                        f"binding failure condition {failed[0]} of device {device.id} in "
                        f"resourceclaim {key} is True; devices given back",
                        "",
                    )
        for key, devices in self.devices.items():
            claim = self.dra.claim(key)
            assert claim is not None
            for device in devices:
                true = claim.device_conditions.get(device.id, frozenset())
                missing = [c for c in device.binding_conditions if c not in true]
                if missing:
                    return "", (
                        f"waiting for binding condition {missing[0]} of device {device.id} "
                        f"in resourceclaim {key}"
                    )
        return "", ""

    def _versions(self) -> dict[str, str]:
        """The versions of the claims whose devices' status the driver wrote, for the undo."""
        versions: dict[str, str] = {}
        for key in self.devices:
            claim = self.dra.claim(key)
            if claim is not None and claim.device_conditions:
                versions[claim_path(claim.namespace, claim.name)] = claim.resource_version
        return versions
