"""Network-topology-aware gang placement: the gather algorithm, upstream's topology keys per
level, and the ClusterNetworkTopology fed to ``state/network_topology`` (whose status the
engine writes)."""

from koordgang.plugins.networktopology.plugin import RESOURCE, NetworkTopology

__all__ = ["RESOURCE", "NetworkTopology"]
