"""nodeSelector and required node affinity (a filter); preferred node affinity (a score)."""

from koordgang.plugins.nodeaffinity.plugin import NodeAffinity

__all__ = ["NodeAffinity"]
