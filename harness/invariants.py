"""What must hold after every scenario, checked from the API server's point of view."""

from __future__ import annotations

import datetime as dt
import json
import re
import socket
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from harness.dra import claims, doubly_allocated, resource_slices, shares
from harness.kube import SCHEDULER, Cluster, metadata, plain
from harness.rbac import USERNAME

#: Quantity suffixes (Kubernetes' resource.Quantity): decimal SI, binary, and milli.
_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)")


def quantity(text: Any) -> Fraction:
    """A quantity as the API server stores it (``500m``, ``1Gi``, ``2``), exactly. The checker's
    own reading: it shares no code with the scheduler it checks."""
    found = _QUANTITY.fullmatch(str(text).strip())
    if found is None or found.group(2) not in _SUFFIXES:
        raise ValueError(f"not a quantity: {text!r}")
    return Fraction(found.group(1)) * _SUFFIXES[found.group(2)]


def _requests(container: Mapping[str, Any]) -> Counter[str]:
    raw = (container.get("resources") or {}).get("requests") or {}
    return Counter({name: quantity(value) for name, value in raw.items()})


def pod_requests(pod: Mapping[str, Any]) -> Counter[str]:
    """What a pod holds on its node, as the kubelet admits it: its containers and sidecars
    (init containers that keep running) together, or an init container with the sidecars
    started before it if that is more, plus the pod's overhead."""
    spec = pod.get("spec") or {}
    running: Counter[str] = Counter()
    for container in spec.get("containers") or []:
        running.update(_requests(container))
    sidecars: Counter[str] = Counter()
    peak: Counter[str] = Counter()
    for container in spec.get("initContainers") or []:
        if container.get("restartPolicy") == "Always":
            sidecars.update(_requests(container))
            continue
        starting = sidecars + _requests(container)
        peak = Counter({k: max(peak[k], starting[k]) for k in set(peak) | set(starting)})
    running.update(sidecars)
    total = Counter({k: max(running[k], peak[k]) for k in set(running) | set(peak)})
    total.update({k: quantity(v) for k, v in (spec.get("overhead") or {}).items()})
    # Extended resources served through DRA (the claim made for them names them in the
    # pod's status) are devices of that claim, not the node's allocatable.
    claimed = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    for mapping in claimed.get("requestMappings") or []:
        total.pop(mapping.get("resourceName"), None)
    return total


def overcommitted(
    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
) -> dict[str, list[str]]:
    """Nodes whose bound, non-terminal pods request more than the node's allocatable:
    ``node -> [resources short]``. Takes the API server's JSON objects."""
    allocatable = {
        n["metadata"]["name"]: {
            k: quantity(v) for k, v in ((n.get("status") or {}).get("allocatable") or {}).items()
        }
        for n in nodes
    }
    used: dict[str, Counter[str]] = defaultdict(Counter)
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if node and phase not in ("Succeeded", "Failed"):
            used[node].update(pod_requests(pod))
            used[node]["pods"] += 1
    over: dict[str, list[str]] = {}
    for name, requested in used.items():
        room = allocatable.get(name)
        if room is None:
            continue
        short = sorted(k for k, v in requested.items() if v > room.get(k, Fraction(0)))
        if short:
            over[name] = short
    return over


def overcommitted_nodes(cluster: Cluster) -> dict[str, list[str]]:
    return overcommitted(
        plain(cluster.api_client, cluster.core.list_node().items),
        plain(cluster.api_client, cluster.core.list_pod_for_all_namespaces().items),
    )


#: Seconds a pending pod may go unexplained: the daemon's explainAfter and then some.
EXPLAINED_WITHIN = 10.0


def unexplained_pending(cluster: Cluster, namespace: str) -> list[str]:
    """Our pods that are not bound and carry no PodScheduled=False explanation."""
    missing = []
    for pod in cluster.pods(namespace):
        if pod.spec.scheduler_name != SCHEDULER or pod.spec.node_name:
            continue
        condition = next(
            (c for c in (pod.status.conditions or []) if c.type == "PodScheduled"), None
        )
        if condition is None or condition.status != "False" or not condition.message:
            missing.append(pod.metadata.name)
    return missing


def overdrawn_devices(
    claim_objects: Iterable[Mapping[str, Any]], slice_objects: Iterable[Mapping[str, Any]]
) -> dict[tuple[str, str, str], str]:
    """Devices several claims have shares of whose shares consume together more of a capacity
    than the device publishes (``memory: 100Gi > 80Gi``, in bytes), or a capacity the device
    does not publish at all. Read from the claims' results and the slices alone."""
    used: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for obj in claim_objects:
        for device, consumed in shares(obj):
            used[device].update({name: quantity(value) for name, value in consumed.items()})
    published: dict[tuple[str, str, str], dict[str, Fraction]] = {}
    for obj in slice_objects:
        spec = obj.get("spec") or {}
        pool = (spec.get("pool") or {}).get("name", "")
        for device in spec.get("devices") or []:
            capacity = device.get("capacity") or {}
            published[(spec.get("driver", ""), pool, device.get("name", ""))] = {
                name: quantity((entry or {}).get("value", "0")) for name, entry in capacity.items()
            }
    found: dict[tuple[str, str, str], str] = {}
    for device, amounts in used.items():
        capacity = published.get(device)
        if capacity is None:
            continue  # its slice is gone: nothing left to check it against
        for name, amount in sorted(amounts.items()):
            if name not in capacity:
                found[device] = f"{name}: {amount} consumed, not a capacity of the device"
            elif amount > capacity[name]:
                found[device] = f"{name}: {amount} > {capacity[name]}"
    return found


def kopf_marks_on_pods(cluster: Cluster) -> list[str]:
    """Pods carrying any kopf annotation or finalizer (kopf must never touch pods)."""
    marked = []
    for pod in cluster.core.list_pod_for_all_namespaces().items:
        meta = metadata(pod)
        annotations = meta.annotations or {}
        finalizers = meta.finalizers or []
        if any("kopf" in key for key in annotations) or any("kopf" in f for f in finalizers):
            marked.append(f"{meta.namespace}/{meta.name}")
    return marked


def assert_invariants(cluster: Cluster, namespace: str) -> None:
    over = overcommitted_nodes(cluster)
    assert not over, f"nodes over-committed: {over}"
    claim_objects = claims(cluster)
    twice = doubly_allocated(claim_objects)
    assert not twice, f"devices allocated to more than one claim: {twice}"
    overdrawn = overdrawn_devices(claim_objects, resource_slices(cluster))
    assert not overdrawn, f"shared devices allocated beyond their capacity: {overdrawn}"
    marked = kopf_marks_on_pods(cluster)
    assert not marked, f"kopf wrote to pods: {marked}"
    # A pod is told why it waits once it has waited explainAfter (1 s by default): allow that,
    # and the write, before calling a pending pod unexplained.
    deadline = time.monotonic() + EXPLAINED_WITHIN
    unexplained: list[Any] = unexplained_pending(cluster, namespace)
    while unexplained and time.monotonic() < deadline:
        time.sleep(0.25)
        unexplained = unexplained_pending(cluster, namespace)
    assert not unexplained, f"pending pods without an explanation: {unexplained}"


# -- the audit log of the local control plane ---------------------------------------------------


class AuditLog:
    """The local control plane's audit log (every write: verb, object, user, user agent, answer;
    see AUDIT_POLICY in controlplane/cluster.py), read from where a test began.

    The API server rotates the file at 200 MB (``--audit-log-maxsize``) into ``audit-<time>.log``
    beside it: the file a test began in is found again by its inode, and read to its end before
    the newer ones."""

    def __init__(self, path: Path) -> None:
        self.path = path
        stat = path.stat()
        self._inode = stat.st_ino
        self._offset = stat.st_size

    def events(self) -> list[dict[str, Any]]:
        """Every audit event written since this object was made, oldest first."""
        files = sorted(self.path.parent.glob("audit-*.log"), key=lambda f: f.stat().st_mtime)
        files.append(self.path)
        inodes = [f.stat().st_ino for f in files]
        # Our file gone altogether (rotated out of the backups kept): read all that is left.
        found = self._inode in inodes
        first = inodes.index(self._inode) if found else 0
        events: list[dict[str, Any]] = []
        for index in range(first, len(files)):
            with files[index].open() as handle:
                if index == first and found:
                    handle.seek(self._offset)
                # A line still being written is left out: it is read whole by the next call.
                for line in handle:
                    if line.endswith("\n"):
                        events.append(json.loads(line))
        return events


def _succeeded(event: Mapping[str, Any]) -> bool:
    code = (event.get("responseStatus") or {}).get("code")
    return isinstance(code, int) and 200 <= code < 300


def _pod_key(event: Mapping[str, Any]) -> str:
    ref = event.get("objectRef") or {}
    return f"{ref.get('namespace')}/{ref.get('name')}"


def _is_pod(event: Mapping[str, Any], subresource: str | None) -> bool:
    ref = event.get("objectRef") or {}
    return (
        ref.get("resource") == "pods"
        and not ref.get("apiGroup")
        and ref.get("subresource") == subresource
    )


def bindings_per_pod(events: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """Successful ``pods/binding`` creates per ``namespace/name``, by anyone."""
    return Counter(
        _pod_key(e)
        for e in events
        if e.get("verb") == "create" and _is_pod(e, "binding") and _succeeded(e)
    )


def pods_bound_twice(events: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Pods whose Binding the API server accepted more than once (it refuses a second one for a
    bound pod, so this is empty unless a pod was bound, deleted and re-created by name)."""
    return {pod: n for pod, n in bindings_per_pod(events).items() if n > 1}


def pod_deletes_by(events: Iterable[Mapping[str, Any]], user: str = USERNAME) -> Counter[str]:
    """Successful deletes of pods per ``namespace/name`` by ``user`` (the scheduler's
    ServiceAccount by default: its deletes are preemption's evictions)."""
    return Counter(
        _pod_key(e)
        for e in events
        if e.get("verb") == "delete"
        and _is_pod(e, None)
        and _succeeded(e)
        and (e.get("user") or {}).get("username") == user
    )


#: The node of a binding request whose body the audit log does not have.
UNKNOWN_NODE = "?"


def binding_requests(
    events: Iterable[Mapping[str, Any]], user: str = USERNAME
) -> list[tuple[str, str, int | None, dt.datetime]]:
    """Every ``pods/binding`` create by ``user``, whatever the answer, oldest first: (pod
    ``namespace/name``, the node asked for, the response code, when it was received). The node
    is read from the request (the control plane logs Binding bodies)."""
    found = []
    for e in events:
        if e.get("verb") != "create" or not _is_pod(e, "binding"):
            continue
        if (e.get("user") or {}).get("username") != user:
            continue
        target = ((e.get("requestObject") or {}).get("target") or {}).get("name") or UNKNOWN_NODE
        code = (e.get("responseStatus") or {}).get("code")
        found.append(
            (_pod_key(e), str(target), code if isinstance(code, int) else None, received_at(e))
        )
    return sorted(found, key=lambda r: r[3])


def double_bindings(
    events: Iterable[Mapping[str, Any]],
    incarnations: Mapping[str, Sequence[tuple[str, dt.datetime]]],
    user: str = USERNAME,
) -> dict[str, list[str]]:
    """Pods the scheduler asked to bind to two different nodes, or that were bound twice.

    A pod is one incarnation of a name: ``incarnations`` maps ``namespace/name`` to the
    (uid, creationTimestamp) of every pod of that name a watch saw, and each request goes to
    the latest one created before it was received, so that a pod deleted and re-created under
    its name is two pods (creation times have whole seconds: a name made again within the
    same second is not told apart). A retry to the same node (the first answer lost) is not a
    double binding. One line per pod: ``namespace/name#uid`` -> what was asked, as ``node:code``."""
    asked: dict[str, list[tuple[str, int | None]]] = {}
    for pod, node, code, at in binding_requests(events, user):
        uid = "?"
        for candidate, created in incarnations.get(pod, ()):
            if created <= at:
                uid = candidate
        asked.setdefault(f"{pod}#{uid}", []).append((node, code))
    doubles = {}
    for pod, requests in asked.items():
        # A request refused before its body was read (403 while the API server's authorizer
        # warms up after a restart) names no node: it cannot be a second one.
        nodes = {node for node, _ in requests if node != UNKNOWN_NODE}
        successes = sum(1 for _, code in requests if code is not None and 200 <= code < 300)
        if len(nodes) > 1 or successes > 1:
            doubles[pod] = [f"{node}:{code}" for node, code in requests]
    return doubles


def pod_evictions_by(events: Iterable[Mapping[str, Any]], user: str = USERNAME) -> Counter[str]:
    """``pods/eviction`` creates per ``namespace/name`` by ``user``, whatever the answer (an
    eviction refused by a budget was still asked for)."""
    return Counter(
        _pod_key(e)
        for e in events
        if e.get("verb") == "create"
        and _is_pod(e, "eviction")
        and (e.get("user") or {}).get("username") == user
    )


def daemon_user_agent(process_id: int) -> str:
    """The User-Agent of a daemon run on this machine (``koordgang/<host>_<pid>``): one per
    process, so writes in the audit log tell the daemons apart."""
    return f"koordgang/{socket.gethostname()}_{process_id}"


def received_at(event: Mapping[str, Any]) -> dt.datetime:
    return dt.datetime.fromisoformat(str(event["requestReceivedTimestamp"]))


def writes_by(
    events: Iterable[Mapping[str, Any]],
    user_agent: str,
    *,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
) -> list[Mapping[str, Any]]:
    """Writes sent with ``user_agent`` (its first word: a client may add comments after a
    space), received in ``[since, until)`` if given.

    A daemon not holding the lease writes nothing: its writes while it follows are this list
    over the time it followed."""
    return [
        e
        for e in events
        if str(e.get("userAgent", "")).split(" ", 1)[0] == user_agent
        and (since is None or received_at(e) >= since)
        and (until is None or received_at(e) < until)
    ]


def describe_writes(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """One short line per audit event, for a failure message."""
    return [
        f"{e.get('requestReceivedTimestamp')} {e.get('verb')} {e.get('requestURI')} "
        f"-> {(e.get('responseStatus') or {}).get('code')}"
        for e in events
    ]
