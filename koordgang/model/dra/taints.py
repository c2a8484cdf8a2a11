"""Device taints and the tolerations of requests, matched as Kubernetes matches them.

A taint is put on a device by its driver (in the ResourceSlice) or by an admin (a
DeviceTaintRule). ``NoSchedule`` keeps a device from being allocated unless the request
tolerates the taint; ``NoExecute`` does too, and the device-taint eviction controller also
evicts the pods using a device allocated before it was tainted. ``None``, and effects of later
releases, keep nothing away. A toleration matches as a pod's toleration of a node taint does:
an empty effect matches every effect, an empty key (with ``Exists``) every key, ``Exists``
every value, ``Equal`` (the default) the same value.

One departure, on purpose: a ``NoExecute`` taint tolerated only for ``tolerationSeconds``
keeps the device from being allocated here. Kubernetes allocates such a device and then
evicts its pod when the time runs out; a gang placed there would lose members after it was
declared whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model import _fields
from koordgang.model.errors import ModelError

__all__ = [
    "BLOCKING_EFFECTS",
    "DeviceTaint",
    "DeviceToleration",
    "parse_taint",
    "parse_toleration",
    "untolerated",
]

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
#: The effects that keep a device from being allocated.
BLOCKING_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str
    #: ``NoSchedule``, ``NoExecute``, ``None``, or an effect of a later release.
    effect: str
    #: ``timeAdded`` as written (RFC 3339), "" if unset.
    time_added: str = ""
    #: Where it comes from: "" for the device's slice, else the DeviceTaintRule's name.
    rule: str = ""

    @property
    def blocks(self) -> bool:
        return self.effect in BLOCKING_EFFECTS

    def describe(self) -> str:
        """``gpu.example.com/drain=true:NoSchedule`` (and ``by DeviceTaintRule drain``)."""
        text = (
            f"{self.key}={self.value}:{self.effect}"
            if self.value
            else (f"{self.key}:{self.effect}")
        )
        return f"{text} (DeviceTaintRule {self.rule})" if self.rule else text


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str = ""
    #: ``Equal`` (the default) or ``Exists``; any other never matches.
    operator: str = "Equal"
    value: str = ""
    #: "" matches every effect.
    effect: str = ""
    #: How long a ``NoExecute`` taint is tolerated once it is there (None: for ever).
    toleration_seconds: int | None = None
    #: As written, copied into the allocation's results.
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def tolerates(self, taint: DeviceTaint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"

    def keeps(self, taint: DeviceTaint) -> bool:
        """Tolerates ``taint`` for as long as a pod may run: a ``NoExecute`` taint tolerated
        for ``tolerationSeconds`` only is not kept (the pod would be evicted)."""
        if not self.tolerates(taint):
            return False
        return taint.effect != NO_EXECUTE or self.toleration_seconds is None


def untolerated(
    taints: Iterable[DeviceTaint], tolerations: Iterable[DeviceToleration]
) -> DeviceTaint | None:
    """The first taint that keeps a device from a request with these tolerations, if any."""
    tolerations = tuple(tolerations)
    for taint in taints:
        if taint.blocks and not any(t.keeps(taint) for t in tolerations):
            return taint
    return None


def parse_taint(raw: Mapping[str, Any], path: str, rule: str = "") -> DeviceTaint:
    key = _fields.string(raw, "key", f"{path}.key")
    if not key:
        raise ModelError("missing", f"{path}.key")
    effect = _fields.string(raw, "effect", f"{path}.effect")
    if not effect:
        raise ModelError("missing", f"{path}.effect")
    return DeviceTaint(
        key=key,
        value=_fields.string(raw, "value", f"{path}.value"),
        effect=effect,
        time_added=_fields.string(raw, "timeAdded", f"{path}.timeAdded"),
        rule=rule,
    )


def parse_toleration(raw: Any, path: str) -> DeviceToleration:
    entry = _fields.as_mapping(raw, path)
    seconds = entry.get("tolerationSeconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
        raise ModelError("expected an integer", f"{path}.tolerationSeconds")
    return DeviceToleration(
        key=_fields.string(entry, "key", f"{path}.key"),
        operator=_fields.string(entry, "operator", f"{path}.operator") or "Equal",
        value=_fields.string(entry, "value", f"{path}.value"),
        effect=_fields.string(entry, "effect", f"{path}.effect"),
        toleration_seconds=seconds,
        raw=entry,
    )
