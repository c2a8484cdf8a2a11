"""Inter-pod affinity and anti-affinity: required terms filter nodes, preferred terms score them."""

from koordgang.plugins.interpodaffinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity"]
