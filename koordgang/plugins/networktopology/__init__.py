"""Network-topology-aware gang placement (the gather algorithm) and the ClusterNetworkTopology
status."""

from koordgang.plugins.networktopology.plugin import RESOURCE, NetworkTopology

__all__ = ["RESOURCE", "NetworkTopology"]
