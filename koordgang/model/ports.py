"""Host ports: the ``(protocol, hostIP, hostPort)`` a pod takes on its node, for NodePorts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koordgang.model import _fields
from koordgang.model.errors import ModelError, show

__all__ = ["ANY_HOST_IP", "HostPort", "host_ports", "ports_conflict"]

#: The host IP of a port bound on every address, which conflicts with any other host IP.
ANY_HOST_IP = "0.0.0.0"
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_MAX_PORT = 65535


@dataclass(frozen=True, slots=True, order=True)
class HostPort:
    protocol: str
    host_ip: str
    port: int


def ports_conflict(a: HostPort, b: HostPort) -> bool:
    """Whether two host ports cannot be bound on one node: same protocol and port, and the
    same host IP or either bound on every address (only ``0.0.0.0`` counts as such, as in
    kube-scheduler)."""
    if a.port != b.port or a.protocol != b.protocol:
        return False
    return a.host_ip == b.host_ip or a.host_ip == ANY_HOST_IP or b.host_ip == ANY_HOST_IP


def _collect(container: Any, path: str, found: set[HostPort]) -> None:
    if type(container) is not dict and not isinstance(container, Mapping):
        raise ModelError(f"expected an object, got {show(container)}", path)
    for index, port in enumerate(_fields.items(container, "ports", f"{path}.ports")):
        port_path = f"{path}.ports[{index}]"
        if type(port) is not dict and not isinstance(port, Mapping):
            raise ModelError(f"expected an object, got {show(port)}", port_path)
        number = port.get("hostPort")
        if number is None:
            continue
        if type(number) is not int:
            raise ModelError(f"expected an integer, got {show(number)}", f"{port_path}.hostPort")
        if number == 0:  # zero means no host port, as in the API
            continue
        if not 1 <= number <= _MAX_PORT:
            raise ModelError(
                f"must be from 1 to {_MAX_PORT}, got {number}", f"{port_path}.hostPort"
            )
        protocol = _fields.string(port, "protocol", f"{port_path}.protocol") or "TCP"
        if protocol not in _PROTOCOLS:
            raise ModelError(
                f"must be one of {', '.join(_PROTOCOLS)}, got {show(protocol)}",
                f"{port_path}.protocol",
            )
        host_ip = _fields.string(port, "hostIP", f"{port_path}.hostIP") or ANY_HOST_IP
        found.add(HostPort(protocol, host_ip, number))


def host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """The host ports a pod with this ``spec`` holds while it runs, deduplicated and sorted.

    Containers count, and so do sidecars (init containers with ``restartPolicy: Always``),
    which keep running, as current kube-scheduler releases count them; other init
    containers, which have exited by then, do not. Raises :class:`ModelError` with a path
    under ``spec``.
    """
    found: set[HostPort] = set()
    for index, container in enumerate(_fields.items(spec, "containers", "spec.containers")):
        if type(container) is dict and not container.get("ports"):
            continue  # most containers: no ports, nothing to check (this runs per pod event)
        _collect(container, f"spec.containers[{index}]", found)
    if not spec.get("initContainers"):
        return tuple(sorted(found)) if found else ()
    init_containers = _fields.items(spec, "initContainers", "spec.initContainers")
    for index, container in enumerate(init_containers):
        path = f"spec.initContainers[{index}]"
        if type(container) is not dict and not isinstance(container, Mapping):
            raise ModelError(f"expected an object, got {show(container)}", path)
        if _fields.string(container, "restartPolicy", f"{path}.restartPolicy") == "Always":
            _collect(container, path, found)
    return tuple(sorted(found)) if found else ()
