"""What the scheduler needs of a pod, parsed once from the API server's JSON."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from koordgang.model import _fields
from koordgang.model.affinity import (
    NodeSelector,
    PreferredSchedulingTerm,
    parse_node_selector,
    parse_preferred_terms,
)
from koordgang.model.dra import PodClaimRef, parse_pod_claims
from koordgang.model.dra.extended import ContainerRequests, container_requests, may_be_extended
from koordgang.model.errors import ModelError, show
from koordgang.model.gang_keys import POD_ANNOTATION_KEYS
from koordgang.model.pod_affinity import PodAffinity, parse_pod_affinity
from koordgang.model.ports import HostPort, host_ports, ports_conflict
from koordgang.model.resources import CPU, MEMORY, Resources, parse_amounts
from koordgang.model.spread import TopologySpreadConstraint, parse_spread_constraints
from koordgang.model.taints import Toleration, parse_tolerations
from koordgang.model.time_limits import DEFAULT_GRACE_SECONDS, parse_time_limit

__all__ = [
    "DEFAULT_PREEMPTION_POLICY",
    "DEFAULT_SCHEDULER_NAME",
    "HostPort",
    "PodInfo",
    "PodParseError",
    "PodShape",
    "host_ports",
    "parse_pod",
    "pod_requests",
    "ports_conflict",
]

DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"
PHASE_PENDING = "Pending"
PHASE_SUCCEEDED = "Succeeded"
PHASE_FAILED = "Failed"
_TERMINAL_PHASES = frozenset((PHASE_SUCCEEDED, PHASE_FAILED))
#: The reason a kubelet's admission gives, besides ``OutOf<resource>``, when something other than
#: room refuses the pod (a device manager, say).
_ADMISSION_REASONS = frozenset(("UnexpectedAdmissionError",))

_HUGEPAGES_PREFIX = "hugepages-"
_NODE_AFFINITY_PATH = "spec.affinity.nodeAffinity"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

_T = TypeVar("_T")


class PodParseError(ModelError):
    """A pod the scheduler cannot read; ``str()`` is one line naming the field and the value,
    fit to be shown on the pod."""


@dataclass(frozen=True, slots=True)
class PodShape:
    """Everything a pod's static filter verdicts depend on, hashable with a cached hash, so
    pods of one shape (the replicas of a job) can share per-node results.

    Host ports and preferred node affinity are in it because they too decide a node's verdict
    or score on their own; labels, pod affinity and spread constraints are not, since what
    they decide depends on the other pods. Nor are ResourceClaims: what a claim asks for is in
    the claim, not the pod, and the plugin that reads it keys its verdicts by that
    (``SHAPE_DETAIL``), so that pods with claims of equal specs share them.
    """

    requests: Resources
    node_selector: tuple[tuple[str, str], ...]
    required_affinity: NodeSelector | None
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...] = ()
    preferred_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "_hash",
            hash(
                (
                    self.requests,
                    self.node_selector,
                    self.required_affinity,
                    self.tolerations,
                    self.host_ports,
                    self.preferred_affinity,
                )
            ),
        )

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True, slots=True, kw_only=True)
class PodInfo:
    """A pod as the scheduler sees it.

    ``requests`` is what the pod occupies on a node (containers, init containers, sidecars,
    pod-level resources and overhead combined as Kubernetes does), without the pod itself
    counting against the node's ``pods`` allocatable. ``key`` and ``shape`` are derived from
    the other fields, so ``dataclasses.replace`` keeps them right. The constraints most pods
    lack default to shared empty values, so a plain pod costs nothing for them.
    """

    name: str
    namespace: str = "default"
    uid: str = ""
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    node_name: str = ""
    nominated_node_name: str = ""
    phase: str = PHASE_PENDING
    priority: int = 0
    preemption_policy: str = DEFAULT_PREEMPTION_POLICY
    creation_timestamp: float = 0.0
    deletion_timestamp: float | None = None
    resource_version: str = ""
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    annotations: Mapping[str, str] = field(default_factory=dict, hash=False)
    requests: Resources = Resources.EMPTY
    node_selector: Mapping[str, str] = field(default_factory=dict, hash=False)
    required_affinity: NodeSelector | None = None
    tolerations: tuple[Toleration, ...] = ()
    preferred_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    #: Inter-pod (anti-)affinity, with matchLabelKeys already resolved; None when it has none.
    pod_affinity: PodAffinity | None = None
    spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    #: Names of ``spec.schedulingGates``: the pod is not to be scheduled while any remain.
    scheduling_gates: tuple[str, ...] = ()
    #: The PersistentVolumeClaims the pod mounts, generic ephemeral volumes' ones included.
    pvc_names: tuple[str, ...] = ()
    #: ``spec.resourceClaims``: the ResourceClaims (devices) the pod asks for.
    resource_claims: tuple[PodClaimRef, ...] = ()
    #: ``status.resourceClaimStatuses``: for a claim made from a template, the name of the
    #: claim made for this pod ("" where none was needed).
    claim_statuses: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: (status, reason, message) of the PodScheduled condition, None when there is none.
    conditions_pod_scheduled: tuple[str, str, str] | None = None
    #: ``namespace/name`` of the controller that owns the pod (its job), "" if none.
    owner: str = ""
    #: That owner's kind (``Job``, ``ReplicaSet``, ``DaemonSet``...), "" if none.
    owner_kind: str = ""
    #: A mirror pod: the API server's copy of a kubelet's static pod.
    mirror: bool = False
    #: ``spec.schedulingGroup.podGroupName``: the upstream (``scheduling.k8s.io``) PodGroup
    #: the pod belongs to, "" if none.
    scheduling_group: str = ""
    #: ``status.reason`` of a pod that failed (``OutOfcpu`` when the kubelet refused it), ""
    #: for every other pod.
    failure_reason: str = ""
    #: ``status.startTime``: when the kubelet accepted the pod (None before).
    start_time: float | None = None
    #: Its time limit (None: none) and grace period: see ``model/time_limits.py``.
    active_deadline_seconds: int | None = None
    grace_seconds: int = DEFAULT_GRACE_SECONDS
    #: The job a scheduler's preemption marked this pod a victim for (its ``DisruptionTarget``
    #: condition, reason PreemptionByScheduler, names the preemptor), "" if none: a scheduler
    #: that restarted between the mark and the delete picks the same victims again.
    preempted_by: str = ""
    #: The containers that ask for a resource that may be extended (which a DeviceClass may
    #: provide through DRA), for the claim the scheduler makes for them; () for most pods.
    extended_containers: tuple[ContainerRequests, ...] = ()
    key: str = field(init=False)
    #: ``shape``, made when first asked for: only pods being placed need one, and most pods
    #: a scheduler holds are bound (at 100,000 of them it was a tenth of the parse).
    _shape: PodShape | None = field(init=False, default=None, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")

    @property
    def shape(self) -> PodShape:
        shape = self._shape
        if shape is None:
            shape = PodShape(
                self.requests,
                tuple(sorted(self.node_selector.items())),
                self.required_affinity,
                self.tolerations,
                self.host_ports,
                self.preferred_affinity,
            )
            object.__setattr__(self, "_shape", shape)
        return shape

    @property
    def is_terminal(self) -> bool:
        return self.phase in _TERMINAL_PHASES

    @property
    def admission_refusal(self) -> str:
        """The reason a kubelet refused the pod at admission (``OutOfcpu``,
        ``UnexpectedAdmissionError``...), "" if it did not: a pod it refuses fails before
        any container runs, with the reason in ``status.reason``."""
        reason = self.failure_reason
        if self.phase != PHASE_FAILED or not reason:
            return ""
        if reason.startswith("OutOf") or reason in _ADMISSION_REASONS:
            return reason
        return ""

    @property
    def is_terminating(self) -> bool:
        return self.deletion_timestamp is not None


def _add(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _raise_to(peak: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        if name not in peak or amount > peak[name]:
            peak[name] = amount


def _container_requests(container: Any) -> dict[str, int]:
    """Raises :class:`ModelError` with a path relative to the container (paths are built only
    for an error: this runs for every container of every pod event)."""
    if type(container) is not dict and not isinstance(container, Mapping):
        raise ModelError(f"expected an object, got {show(container)}")
    resources = _fields.mapping(container, "resources", "resources")
    if not resources:
        return {}
    requests = _resource_list(resources, "requests", "resources.requests")
    # API defaulting: a resource given only a limit requests that limit. Presence, not value,
    # decides, so an explicit zero request stays zero.
    if resources.get("limits") is not None:
        for name, amount in _resource_list(resources, "limits", "resources.limits").items():
            requests.setdefault(name, amount)
    return requests


def _resource_list(parent: Mapping[str, Any], key: str, path: str) -> dict[str, int]:
    raw = parent.get(key)
    if raw is None:
        return {}
    try:
        return parse_amounts(raw)
    except ModelError as err:
        raise err.at(path) from None


def _is_pod_level_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith(_HUGEPAGES_PREFIX)


def pod_requests(spec: Mapping[str, Any]) -> Resources:
    """What a pod with this ``spec`` occupies on a node, computed as kube-scheduler does.

    Regular containers run together, so they add up; init containers and sidecars count as
    ``_add_init_containers`` says. Supported pod-level requests (``spec.resources``) then
    replace the containers' figure and ``spec.overhead`` comes on top. Raises
    :class:`ModelError` with a path under ``spec``.
    """
    total: dict[str, int] = {}
    for index, container in enumerate(_fields.items(spec, "containers", "spec.containers")):
        try:
            _add(total, _container_requests(container))
        except ModelError as err:
            raise err.at(f"spec.containers[{index}]") from None

    if spec.get("initContainers") is not None:
        _add_init_containers(total, spec)

    pod_level = _fields.mapping(spec, "resources", "spec.resources")
    if pod_level:
        pod_reqs = _resource_list(pod_level, "requests", "spec.resources.requests")
        pod_limits = _resource_list(pod_level, "limits", "spec.resources.limits")
        # API defaulting: a pod-level limit stands in for a missing pod-level request only
        # where no container says anything about that resource.
        for name, amount in pod_limits.items():
            if name not in pod_reqs and name not in total:
                pod_reqs[name] = amount
        for name, amount in pod_reqs.items():
            if _is_pod_level_resource(name):
                total[name] = amount

    if spec.get("overhead") is not None:
        _add(total, _resource_list(spec, "overhead", "spec.overhead"))
    return Resources._wrap({name: amount for name, amount in total.items() if amount})


def _add_init_containers(total: dict[str, int], spec: Mapping[str, Any]) -> None:
    """Init containers run one at a time before the regular ones, so each only raises the
    floor, except sidecars (``restartPolicy: Always``), which keep running: they add to the
    total and to every init container started after them."""
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    init_containers = _fields.items(spec, "initContainers", "spec.initContainers")
    for index, container in enumerate(init_containers):
        path = f"spec.initContainers[{index}]"
        try:
            requests = _container_requests(container)
        except ModelError as err:
            raise err.at(path) from None
        if _fields.string(container, "restartPolicy", f"{path}.restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            _raise_to(init_peak, sidecars)
        else:
            while_running = dict(sidecars)
            _add(while_running, requests)
            _raise_to(init_peak, while_running)
    _raise_to(total, init_peak)


#: How a preemption's DisruptionTarget message names the job it evicts for (the message
#: kube-scheduler and Koordinator write: ``... preemptor: <ns>/<job>, triggerpod: ...``).
_PREEMPTOR = re.compile(r"preemptor: ([^,\s]+)")


def _conditions(status: Mapping[str, Any]) -> tuple[tuple[str, str, str] | None, str]:
    """The PodScheduled condition as (status, reason, message), None when there is none; and
    the job a scheduler's preemption marked the pod a victim for ("" if none), from a true
    DisruptionTarget condition with reason PreemptionByScheduler. One pass: a running pod
    has four or five conditions, and every pod event reads them."""
    scheduled: tuple[str, str, str] | None = None
    preempted_by = ""
    for index, condition in enumerate(_fields.items(status, "conditions", "status.conditions")):
        if type(condition) is not dict and not isinstance(condition, Mapping):
            path = f"status.conditions[{index}]"
            raise ModelError(f"expected an object, got {show(condition)}", path)
        kind = condition.get("type")
        if kind == "PodScheduled":
            if scheduled is None:
                path = f"status.conditions[{index}]"
                scheduled = (
                    _fields.string(condition, "status", f"{path}.status"),
                    _fields.string(condition, "reason", f"{path}.reason"),
                    _fields.string(condition, "message", f"{path}.message"),
                )
        elif (
            kind == "DisruptionTarget"
            and not preempted_by
            and condition.get("status") == "True"
            and condition.get("reason") == "PreemptionByScheduler"
        ):
            found = _PREEMPTOR.search(str(condition.get("message") or ""))
            preempted_by = found.group(1) if found else ""
    return scheduled, preempted_by


def _node_affinity(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    affinity = _fields.mapping(spec, "affinity", "spec.affinity")
    return _fields.mapping(affinity, "nodeAffinity", _NODE_AFFINITY_PATH)


def _required_affinity(node_affinity: Mapping[str, Any]) -> NodeSelector | None:
    raw = node_affinity.get(_REQUIRED)
    if raw is None:
        return None
    try:
        return parse_node_selector(raw)
    except ModelError as err:
        raise err.at(f"{_NODE_AFFINITY_PATH}.{_REQUIRED}") from None


def _preferred_affinity(node_affinity: Mapping[str, Any]) -> tuple[PreferredSchedulingTerm, ...]:
    raw = node_affinity.get(_PREFERRED)
    if raw is None:
        return ()
    try:
        return parse_preferred_terms(raw)
    except ModelError as err:
        raise err.at(f"{_NODE_AFFINITY_PATH}.{_PREFERRED}") from None


def _scheduling_gates(spec: Mapping[str, Any]) -> tuple[str, ...]:
    gates = _fields.items(spec, "schedulingGates", "spec.schedulingGates")
    if not gates:
        return ()
    names = []
    for index, gate in enumerate(gates):
        path = f"spec.schedulingGates[{index}]"
        if type(gate) is not dict and not isinstance(gate, Mapping):
            raise ModelError(f"expected an object, got {show(gate)}", path)
        name = _fields.string(gate, "name", f"{path}.name")
        if not name:
            raise ModelError("missing", f"{path}.name")
        names.append(name)
    return tuple(names)


def _pvc_names(spec: Mapping[str, Any], pod_name: str) -> tuple[str, ...]:
    """Claims of ``persistentVolumeClaim`` volumes, and of ``ephemeral`` ones, whose claim the
    ephemeral volume controller names ``<pod name>-<volume name>``."""
    names: list[str] = []
    for index, volume in enumerate(_fields.items(spec, "volumes", "spec.volumes")):
        path = f"spec.volumes[{index}]"
        if type(volume) is not dict and not isinstance(volume, Mapping):
            raise ModelError(f"expected an object, got {show(volume)}", path)
        if volume.get("persistentVolumeClaim") is not None:
            claim_path = f"{path}.persistentVolumeClaim"
            claim = _fields.mapping(volume, "persistentVolumeClaim", claim_path)
            name = _fields.string(claim, "claimName", f"{claim_path}.claimName")
            if not name:
                raise ModelError("missing", f"{claim_path}.claimName")
        elif volume.get("ephemeral") is not None:
            _fields.mapping(volume, "ephemeral", f"{path}.ephemeral")
            volume_name = _fields.string(volume, "name", f"{path}.name")
            if not volume_name:
                raise ModelError("missing", f"{path}.name")
            name = f"{pod_name}-{volume_name}"
        else:
            continue
        # Two volumes may mount one claim; it is still one claim to bind.
        if name not in names:
            names.append(name)
    return tuple(names)


def _tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    try:
        return parse_tolerations(spec.get("tolerations"))
    except ModelError as err:
        raise err.at("spec.tolerations") from None


def parse_pod(obj: Mapping[str, Any]) -> PodInfo:
    """A pod object as the API server returns it, as a :class:`PodInfo`.

    Only the annotations some gang API reads are kept (:data:`gang_keys.POD_ANNOTATION_KEYS`:
    a scheduler holding 20,000 pods need not hold every ``last-applied-configuration``).
    Strings that repeat across pods (namespace, node, phase) and identical request vectors are
    shared, for the same reason.

    Raises :class:`PodParseError` naming the field and its value when something the scheduler
    relies on is malformed (a quantity, an affinity term, a spread constraint, a host port, a
    toleration, a timestamp).
    """
    try:
        if type(obj) is not dict and not isinstance(obj, Mapping):
            raise ModelError("a pod must be a JSON object")
        metadata = _fields.mapping(obj, "metadata", "metadata")
        spec = _fields.mapping(obj, "spec", "spec")
        status = _fields.mapping(obj, "status", "status")
        name = _fields.string(metadata, "name", "metadata.name")
        if not name:
            raise ModelError("missing", "metadata.name")
        labels = _fields.string_map(metadata, "labels", "metadata.labels") or _EMPTY
        node_affinity = _node_affinity(spec)
        owner, owner_kind = _owner(metadata)
        node_name = sys.intern(_fields.string(spec, "nodeName", "spec.nodeName"))
        pod_scheduled, preempted_by = _conditions(status)
        resource_claims, claim_statuses = (
            parse_pod_claims(spec, status) if spec.get("resourceClaims") else ((), _EMPTY)
        )
        requests = _shared(pod_requests(spec))
        deadline, grace = parse_time_limit(spec)
        extended = (
            container_requests(spec, _container_requests)
            if not node_name and any(may_be_extended(n) for n in requests.names())
            else ()
        )
        return PodInfo(
            name=name,
            namespace=sys.intern(
                _fields.string(metadata, "namespace", "metadata.namespace") or "default"
            ),
            uid=_fields.string(metadata, "uid", "metadata.uid"),
            scheduler_name=sys.intern(
                _fields.string(spec, "schedulerName", "spec.schedulerName")
                or DEFAULT_SCHEDULER_NAME
            ),
            node_name=node_name,
            nominated_node_name=_fields.string(
                status, "nominatedNodeName", "status.nominatedNodeName"
            ),
            phase=(
                phase := sys.intern(
                    _fields.string(status, "phase", "status.phase") or PHASE_PENDING
                )
            ),
            failure_reason=(
                _fields.string(status, "reason", "status.reason") if phase == PHASE_FAILED else ""
            ),
            priority=_fields.integer(spec, "priority", "spec.priority"),
            preemption_policy=_fields.string(spec, "preemptionPolicy", "spec.preemptionPolicy")
            or DEFAULT_PREEMPTION_POLICY,
            creation_timestamp=_fields.timestamp(
                metadata, "creationTimestamp", "metadata.creationTimestamp"
            )
            or 0.0,
            deletion_timestamp=_fields.timestamp(
                metadata, "deletionTimestamp", "metadata.deletionTimestamp"
            ),
            resource_version=_fields.string(
                metadata, "resourceVersion", "metadata.resourceVersion"
            ),
            labels=labels,
            annotations=_annotations(metadata),
            requests=requests,
            node_selector=_fields.string_map(spec, "nodeSelector", "spec.nodeSelector"),
            required_affinity=_required_affinity(node_affinity),
            # Only a pod still to be placed is matched against taints; a bound pod stays
            # bound, and at 100,000 pods its tolerations were a fifth of the parse.
            tolerations=() if node_name else _tolerations(spec),
            preferred_affinity=_share(_SHARED_PREFERENCES, _preferred_affinity(node_affinity)),
            pod_affinity=_share(_SHARED_POD_AFFINITIES, parse_pod_affinity(spec, labels)),
            spread_constraints=_share(_SHARED_SPREADS, parse_spread_constraints(spec, labels)),
            host_ports=_share(_SHARED_HOST_PORTS, host_ports(spec)),
            scheduling_gates=_scheduling_gates(spec),
            pvc_names=_pvc_names(spec, name),
            resource_claims=resource_claims,
            claim_statuses=claim_statuses,
            conditions_pod_scheduled=pod_scheduled,
            owner=owner,
            owner_kind=owner_kind,
            mirror=_MIRROR_ANNOTATION
            in _fields.mapping(metadata, "annotations", "metadata.annotations"),
            start_time=_fields.timestamp(status, "startTime", "status.startTime"),
            active_deadline_seconds=deadline,
            grace_seconds=grace,
            scheduling_group=_scheduling_group(spec),
            preempted_by=preempted_by,
            extended_containers=extended,
        )
    except PodParseError:
        raise
    except ModelError as err:
        raise PodParseError(err.detail, err.path) from err


def _scheduling_group(spec: Mapping[str, Any]) -> str:
    group = _fields.mapping(spec, "schedulingGroup", "spec.schedulingGroup")
    return _fields.string(group, "podGroupName", "spec.schedulingGroup.podGroupName").strip()


def _owner(metadata: Mapping[str, Any]) -> tuple[str, str]:
    """The controlling owner (a Job, say) as (``namespace/name``, kind); the first owner
    otherwise."""
    owners = metadata.get("ownerReferences")
    if not isinstance(owners, list) or not owners:
        return "", ""
    chosen = next(
        (o for o in owners if isinstance(o, Mapping) and o.get("controller") is True), owners[0]
    )
    if not isinstance(chosen, Mapping) or not chosen.get("name"):
        return "", ""
    namespace = metadata.get("namespace") or "default"
    kind = chosen.get("kind")
    return f"{namespace}/{chosen['name']}", kind if isinstance(kind, str) else ""


_EMPTY: Mapping[str, str] = MappingProxyType({})
#: Set by the API server on the copy of a static pod that a kubelet runs.
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_SHARED_LIMIT = 10_000
_SHARED_REQUESTS: dict[Resources, Resources] = {}
_SHARED_PREFERENCES: dict[Any, Any] = {}
_SHARED_POD_AFFINITIES: dict[Any, Any] = {}
_SHARED_SPREADS: dict[Any, Any] = {}
_SHARED_HOST_PORTS: dict[Any, Any] = {}


def _annotations(metadata: Mapping[str, Any]) -> Mapping[str, str]:
    if not metadata.get("annotations"):
        return _EMPTY
    annotations = _fields.string_map(metadata, "annotations", "metadata.annotations")
    kept = {k: v for k, v in annotations.items() if k.startswith(POD_ANNOTATION_KEYS)}
    return kept or _EMPTY


def _shared(requests: Resources) -> Resources:
    """One object per distinct request vector (pods of one job all ask for the same)."""
    shared = _SHARED_REQUESTS.get(requests)
    if shared is not None:
        return shared
    if len(_SHARED_REQUESTS) > _SHARED_LIMIT:
        _SHARED_REQUESTS.clear()
    _SHARED_REQUESTS[requests] = requests
    return requests


def _share(cache: dict[Any, Any], value: _T) -> _T:
    """One object per distinct constraint across pods (the replicas of a job carry the same
    affinity, spread and ports); None and empty tuples are shared already."""
    if not value:
        return value
    shared: _T | None = cache.get(value)
    if shared is not None:
        return shared
    if len(cache) > _SHARED_LIMIT:
        cache.clear()
    cache[value] = value
    return value
