"""The cluster's network topology: the layers a ``ClusterNetworkTopology`` declares, and the
domains the nodes' labels make of them.

A domain is the path of label values from the top layer down (block ``b1`` under spine ``s1``
and block ``b1`` under ``s2`` are two domains). A node missing the label of a layer (or of a
layer above it) belongs to no domain of that layer. The bottom layer without label keys
(``NodeTopologyLayer`` in the seed) is the node itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model import _fields
from koordgang.model.errors import ModelError, show

__all__ = [
    "CLUSTER_LAYER",
    "Domain",
    "Layer",
    "TopologySpec",
    "TopologySpecError",
    "TopologyTree",
    "parse_topology_spec",
]

#: The root of every tree, above the top declared layer.
CLUSTER_LAYER = "ClusterTopologyLayer"
#: The only object the scheduler reads.
DEFAULT_NAME = "default"


class TopologySpecError(ModelError):
    """A ``ClusterNetworkTopology`` spec that cannot be used (a cycle, an unknown parent...)."""


@dataclass(frozen=True, slots=True)
class Layer:
    name: str
    parent: str
    label_keys: tuple[str, ...]

    def value(self, labels: Mapping[str, str]) -> str | None:
        """The node's domain name at this layer: the first of its label keys it has."""
        for key in self.label_keys:
            value = labels.get(key)
            if value is not None:
                return value
        return None


@dataclass(frozen=True, slots=True)
class TopologySpec:
    #: The layers with label keys, from the top down.
    layers: tuple[Layer, ...]
    #: The name of the bottom layer without label keys (the nodes), if declared.
    node_layer: str = ""

    def layer(self, name: str) -> Layer | None:
        """Layer names match case-insensitively (the seed itself writes ``spineLayer``)."""
        wanted = name.lower()
        return next((layer for layer in self.layers if layer.name.lower() == wanted), None)

    def depth(self, name: str) -> int:
        """0 for the top layer; -1 if unknown."""
        wanted = name.lower()
        for index, layer in enumerate(self.layers):
            if layer.name.lower() == wanted:
                return index
        return -1


def parse_topology_spec(obj: Mapping[str, Any]) -> TopologySpec:
    """The layers of a ``ClusterNetworkTopology`` object; raises TopologySpecError naming what
    is wrong (an unknown parent, a cycle, two top layers, a fork in the chain)."""
    spec = _fields.mapping(obj, "spec", "spec")
    entries = _fields.items(spec, "networkTopologySpec", "spec.networkTopologySpec")
    declared: dict[str, Layer] = {}
    for index, raw in enumerate(entries):
        path = f"spec.networkTopologySpec[{index}]"
        if not isinstance(raw, Mapping):
            raise TopologySpecError(f"expected an object, got {show(raw)}", path)
        name = _fields.string(raw, "topologyLayer", f"{path}.topologyLayer")
        if not name:
            raise TopologySpecError("missing", f"{path}.topologyLayer")
        if name in declared:
            raise TopologySpecError(f"layer {name} is declared twice", path)
        keys = _fields.items(raw, "labelKey", f"{path}.labelKey")
        if not all(isinstance(k, str) and k for k in keys):
            raise TopologySpecError(f"expected label keys, got {show(keys)}", f"{path}.labelKey")
        parent = _fields.string(raw, "parentTopologyLayer", f"{path}.parentTopologyLayer")
        declared[name] = Layer(name, parent, tuple(keys))
    if not declared:
        raise TopologySpecError("declares no layer", "spec.networkTopologySpec")
    for layer in declared.values():
        if layer.parent and layer.parent not in declared:
            raise TopologySpecError(
                f"layer {layer.name} names an unknown parent {layer.parent}",
                "spec.networkTopologySpec",
            )
    roots = [layer.name for layer in declared.values() if not layer.parent]
    if len(roots) != 1:
        what = "no top layer (a cycle)" if not roots else f"two top layers ({', '.join(roots)})"
        raise TopologySpecError(f"has {what}", "spec.networkTopologySpec")
    children: dict[str, list[str]] = {}
    for layer in declared.values():
        if layer.parent:
            children.setdefault(layer.parent, []).append(layer.name)
    chain: list[Layer] = []
    current = roots[0]
    while True:
        chain.append(declared[current])
        below = children.get(current, [])
        if len(below) > 1:
            raise TopologySpecError(
                f"layers {', '.join(sorted(below))} share the parent {current}: the layers "
                "must form one chain",
                "spec.networkTopologySpec",
            )
        if not below:
            break
        current = below[0]
    if len(chain) != len(declared):
        missing = sorted(set(declared) - {layer.name for layer in chain})
        raise TopologySpecError(
            f"layers {', '.join(missing)} form a cycle", "spec.networkTopologySpec"
        )
    node_layer = ""
    if not chain[-1].label_keys:
        node_layer = chain.pop().name
    for layer in chain:
        if not layer.label_keys:
            raise TopologySpecError(
                f"layer {layer.name} has no labelKey but is not the bottom layer",
                "spec.networkTopologySpec",
            )
    return TopologySpec(tuple(chain), node_layer)


@dataclass(slots=True)
class Domain:
    """One domain: its layer (index into the spec's layers), its path of names from the top,
    its nodes and its child domains."""

    depth: int
    path: tuple[str, ...]
    nodes: list[str] = field(default_factory=list)
    children: dict[str, Domain] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path[-1] if self.path else ""

    def walk(self) -> Iterable[Domain]:
        """This domain and all below it, depth first, children sorted by name."""
        yield self
        for name in sorted(self.children):
            yield from self.children[name].walk()


class TopologyTree:
    """The domains the nodes make of a spec's layers (the root is the whole cluster)."""

    def __init__(self, spec: TopologySpec, nodes: Iterable[tuple[str, Mapping[str, str]]]) -> None:
        self.spec = spec
        self.root = Domain(-1, ())
        #: node -> its deepest domain's path (shorter when labels are missing).
        self.path_of: dict[str, tuple[str, ...]] = {}
        for name, labels in nodes:
            path: tuple[str, ...] = ()
            for layer in spec.layers:
                value = layer.value(labels)
                if value is None:
                    break
                path = (*path, value)
            self._add(name, path)

    def _add(self, name: str, path: tuple[str, ...]) -> None:
        """Puts a node in the root and in each domain along ``path``, making missing ones."""
        self.root.nodes.append(name)
        current = self.root
        for depth, value in enumerate(path):
            child = current.children.get(value)
            if child is None:
                child = current.children[value] = Domain(depth, path[: depth + 1])
            child.nodes.append(name)
            current = child
        self.path_of[name] = path

    def restricted(self, names: Iterable[str]) -> TopologyTree:
        """The tree of a subset of the nodes (keeping their paths)."""
        keep = set(names)
        tree = TopologyTree(self.spec, ())
        for name in self.root.nodes:
            if name in keep:
                tree._add(name, self.path_of.get(name, ()))
        return tree

    def domains(self, depth: int) -> list[Domain]:
        """The domains of one layer, in depth-first order."""
        return [d for d in self.root.walk() if d.depth == depth]

    def detail_status(self) -> list[dict[str, Any]]:
        """``status.detailStatus``: one entry per domain, the cluster first, depth first."""
        layers = self.spec.layers
        entries: list[dict[str, Any]] = []
        for domain in self.root.walk():
            if domain.depth == -1:
                info = {"topologyLayer": CLUSTER_LAYER, "topologyName": ""}
            else:
                info = {"topologyLayer": layers[domain.depth].name, "topologyName": domain.name}
            entry: dict[str, Any] = {"topologyInfo": info, "nodeNum": len(domain.nodes)}
            if domain.depth >= 0:
                parent_depth = domain.depth - 1
                entry["parentTopologyInfo"] = {
                    "topologyLayer": CLUSTER_LAYER
                    if parent_depth < 0
                    else layers[parent_depth].name,
                    "topologyName": domain.path[-2] if len(domain.path) > 1 else "",
                }
            below = domain.depth + 1
            if below < len(layers):
                entry["childTopologyLayer"] = layers[below].name
                entry["childTopologyNames"] = sorted(domain.children)
            elif self.spec.node_layer:
                entry["childTopologyLayer"] = self.spec.node_layer
            entries.append(entry)
        return entries
