"""Queue order: higher priority first, then older, then by namespace and name."""

from koordgang.plugins.prioritysort.plugin import PrioritySort

__all__ = ["PrioritySort"]
