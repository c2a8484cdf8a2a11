"""Free TCP ports on the loopback interface."""

from __future__ import annotations

import socket
from contextlib import ExitStack


def free_loopback_ports(count: int) -> list[int]:
    """`count` distinct ports that nothing listens on right now.

    All sockets stay open until every port is chosen, so the kernel cannot hand out the same
    port twice. Another program may still take one before our process binds it; start-up then
    fails with "address already in use" in that process's log, and a retry picks new ports.
    """
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports
