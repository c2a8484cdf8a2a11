"""A gang's network-topology spec: where its members must (or would rather) be gathered.

Koordinator's ``gang.scheduling.koordinator.sh/network-topology-spec`` is JSON:
``{"gatherStrategy": [{"layer": "SpineLayer", "strategy": "MustGather", "podCountMultiple": 2},
...]}`` (a rule names a ClusterNetworkTopology layer or a node label). It is parsed once, when
the gang's spec is resolved, into a :class:`TopologySpec` that travels with the gang and its
scheduling group; placement plugins never read the JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["GatherRule", "TopologySpec", "gather_rules", "parse_gather_spec"]

_GATHER_STRATEGIES = ("PreferGather", "MustGather")


@dataclass(frozen=True, slots=True)
class GatherRule:
    """One entry of a network-topology spec's ``gatherStrategy``."""

    #: A layer of the ClusterNetworkTopology ("" when the rule names a node label instead).
    layer: str
    strategy: str  # "PreferGather" or "MustGather"
    #: Members per domain of the layer must be a multiple of this.
    pod_count_multiple: int = 1
    #: A node label whose values are the domains (one GPU model per job, say), instead of a
    #: layer.
    label_key: str = ""

    @property
    def must(self) -> bool:
        return self.strategy == "MustGather"


@dataclass(frozen=True, slots=True)
class TopologySpec:
    """A valid network-topology spec: its rules, in order, and the text they came from."""

    rules: tuple[GatherRule, ...]
    #: As the user wrote it.
    text: str = ""


def parse_gather_spec(text: str) -> tuple[TopologySpec | None, str | None]:
    """The spec in ``text``, or (None, what is wrong with it)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None, "is not valid JSON"
    if not isinstance(parsed, dict):
        return None, "is not a JSON object"
    strategies = parsed.get("gatherStrategy")
    if not isinstance(strategies, list):
        return None, "has no gatherStrategy list"
    rules = []
    for index, entry in enumerate(strategies):
        where = f"gatherStrategy[{index}]"
        if not isinstance(entry, dict):
            return None, f"has {where} that is not an object"
        layer = entry.get("layer", "")
        label_key = entry.get("labelKey", "")
        if not isinstance(label_key, str):
            return None, f"has {where}.labelKey that is not a string"
        if not isinstance(layer, str) or (not layer and not label_key):
            return None, f"has {where}.layer that is not a non-empty string (nor a labelKey)"
        if layer and label_key:
            return None, f"has {where} naming both a layer and a labelKey"
        strategy = entry.get("strategy")
        if strategy not in _GATHER_STRATEGIES:
            return None, f"has {where}.strategy that is not PreferGather or MustGather"
        multiple = entry.get("podCountMultiple", 1)
        if type(multiple) is not int or multiple < 1:
            return None, f"has {where}.podCountMultiple that is not a positive integer"
        rules.append(GatherRule(layer, strategy, multiple, label_key))
    return TopologySpec(tuple(rules), text), None


def gather_rules(text: str | None) -> tuple[GatherRule, ...]:
    """The rules of a spec's text; empty for None or an invalid spec."""
    if text is None:
        return ()
    spec, _ = parse_gather_spec(text)
    return spec.rules if spec is not None else ()
