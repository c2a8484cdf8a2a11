"""Queue order: higher priority first, then older, then by namespace and name."""

from koordgang.plugins.prioritysort.plugin import PrioritySort, priority_sort_key

__all__ = ["PrioritySort", "priority_sort_key"]
