"""Builders of the objects tests feed the scheduler: keyword-argument functions, one module
per kind of object. ``<kind>_json`` is the object as the API server returns it, ``<kind>`` the
same object as its informer parses it; every keyword has a plain default."""

from koordgang.testing.builders.dra import (
    DRIVER,
    device_class,
    device_class_json,
    device_taint_rule,
    device_taint_rule_json,
    resource_claim,
    resource_claim_json,
    resource_slice,
    resource_slice_json,
)
from koordgang.testing.builders.gangs import (
    DEFAULT_WAIT,
    T0,
    gang,
    gang_annotations,
    gang_of,
    koordinator_only,
    member,
    podgroup,
    podgroup_json,
    registry,
    stamp,
)
from koordgang.testing.builders.nodes import GPU, cache_of, cluster, node, node_json
from koordgang.testing.builders.pods import (
    NS,
    SCHEDULER,
    bound,
    parse,
    pod,
    pod_json,
    uid_of,
)

__all__ = [
    "DEFAULT_WAIT",
    "DRIVER",
    "GPU",
    "NS",
    "SCHEDULER",
    "T0",
    "bound",
    "cache_of",
    "cluster",
    "device_class",
    "device_class_json",
    "device_taint_rule",
    "device_taint_rule_json",
    "gang",
    "gang_annotations",
    "gang_of",
    "koordinator_only",
    "member",
    "node",
    "node_json",
    "parse",
    "pod",
    "pod_json",
    "podgroup",
    "podgroup_json",
    "registry",
    "resource_claim",
    "resource_claim_json",
    "resource_slice",
    "resource_slice_json",
    "stamp",
    "uid_of",
]
