"""Gang helpers for e2e tests: declaring gangs (PodGroup, lightweight labels, annotations),
reading what users see about them, and the no-partial-gang invariant.

A test declares a gang with :class:`Gang` and creates it through a :class:`GangBook` (the
``gang_book`` fixture of e2e/conftest.py), which remembers every namespace, PodGroup and gang
of the scenario. After the scenario the book
checks, in every namespace it knows:

- the common invariants (no node over-committed, no kopf marks, every pending pod explained);
- :func:`assert_no_partial_gangs`: no gang bound below its minimum unless it was satisfied once,
  no gang of a GangGroup bound while a partner is short, no timed-out member bound;

then deletes the pods and PodGroups it created.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kubernetes.client.exceptions import ApiException

from controlplane.releases import selected_release
from harness.invariants import assert_invariants, unexplained_pending
from harness.kube import (
    SCHEDULER,
    Cluster,
    json_object,
    pod_body,
    scheduled_condition,
    unique,
    wait_until,
)

# -- the vocabulary ---------------------------------------------------------------------------

#: PodGroup API.
PG_GROUP = "scheduling.sigs.k8s.io"
PG_VERSION = "v1alpha1"
PG_PLURAL = "podgroups"

#: Way 1: the pod points at a PodGroup object.
POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
#: Way 2: the community's lightweight labels.
LITE_NAME = "pod-group.scheduling.sigs.k8s.io/name"
LITE_MIN = "pod-group.scheduling.sigs.k8s.io/min-available"
#: Way 3 and the optional keys: koordinator's annotations.
PREFIX = "gang.scheduling.koordinator.sh/"
NAME = PREFIX + "name"
MIN_AVAILABLE = PREFIX + "min-available"
WAITING_TIME = PREFIX + "waiting-time"
TOTAL_NUMBER = PREFIX + "total-number"
MODE = PREFIX + "mode"
GROUPS = PREFIX + "groups"
MATCH_POLICY = PREFIX + "match-policy"
#: Written by the scheduler on every member of a gang whose waiting time ran out.
TIMEOUT = PREFIX + "timeout"

#: The other gang APIs, as each documents itself: (group, version) of the group object and
#: where the pod names it.
X_K8S = ("scheduling.x-k8s.io", "v1alpha1")
X_K8S_LABEL = "scheduling.x-k8s.io/pod-group"
#: Upstream's PodGroup, in the version the plane's release serves (v1beta1 on Kubernetes 1.37,
#: v1alpha2 on 1.36: ``KUBE=1.36``).
UPSTREAM = ("scheduling.k8s.io", selected_release().podgroup_version)
#: The condition kube-scheduler writes on it when the gang is placed: renamed in v1beta1.
UPSTREAM_CONDITION = (
    "PodGroupScheduled" if UPSTREAM[1] == "v1alpha2" else "PodGroupInitiallyScheduled"
)
VOLCANO = ("scheduling.volcano.sh", "v1beta1")
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
KUEUE_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL = "kueue.x-k8s.io/pod-group-total-count"

#: A label of the tests' own on every member, so a gang's pods can be listed whatever the way.
MEMBER_LABEL = "e2e.koordgang/gang"

Way = Literal["podgroup", "lite", "annotations"]
WAYS: tuple[Way, ...] = ("podgroup", "lite", "annotations")


def options(**values: str) -> dict[str, str]:
    """Optional gang keys by short name: ``options(mode="NonStrict", waiting_time="10s")``."""
    return {PREFIX + key.replace("_", "-"): value for key, value in values.items()}


def groups_value(*gang_keys: str) -> str:
    """The ``groups`` annotation naming ``<ns>/<name>`` gangs."""
    return json.dumps(list(gang_keys))


def declaration(
    way: Way, name: str, min_available: str | None
) -> tuple[dict[str, str], dict[str, str]]:
    """Labels and annotations that make a pod a member of gang ``name`` in one of the three ways.

    ``min_available`` is the raw text (tests of bad input pass anything; ``None`` leaves the key
    out). For the PodGroup way the minimum lives on the PodGroup, so it is ignored here.
    """
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    if way == "podgroup":
        labels[POD_GROUP_LABEL] = name
    elif way == "lite":
        labels[LITE_NAME] = name
        if min_available is not None:
            labels[LITE_MIN] = min_available
    else:
        annotations[NAME] = name
        if min_available is not None:
            annotations[MIN_AVAILABLE] = min_available
    return labels, annotations


def podgroup_body(
    name: str,
    min_member: int,
    *,
    timeout_seconds: int | None = None,
    annotations: Mapping[str, str] | None = None,
    min_resources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = timeout_seconds
    if min_resources:
        spec["minResources"] = dict(min_resources)
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": f"{PG_GROUP}/{PG_VERSION}",
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }


def upstream_podgroup_body(
    name: str,
    min_count: int,
    *,
    resource_claims: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """An upstream (``scheduling.k8s.io``) PodGroup in the version the server serves, a gang
    of ``min_count``; ``resource_claims``: its claims (Kubernetes 1.37's
    ``DRAWorkloadResourceClaims``), entry name -> ``{"resourceClaimTemplateName": ...}`` or
    ``{"resourceClaimName": ...}``, shared by the members whose own entries match."""
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if resource_claims:
        spec["resourceClaims"] = [
            {"name": entry, **dict(ref)} for entry, ref in resource_claims.items()
        ]
    return {
        "apiVersion": f"{UPSTREAM[0]}/{UPSTREAM[1]}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


@dataclass
class Gang:
    """A gang as the test means it. ``options`` go on the PodGroup's annotations (PodGroup way)
    or on every pod (other ways); ``pod_annotations`` go on every pod in any way (they override
    the PodGroup's). ``min_text`` replaces the minimum's text on the pods (bad-input tests)."""

    namespace: str
    name: str
    min_member: int
    way: Way = "annotations"
    size: int | None = None
    requests: Mapping[str, str] = field(default_factory=lambda: {"cpu": "1"})
    options: Mapping[str, str] = field(default_factory=dict)
    pod_annotations: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: int | None = None
    min_text: str | None = None
    omit_min: bool = False
    #: Set by the test once the gang was seen whole: later it may shrink below its minimum.
    satisfied_once: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def members(self) -> int:
        return self.size if self.size is not None else self.min_member

    @property
    def selector(self) -> str:
        return f"{MEMBER_LABEL}={self.name}"

    def pod_name(self, index: int) -> str:
        return f"{self.name}-{index}"

    def pod_names(self) -> list[str]:
        return [self.pod_name(i) for i in range(self.members)]

    def pod(self, index: int, **pod_args: Any) -> dict[str, Any]:
        """Body of member ``index`` (``pod_args`` go to :func:`harness.kube.pod_body`)."""
        min_text = None if self.omit_min else (self.min_text or str(self.min_member))
        labels, annotations = declaration(self.way, self.name, min_text)
        labels[MEMBER_LABEL] = self.name
        if self.way != "podgroup":
            annotations.update(self.options)
        annotations.update(self.pod_annotations)
        pod_args.setdefault("requests", self.requests)
        return pod_body(self.pod_name(index), labels=labels, annotations=annotations, **pod_args)

    def podgroup(self) -> dict[str, Any]:
        return podgroup_body(
            self.name,
            self.min_member,
            timeout_seconds=self.timeout_seconds,
            annotations=self.options,
        )


# -- reading the cluster ----------------------------------------------------------------------


def podgroup(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        obj = json_object(
            cluster.custom.get_namespaced_custom_object(
                PG_GROUP, PG_VERSION, namespace, PG_PLURAL, name
            )
        )
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return obj


def podgroup_status(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    obj = podgroup(cluster, namespace, name)
    status: dict[str, Any] = (obj or {}).get("status") or {}
    return status


def members(cluster: Cluster, gang: Gang) -> list[Any]:
    return cluster.pods(gang.namespace, gang.selector)


def bound_members(cluster: Cluster, gang: Gang) -> list[Any]:
    return [p for p in members(cluster, gang) if p.spec.node_name]


def bound_count(cluster: Cluster, gang: Gang) -> int:
    return len(bound_members(cluster, gang))


def wait_bound(
    cluster: Cluster, gang: Gang, count: int | None = None, timeout: float = 45
) -> list[Any]:
    """Waits until ``count`` members (default: all created ones) are bound; returns the pods."""

    def done() -> list[Any] | None:
        pods = members(cluster, gang)
        want = len(pods) if count is None else count
        bound = [p for p in pods if p.spec.node_name]
        return pods if pods and len(bound) >= want else None

    result: list[Any] = wait_until(
        done,
        timeout=timeout,
        what=f"{count if count is not None else 'all'} members of {gang.key} bound",
    )
    return result


def explanation(pod: Any) -> str | None:
    """The PodScheduled=False message of a pending pod, if it has one."""
    condition = scheduled_condition(pod)
    if condition is None or condition.status != "False" or pod.spec.node_name:
        return None
    return str(condition.message or "")


def wait_explained(
    cluster: Cluster,
    namespace: str,
    names: Iterable[str],
    contains: str | Sequence[str] = "",
    *,
    timeout: float = 45,
) -> dict[str, str]:
    """Waits until every named pod is pending with a PodScheduled=False message containing
    every one of ``contains``; returns the messages. Fails if one of them is bound meanwhile."""
    wanted = [contains] if isinstance(contains, str) else list(contains)
    names = list(names)

    def check() -> dict[str, str] | None:
        messages: dict[str, str] = {}
        for name in names:
            pod = cluster.pod(namespace, name)
            assert not pod.spec.node_name, f"{namespace}/{name} was bound to {pod.spec.node_name}"
            message = explanation(pod)
            if message is None or not all(w in message for w in wanted):
                return None
            messages[name] = message
        return messages

    def last_messages() -> dict[str, str | None]:
        return {n: explanation(cluster.pod(namespace, n)) for n in names}

    try:
        result: dict[str, str] = wait_until(
            check, timeout=timeout, what=f"{names} explained with {wanted!r}"
        )
    except AssertionError as error:
        raise AssertionError(f"{error}\nmessages now: {last_messages()}") from None
    return result


def unschedulable_condition(cluster: Cluster, namespace: str, name: str) -> Any:
    condition = scheduled_condition(cluster.pod(namespace, name))
    assert condition is not None, f"{namespace}/{name} has no PodScheduled condition"
    return condition


def events_by_object(cluster: Cluster, namespace: str) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = defaultdict(list)
    for event in cluster.core.list_namespaced_event(namespace).items:
        grouped[event.involved_object.name or ""].append(event)
    return grouped


def matching_events(
    cluster: Cluster, namespace: str, names: Iterable[str], reason: str, contains: str = ""
) -> list[Any]:
    """Events with ``reason`` about any of ``names`` whose message contains ``contains``."""
    grouped = events_by_object(cluster, namespace)
    return [
        e
        for name in names
        for e in grouped.get(name, [])
        if e.reason == reason and contains in (e.message or "")
    ]


def wait_event(
    cluster: Cluster,
    namespace: str,
    name: str,
    reason: str,
    contains: str = "",
    *,
    timeout: float = 30,
) -> Any:
    events: list[Any] = wait_until(
        lambda: matching_events(cluster, namespace, [name], reason, contains),
        timeout=timeout,
        what=f"a {reason} event on {namespace}/{name} containing {contains!r}",
    )
    return events[0]


def scheduled_event_counts(cluster: Cluster, namespace: str) -> Counter[str]:
    """How many times each pod was announced as Scheduled (an Event's count included)."""
    counts: Counter[str] = Counter()
    for event in cluster.core.list_namespaced_event(namespace).items:
        if event.reason == "Scheduled":
            counts[event.involved_object.name or ""] += max(event.count or 1, 1)
    return counts


def holds(
    predicate: Callable[[], bool], seconds: float, *, what: str, interval: float = 0.3
) -> None:
    """Asserts ``predicate`` stays true for ``seconds`` (for "nothing happens" claims)."""
    deadline = time.monotonic() + seconds
    while True:
        assert predicate(), f"no longer true: {what}"
        if time.monotonic() >= deadline:
            return
        time.sleep(interval)


def mentions(message: str, key: str, value: str | None) -> bool:
    """Whether an explanation names ``key`` (and ``value``, quoted as in ``key="value"``)."""
    if value is None:
        return key in message
    if f'{key}="{value}"' in message:
        return True
    if '"' in value or "\\" in value:
        # Values with quotes may be escaped (Go %q, JSON) or shown with single quotes.
        return any(
            form in message
            for form in (f"{key}={json.dumps(value)}", f"{key}={value!r}", f"{key}={value}")
        )
    return False


# -- the invariant ----------------------------------------------------------------------------


@dataclass
class SeenGang:
    key: str
    minimum: int | None  # None: the declaration cannot start a gang
    bound: int = 0
    pods: int = 0
    groups: frozenset[str] = frozenset()
    timed_out_bound: list[str] = field(default_factory=list)


def _int_or_none(text: str | None) -> int | None:
    if text is None or not text.strip().isdigit():
        return None
    value = int(text)
    return value if value >= 1 else None


def _parse_groups(text: str | None) -> frozenset[str] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, list) or not all(
        isinstance(v, str) and v.count("/") == 1 and all(v.split("/")) for v in value
    ):
        return None
    return frozenset(value)


def group_object(
    cluster: Cluster, api: tuple[str, str], namespace: str, name: str
) -> dict[str, Any] | None:
    """A gang's group object in one API, None if it (or its kind) does not exist."""
    try:
        obj = json_object(
            cluster.custom.get_namespaced_custom_object(
                api[0], api[1], namespace, "podgroups", name
            )
        )
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return obj


def _positive(raw: Any) -> int | None:
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 1 else None


def _other_api_gang(
    cluster: Cluster,
    pod: Any,
    objects: dict[tuple[tuple[str, str], str], dict[str, Any] | None],
) -> tuple[str, int | None] | None:
    """(gang key, minimum) of a pod declared in a gang API other than Koordinator's; None for
    no gang (or an upstream PodGroup whose policy is ``basic``)."""
    namespace = pod.metadata.namespace
    labels = pod.metadata.labels or {}
    annotations = pod.metadata.annotations or {}
    group = getattr(pod.spec, "scheduling_group", None)
    upstream_name = group.pod_group_name if group is not None else None
    path: tuple[str, ...]
    # Upstream's last: from 1.37 the Job controller names a PodGroup of its own on every Job's
    # pods, whatever gang they declare elsewhere.
    if X_K8S_LABEL in labels:
        api, name, path = X_K8S, labels[X_K8S_LABEL], ("minMember",)
    elif VOLCANO_ANNOTATION in annotations:
        api, name, path = VOLCANO, annotations[VOLCANO_ANNOTATION], ("minMember",)
    elif KUEUE_LABEL in labels:
        return f"{namespace}/{labels[KUEUE_LABEL]}", _int_or_none(annotations.get(KUEUE_TOTAL))
    elif upstream_name:
        api, name, path = UPSTREAM, upstream_name, ("schedulingPolicy", "gang", "minCount")
    else:
        return None
    if (api, f"{namespace}/{name}") not in objects:
        objects[(api, f"{namespace}/{name}")] = group_object(cluster, api, namespace, name)
    obj = objects[(api, f"{namespace}/{name}")]
    if obj is None:
        return f"{namespace}/{name}", None
    value: Any = obj.get("spec") or {}
    if api == UPSTREAM and "gang" not in (value.get("schedulingPolicy") or {}):
        return None
    for step in path:
        value = value.get(step) if isinstance(value, Mapping) else None
    return f"{namespace}/{name}", _positive(value)


def observed_gangs(cluster: Cluster, namespaces: Iterable[str]) -> dict[str, SeenGang]:
    """Every gang our pods declare in ``namespaces``, with its minimum and bound members, as the
    contract defines them (first matching declaration; pod annotations override the PodGroup;
    Koordinator's declarations first, then scheduler-plugins', Volcano's, Kueue's and
    upstream's)."""
    seen: dict[str, SeenGang] = {}
    podgroups: dict[str, dict[str, Any] | None] = {}
    others: dict[tuple[tuple[str, str], str], dict[str, Any] | None] = {}
    for namespace in namespaces:
        for pod in cluster.pods(namespace):
            if pod.spec.scheduler_name != SCHEDULER:
                continue
            labels = pod.metadata.labels or {}
            annotations = pod.metadata.annotations or {}
            group_text = annotations.get(GROUPS)
            if POD_GROUP_LABEL in labels:
                name = labels[POD_GROUP_LABEL]
                key = f"{namespace}/{name}"
                if key not in podgroups:
                    podgroups[key] = podgroup(cluster, namespace, name)
                pg = podgroups[key]
                minimum = None
                if pg is not None:
                    raw = (pg.get("spec") or {}).get("minMember")
                    minimum = raw if isinstance(raw, int) and raw >= 1 else None
                    if group_text is None:
                        group_text = ((pg.get("metadata") or {}).get("annotations") or {}).get(
                            GROUPS
                        )
            elif LITE_NAME in labels:
                key = f"{namespace}/{labels[LITE_NAME]}"
                minimum = _int_or_none(labels.get(LITE_MIN))
            elif NAME in annotations:
                key = f"{namespace}/{annotations[NAME]}"
                minimum = _int_or_none(annotations.get(MIN_AVAILABLE))
            else:
                other = _other_api_gang(cluster, pod, others)
                if other is None:
                    continue
                key, minimum = other
            entry = seen.setdefault(key, SeenGang(key=key, minimum=minimum))
            entry.pods += 1
            groups = _parse_groups(group_text)
            if groups:
                entry.groups = entry.groups | groups
            if pod.spec.node_name:
                entry.bound += 1
                if annotations.get(TIMEOUT) == "true":
                    entry.timed_out_bound.append(pod.metadata.name)
    return seen


def partial_gangs(
    cluster: Cluster, namespaces: Iterable[str], gangs: Iterable[Gang] = ()
) -> list[str]:
    """What breaks all-or-nothing right now, one line each (empty when all is well)."""
    satisfied = {g.key for g in gangs if g.satisfied_once}
    seen = observed_gangs(cluster, namespaces)
    problems: list[str] = []
    for key, gang in sorted(seen.items()):
        if gang.timed_out_bound:
            problems.append(f"{key}: timed-out members bound: {gang.timed_out_bound}")
        if key in satisfied or gang.bound == 0:
            continue
        if gang.minimum is None:
            problems.append(f"{key}: {gang.bound} bound, but its declaration cannot start a gang")
            continue
        if gang.bound < gang.minimum:
            problems.append(f"{key}: {gang.bound} bound, below its minimum {gang.minimum}")
        for partner in sorted(gang.groups - {key}):
            if partner in satisfied:
                continue
            other = seen.get(partner)
            if other is None or other.minimum is None or other.bound < other.minimum:
                have = "no members" if other is None else f"{other.bound} bound"
                problems.append(f"{key}: bound while its group partner {partner} has {have}")
    return problems


def assert_no_partial_gangs(
    cluster: Cluster,
    namespaces: Iterable[str],
    gangs: Iterable[Gang] = (),
    *,
    settle: float = 15.0,
) -> None:
    """No gang bound below its minimum (unless the test marked it ``satisfied_once``), no gang
    bound while a GangGroup partner is short, no timed-out member bound.

    Bindings of a satisfied gang are not instantaneous, so a gang seen short is given ``settle``
    seconds to complete before this fails."""
    namespaces = list(namespaces)
    gangs = list(gangs)
    deadline = time.monotonic() + settle
    while True:
        problems = partial_gangs(cluster, namespaces, gangs)
        if not problems:
            return
        if time.monotonic() >= deadline:
            raise AssertionError("partial gangs: " + "; ".join(problems))
        time.sleep(0.5)


# -- the scenario's book ----------------------------------------------------------------------


class GangBook:
    """Creates a scenario's gangs, PodGroups and extra namespaces; checks and cleans up after."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.namespaces: list[str] = [namespace]
        self.gangs: list[Gang] = []
        self.podgroups: list[tuple[str, str]] = []

    def extra_namespace(self, prefix: str = "e2e-b") -> str:
        name = self.cluster.create_namespace(unique(prefix))
        self.namespaces.append(name)
        return name

    def gang(
        self, name: str, min_member: int, *, namespace: str | None = None, **fields: Any
    ) -> Gang:
        """Declares (does not create) a gang and remembers it."""
        gang = Gang(
            namespace=namespace or self.namespace, name=name, min_member=min_member, **fields
        )
        self.gangs.append(gang)
        return gang

    def create_podgroup(self, gang: Gang, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        obj = json_object(
            self.cluster.custom.create_namespaced_custom_object(
                PG_GROUP, PG_VERSION, gang.namespace, PG_PLURAL, dict(body or gang.podgroup())
            )
        )
        self.podgroups.append((gang.namespace, gang.name))
        return obj

    def create_pods(
        self, gang: Gang, indices: Iterable[int] | None = None, **pod_args: Any
    ) -> list[str]:
        names = []
        for index in range(gang.members) if indices is None else indices:
            self.cluster.create_pod(gang.namespace, gang.pod(index, **pod_args))
            names.append(gang.pod_name(index))
        return names

    def create(self, gang: Gang) -> list[str]:
        """The PodGroup first (PodGroup way), then every member."""
        if gang.way == "podgroup":
            self.create_podgroup(gang)
        return self.create_pods(gang)

    def check(self) -> None:
        wait_until(
            lambda: not any(unexplained_pending(self.cluster, ns) for ns in self.namespaces),
            timeout=15,
            what="every pending pod of ours explained",
        )
        for namespace in self.namespaces:
            assert_invariants(self.cluster, namespace)
        assert_no_partial_gangs(self.cluster, self.namespaces, self.gangs)

    def cleanup(self) -> None:
        for namespace in self.namespaces:
            self.cluster.delete_namespace_pods(namespace)
        for namespace, name in self.podgroups:
            try:
                self.cluster.custom.delete_namespaced_custom_object(
                    PG_GROUP, PG_VERSION, namespace, PG_PLURAL, name
                )
            except ApiException as error:
                if error.status != 404:
                    raise
