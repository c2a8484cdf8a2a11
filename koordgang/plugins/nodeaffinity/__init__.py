"""nodeSelector and required node affinity."""

from koordgang.plugins.nodeaffinity.plugin import NodeAffinity

__all__ = ["NodeAffinity"]
