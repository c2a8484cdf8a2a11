"""Fake nodes for kwok: a small YAML format, and creating, waiting for and deleting the nodes.

A file looks like:

    nodes:
      - name: cpu-1
        capacity: {cpu: "32", memory: 128Gi}
        labels: {zone: a}
        taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
      - name: gpu-[1-4]            # a numeric range: gpu-1 ... gpu-4; [01-16] pads to 2 digits
        capacity: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}

Every node gets the annotation kwok watches for (`kwok.x-k8s.io/node: fake`), the label
`type: kwok`, `kubernetes.io/hostname`, and status capacity = allocatable, with `pods` and
`ephemeral-storage` filled in when absent. kwok then marks the node Ready and plays kubelet
for pods bound to it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"
DEFAULT_CAPACITY: Mapping[str, str] = {"pods": "110", "ephemeral-storage": "100Gi"}
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_ENTRY_KEYS = {"name", "capacity", "labels", "annotations", "taints"}
_RANGE = re.compile(r"\[(\d+)-(\d+)\]")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class NodeSpecError(ValueError):
    """The nodes file is malformed; the message names the file and the entry."""


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str | None = None

    def to_api(self) -> dict[str, str]:
        taint = {"key": self.key, "effect": self.effect}
        if self.value is not None:
            taint["value"] = self.value
        return taint


@dataclass(frozen=True)
class NodeSpec:
    name: str
    capacity: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()

    def full_capacity(self) -> dict[str, str]:
        return {**DEFAULT_CAPACITY, **self.capacity}

    def to_api(self) -> dict[str, Any]:
        """The Node object to create. Status is set on create, as a kubelet registering does."""
        capacity = self.full_capacity()
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": {
                    "type": "kwok",
                    "kubernetes.io/hostname": self.name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    **self.labels,
                },
                "annotations": {
                    KWOK_NODE_ANNOTATION: KWOK_NODE_ANNOTATION_VALUE,
                    **self.annotations,
                },
            },
            "spec": {"taints": [t.to_api() for t in self.taints]},
            "status": {"capacity": capacity, "allocatable": dict(capacity)},
        }


# ---------------------------------------------------------------------------------------------
# Parsing


def load_node_specs(path: Path | str) -> list[NodeSpec]:
    path = Path(path)
    with path.open() as handle:
        document = yaml.safe_load(handle)
    return parse_node_specs(document, source=str(path))


def parse_node_specs(document: Any, source: str = "<nodes>") -> list[NodeSpec]:
    """Specs from an already-loaded YAML document (`{"nodes": [...]}`); ranges are expanded."""
    if document is None:
        return []
    if not isinstance(document, dict) or set(document) - {"nodes"}:
        raise NodeSpecError(f"{source}: expected a mapping with a single key 'nodes'")
    entries = document.get("nodes") or []
    if not isinstance(entries, list):
        raise NodeSpecError(f"{source}: 'nodes' must be a list")
    specs: list[NodeSpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"{source}: nodes[{index}]"
        for spec in _parse_entry(entry, where):
            if spec.name in seen:
                raise NodeSpecError(f"{where}: node {spec.name!r} is defined twice")
            seen.add(spec.name)
            specs.append(spec)
    return specs


def expand_name_range(pattern: str) -> list[str]:
    """`gpu-[1-3]` -> gpu-1, gpu-2, gpu-3; `n[08-10]` -> n08, n09, n10; no range -> [pattern]."""
    matches = list(_RANGE.finditer(pattern))
    if not matches:
        return [pattern]
    if len(matches) > 1:
        raise NodeSpecError(f"{pattern!r}: at most one [a-b] range per name")
    match = matches[0]
    first, last = match.group(1), match.group(2)
    if int(first) > int(last):
        raise NodeSpecError(f"{pattern!r}: range start is after its end")
    width = len(first) if first.startswith("0") and len(first) > 1 else 0
    prefix, suffix = pattern[: match.start()], pattern[match.end() :]
    return [f"{prefix}{n:0{width}d}{suffix}" for n in range(int(first), int(last) + 1)]


def _parse_entry(entry: Any, where: str) -> list[NodeSpec]:
    if not isinstance(entry, dict):
        raise NodeSpecError(f"{where}: expected a mapping")
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise NodeSpecError(
            f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(_ENTRY_KEYS)}"
        )
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise NodeSpecError(f"{where}: 'name' is required")
    try:
        names = expand_name_range(name)
    except NodeSpecError as error:
        raise NodeSpecError(f"{where}: {error}") from None
    for node_name in names:
        if len(node_name) > 253 or not _DNS_SUBDOMAIN.match(node_name):
            raise NodeSpecError(
                f"{where}: {node_name!r} is not a valid node name "
                "(lower-case letters, digits, '-' and '.')"
            )
    capacity = _string_map(entry.get("capacity"), f"{where}.capacity")
    labels = _string_map(entry.get("labels"), f"{where}.labels")
    annotations = _string_map(entry.get("annotations"), f"{where}.annotations")
    taints = _parse_taints(entry.get("taints"), f"{where}.taints")
    return [
        NodeSpec(name=n, capacity=capacity, labels=labels, annotations=annotations, taints=taints)
        for n in names
    ]


def _string_map(value: Any, where: str) -> dict[str, str]:
    """A mapping of strings; YAML numbers (`cpu: 32`) become their text ("32")."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise NodeSpecError(f"{where}: expected a mapping")
    result: dict[str, str] = {}
    for key, item in value.items():
        # bool is an int subclass; `gpu: yes` is almost certainly a mistake, so refuse it.
        if (
            not isinstance(key, str)
            or isinstance(item, bool)
            or not isinstance(item, str | int | float)
        ):
            raise NodeSpecError(f"{where}: {key!r}: {item!r} is not a string or a number")
        result[key] = str(item)
    return result


def _parse_taints(value: Any, where: str) -> tuple[Taint, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise NodeSpecError(f"{where}: expected a list")
    taints: list[Taint] = []
    for index, raw in enumerate(value):
        here = f"{where}[{index}]"
        if not isinstance(raw, dict) or set(raw) - {"key", "value", "effect"}:
            raise NodeSpecError(f"{here}: expected {{key, value, effect}}")
        key, effect, taint_value = raw.get("key"), raw.get("effect"), raw.get("value")
        if not isinstance(key, str) or not key:
            raise NodeSpecError(f"{here}: 'key' is required")
        if effect not in TAINT_EFFECTS:
            raise NodeSpecError(f"{here}: 'effect' must be one of {', '.join(TAINT_EFFECTS)}")
        if taint_value is not None and not isinstance(taint_value, str):
            raise NodeSpecError(f"{here}: 'value' must be a string")
        taints.append(Taint(key=key, effect=str(effect), value=taint_value))
    return tuple(taints)


# ---------------------------------------------------------------------------------------------
# Talking to the API server. `api` is a kubernetes.client.CoreV1Api.


def create_nodes(api: Any, specs: Iterable[NodeSpec]) -> list[str]:
    """Create the nodes; a node that already exists is updated to match its spec instead.

    On update, labels and annotations are merged into the existing ones; taints, capacity and
    allocatable are replaced. Returns the node names.
    """
    # Imported here so that parsing a nodes file does not pay for loading the client.
    from kubernetes.client.exceptions import ApiException

    names: list[str] = []
    for spec in specs:
        body = spec.to_api()
        try:
            api.create_node(body=body)
        except ApiException as error:
            if error.status != 409:
                raise
            api.patch_node(
                name=spec.name, body={"metadata": body["metadata"], "spec": body["spec"]}
            )
            status = body["status"]
            # `$patch: replace` makes a strategic merge patch replace these maps instead of
            # merging into them, so resources removed from the spec disappear from the node.
            api.patch_node_status(
                name=spec.name,
                body={
                    "status": {
                        "capacity": {"$patch": "replace", **status["capacity"]},
                        "allocatable": {"$patch": "replace", **status["allocatable"]},
                    }
                },
            )
        names.append(spec.name)
    return names


def wait_nodes_ready(api: Any, names: Sequence[str], timeout: float = 60.0) -> None:
    """Block until every named node has condition Ready=True (kwok sets it)."""
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending:
        for node in api.list_node(label_selector="type=kwok").items:
            conditions = (node.status.conditions if node.status else None) or []
            if any(c.type == "Ready" and c.status == "True" for c in conditions):
                pending.discard(node.metadata.name)
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"nodes not Ready after {timeout:.0f} s: {sorted(pending)} "
                "(is kwok running? see its log)"
            )
        time.sleep(0.2)


def delete_nodes(
    api: Any, names: Iterable[str], *, wait: bool = True, timeout: float = 30.0
) -> None:
    """Delete the nodes (missing ones are fine) and, by default, wait until they are gone.

    Pods bound to them are not touched: without kube-controller-manager nothing garbage-collects
    them, and kwok stops finalizing pods of a node it no longer manages, so delete those first.
    """
    from kubernetes.client.exceptions import ApiException

    remaining = list(names)
    for name in remaining:
        try:
            api.delete_node(name=name)
        except ApiException as error:
            if error.status != 404:
                raise
    deadline = time.monotonic() + timeout
    while wait and remaining:
        existing = {n.metadata.name for n in api.list_node().items}
        remaining = [n for n in remaining if n in existing]
        if remaining and time.monotonic() > deadline:
            raise TimeoutError(f"nodes still present after {timeout:.0f} s: {remaining}")
        if remaining:
            time.sleep(0.1)
