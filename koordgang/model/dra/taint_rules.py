"""DeviceTaintRules (``resource.k8s.io/v1``): an admin taints every device a selector names,
as if its driver had put the taint in the device's ResourceSlice."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.model import _fields
from koordgang.model.dra.base import DeviceId
from koordgang.model.dra.taints import DeviceTaint, parse_taint
from koordgang.model.errors import ModelError

__all__ = ["DeviceTaintRuleInfo", "parse_device_taint_rule"]


@dataclass(frozen=True, slots=True)
class DeviceTaintRuleInfo:
    name: str
    resource_version: str
    #: The selector: each field set narrows it (driver, pool, device name); none set selects
    #: every device.
    driver: str
    pool: str
    device: str
    taint: DeviceTaint

    @property
    def key(self) -> str:
        return self.name

    def selects(self, device: DeviceId) -> bool:
        return (
            (not self.driver or self.driver == device.driver)
            and (not self.pool or self.pool == device.pool)
            and (not self.device or self.device == device.device)
        )


def parse_device_taint_rule(obj: Mapping[str, Any]) -> DeviceTaintRuleInfo:
    """Raises ModelError naming the field when the object is malformed."""
    metadata = _fields.mapping(obj, "metadata", "metadata")
    spec = _fields.mapping(obj, "spec", "spec")
    name = _fields.string(metadata, "name", "metadata.name")
    if not name:
        raise ModelError("missing", "metadata.name")
    selector = _fields.mapping(spec, "deviceSelector", "spec.deviceSelector")
    taint = parse_taint(_fields.mapping(spec, "taint", "spec.taint"), "spec.taint", rule=name)
    return DeviceTaintRuleInfo(
        name=name,
        resource_version=_fields.string(metadata, "resourceVersion", "metadata.resourceVersion"),
        driver=_fields.string(selector, "driver", "spec.deviceSelector.driver"),
        pool=_fields.string(selector, "pool", "spec.deviceSelector.pool"),
        device=_fields.string(selector, "device", "spec.deviceSelector.device"),
        taint=taint,
    )
