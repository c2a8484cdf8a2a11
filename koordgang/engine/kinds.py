"""Every kind the daemon lists and watches with its own informers, declared once.

Each row says where the kind is listed and watched, how an object is read and keyed, which
store keeps it, and what its changes mean for pods waiting for room. The informers and their
feeds (``adapters/feeds.py``), the intake's handling and the set of kinds the first cycle waits
for are all made from this table. Nodes and pods live in the cache, behind the intake's own
stores (their changes move the queue and the plugins); every other kind lives in a store of
its own (``state/stores.py``).

Adding a kind is one row here and its store. The custom resources of the gang APIs and the
network topology are not in this table: plugins declare them (``WatcherPlugin.watches``) and
kopf watches them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from koordgang.model.budgets import parse_budget
from koordgang.model.dra import (
    API_VERSION as DRA_API_VERSION,
)
from koordgang.model.dra import (
    parse_device_class,
    parse_device_taint_rule,
    parse_resource_claim,
    parse_resource_slice,
)
from koordgang.model.job import parse_job
from koordgang.model.namespace import parse_namespace
from koordgang.model.node import parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.model.volumes import parse_claim
from koordgang.state.store import Store
from koordgang.state.stores import Stores

__all__ = ["KINDS", "LISTED_KINDS", "Relevance", "WatchedKind"]

T = TypeVar("T")


class Relevance(enum.Enum):
    """What a change of the kind means for pods parked as unschedulable."""

    #: The kind's store moves the queue and tells the plugins itself (pods, nodes).
    OWN = "own"
    #: Read when asked, never a reason to try pods again (disruption budgets).
    NONE = "none"
    #: A new or changed object may let them fit (a namespace's labels, a bound volume claim,
    #: a device class); a deleted one never does.
    CHANGED = "changed"
    #: Room that grew on a node may let them fit (devices published, freed or untainted).
    ROOM = "room"


@dataclass(frozen=True, slots=True)
class WatchedKind(Generic[T]):
    #: The informer's name, as the log and the listing gate name it.
    name: str
    #: Where it is listed and watched.
    path: str
    #: Reads one object; raises ``ModelError`` naming the field it cannot read.
    parse: Callable[[Mapping[str, Any]], T]
    #: The store's key of an object, from its metadata ("" when it has none): what a deletion
    #: names.
    key: Callable[[Mapping[str, Any]], str]
    #: Where it lives: a store of ``Stores``; None for nodes and pods, which the intake
    #: keeps in the cache itself.
    store: Callable[[Stores], Store[T]] | None
    relevance: Relevance
    #: How the log names one ("resource slice").
    noun: str
    #: A cluster may not serve it (an API group switched off, an older release): it then has
    #: none, and the kind is asked for again now and then.
    optional: bool = False
    #: An object that cannot be read is said loudly (an error, not a warning): devices may be
    #: given twice when a claim's allocation cannot be read.
    loud: bool = False


def _name(meta: Mapping[str, Any]) -> str:
    return str(meta.get("name") or "")


def _namespaced(meta: Mapping[str, Any]) -> str:
    name = meta.get("name")
    return f"{meta.get('namespace') or 'default'}/{name}" if name else ""


def _uid(meta: Mapping[str, Any]) -> str:
    return str(meta.get("uid") or "")


def _pod(obj: Mapping[str, Any]) -> PodInfo:
    return parse_pod(obj)


def _dra(plural: str) -> str:
    return f"/apis/{DRA_API_VERSION}/{plural}"


KINDS: tuple[WatchedKind[Any], ...] = (
    # Nodes first: pods listed after them find the nodes they were nominated to.
    WatchedKind("nodes", "/api/v1/nodes", parse_node, _name, None, Relevance.OWN, "node"),
    WatchedKind("pods", "/api/v1/pods", _pod, _uid, None, Relevance.OWN, "pod"),
    WatchedKind(
        "namespaces",
        "/api/v1/namespaces",
        parse_namespace,
        _name,
        lambda s: s.namespaces,
        Relevance.CHANGED,
        "namespace",
    ),
    WatchedKind(
        "claims",
        "/api/v1/persistentvolumeclaims",
        parse_claim,
        _namespaced,
        lambda s: s.volume_claims,
        Relevance.CHANGED,
        "claim",
    ),
    WatchedKind(
        "budgets",
        "/apis/policy/v1/poddisruptionbudgets",
        parse_budget,
        _namespaced,
        lambda s: s.budgets,
        Relevance.NONE,
        "disruption budget",
    ),
    # A Job's time limit bounds when its pods' room is free again; it makes no pod fit.
    WatchedKind(
        "jobs",
        "/apis/batch/v1/jobs",
        parse_job,
        _namespaced,
        lambda s: s.jobs,
        Relevance.NONE,
        "job",
    ),
    # Dynamic Resource Allocation: a cluster that does not serve it has no devices.
    WatchedKind(
        "resourceslices",
        _dra("resourceslices"),
        parse_resource_slice,
        _name,
        lambda s: s.dra.slice_store,
        Relevance.ROOM,
        "resource slice",
        optional=True,
    ),
    WatchedKind(
        "deviceclasses",
        _dra("deviceclasses"),
        parse_device_class,
        _name,
        lambda s: s.dra.class_store,
        Relevance.CHANGED,
        "device class",
        optional=True,
    ),
    WatchedKind(
        "resourceclaims",
        _dra("resourceclaims"),
        parse_resource_claim,
        _namespaced,
        lambda s: s.dra.claim_store,
        Relevance.ROOM,
        "resource claim",
        optional=True,
        loud=True,
    ),
    WatchedKind(
        "devicetaintrules",
        _dra("devicetaintrules"),
        parse_device_taint_rule,
        _name,
        lambda s: s.dra.taint_rule_store,
        Relevance.ROOM,
        "device taint rule",
        optional=True,
    ),
)

#: What the informers list before the first cycle may run (before that, nodes look emptier
#: than they are, claims look missing).
LISTED_KINDS = frozenset(kind.name for kind in KINDS)
