"""Host ports: a pod that asks for one goes only where it is still free."""

from koordgang.plugins.nodeports.plugin import NodePorts

__all__ = ["NodePorts"]
