"""DRA-backed extended resources (KEP-5004): a pod asking for an extended resource that a
DeviceClass provides (its ``spec.extendedResourceName``, or the implicit
``deviceclass.resource.kubernetes.io/<class>``) gets devices of that class on a node that does
not have the resource as allocatable. The scheduler makes one ResourceClaim for the pod (the
*special claim*: annotated, owned by the pod), with one request per container and resource,
and names it in the pod's ``status.extendedResourceClaimStatus``.

Here: what a pod's containers ask for, and the special claim's requests and the mapping of
containers to them, made as kube-scheduler makes them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from koordgang.model.dra.base import ALLOCATION_MODE_EXACT

#: The extended resource every DeviceClass provides, whatever else it names.
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
#: The annotation that marks the special claim (value "true").
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
#: How the special claim's generated name begins, after the pod's name.
EXTENDED_CLAIM_SUFFIX = "-extended-resources-"
#: The name part of the key the special claim has before it exists: not a valid object name,
#: so no real claim ever has it.
_PENDING = "<extended-resources>"


def pending_key(namespace: str, pod_uid: str) -> str:
    """The key of the pod's special claim between its allocation and its creation."""
    return f"{namespace}/{_PENDING}/{pod_uid}"


def is_pending_key(key: str) -> bool:
    return key.partition("/")[2].startswith(_PENDING + "/")


def may_be_extended(name: str) -> bool:
    """Whether ``name`` can be an extended resource (qualified, as native ones are not)."""
    return "/" in name and not name.startswith("requests.")


@dataclass(frozen=True, slots=True)
class ContainerRequests:
    """One container (of ``initContainers`` then ``containers``) that asks for an extended
    resource."""

    #: Its index among the init containers and then the containers.
    index: int
    name: str
    #: An init container that is not a sidecar: it runs to completion before the others.
    short_lived: bool
    #: Every resource the container requests, sorted by name, with its amount (the request
    #: names count the position of a resource among all of them).
    requests: tuple[tuple[str, int], ...]


def container_requests(
    spec: Mapping[str, Any], requests_of: Callable[[Any], dict[str, int]]
) -> tuple[ContainerRequests, ...]:
    """The pod's containers that ask for a resource that may be extended; ``requests_of``
    reads a container's requests (limits standing in for missing requests)."""
    found: list[ContainerRequests] = []
    init = spec.get("initContainers") or []
    regular = spec.get("containers") or []
    for index, container in enumerate([*init, *regular]):
        if not isinstance(container, Mapping):
            continue
        requests = requests_of(container)
        if not any(may_be_extended(n) and amount for n, amount in requests.items()):
            continue
        is_init = index < len(init)
        short_lived = is_init and container.get("restartPolicy") != "Always"
        found.append(
            ContainerRequests(
                index,
                str(container.get("name") or ""),
                short_lived,
                tuple(sorted(requests.items())),
            )
        )
    return tuple(found)


@dataclass(frozen=True, slots=True)
class RequestMapping:
    """An entry of ``status.extendedResourceClaimStatus.requestMappings``."""

    container: str
    resource: str
    request: str

    def to_api(self) -> dict[str, str]:
        return {
            "containerName": self.container,
            "resourceName": self.resource,
            "requestName": self.request,
        }


@dataclass(frozen=True, slots=True)
class ExtendedRequest:
    name: str
    device_class: str
    count: int
    #: The extended resource it serves.
    resource: str

    def to_api(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "exactly": {
                "deviceClassName": self.device_class,
                "allocationMode": ALLOCATION_MODE_EXACT,
                "count": self.count,
            },
        }


def _own_request(
    container: ContainerRequests,
    resource: str,
    device_class: str,
    reusable: Sequence[ExtendedRequest],
) -> tuple[ExtendedRequest | None, list[RequestMapping]]:
    """The container's request for ``resource`` beyond what the ``reusable`` requests give it
    (None if they give enough), and its mappings."""
    amounts = dict(container.requests)
    wanted = amounts.get(resource, 0)
    if wanted <= 0:
        return None, []
    mappings: list[RequestMapping] = []
    given = 0
    for request in reusable:
        given += request.count
        mappings.append(RequestMapping(container.name, resource, request.name))
        if given >= wanted:
            return None, mappings
    position = [n for n, _ in container.requests].index(resource)
    name = f"container-{container.index}-request-{position}"
    mappings.append(RequestMapping(container.name, resource, name))
    return ExtendedRequest(name, device_class, wanted - given, resource), mappings


def requests_and_mappings(
    containers: Iterable[ContainerRequests], classes: Mapping[str, str]
) -> tuple[tuple[ExtendedRequest, ...], tuple[RequestMapping, ...]]:
    """The special claim's requests for the extended resources ``classes`` (resource -> its
    DeviceClass) and the containers' mappings to them, as kube-scheduler makes them: one
    request per long-lived container (a regular one or a sidecar) and resource; an init
    container uses the requests of the long-lived containers after it first and asks only
    for what they lack; the init containers, running one at a time, share the largest such
    request."""
    containers = list(containers)
    requests: list[ExtendedRequest] = []
    mappings: list[RequestMapping] = []
    for resource in sorted(classes):
        device_class = classes[resource]
        long_lived: dict[int, ExtendedRequest] = {}
        long_mappings: list[RequestMapping] = []
        for container in containers:
            if container.short_lived:
                continue
            request, found = _own_request(container, resource, device_class, ())
            if request is not None:
                long_lived[container.index] = request
            long_mappings.extend(found)
        largest: ExtendedRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[RequestMapping] = []
        for container in containers:
            if not container.short_lived:
                continue
            later = [r for i, r in sorted(long_lived.items()) if i >= container.index]
            request, found = _own_request(container, resource, device_class, later)
            if request is not None:
                short_names.add(request.name)
                if largest is None or largest.count < request.count:
                    largest = request
            short_mappings.extend(found)
        if largest is not None:
            requests.append(largest)
            short_mappings = [
                RequestMapping(m.container, m.resource, largest.name)
                if m.request in short_names
                else m
                for m in short_mappings
            ]
        requests.extend(r for _, r in sorted(long_lived.items()))
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: r.name)
    return tuple(requests), tuple(mappings)
