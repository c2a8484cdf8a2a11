"""Job-level preemption: when a group does not fit, make room for all of it at once by
evicting the cheapest set of lower-priority pods, and hold that room for it."""

from koordgang.plugins.preemption.plugin import Preemption

__all__ = ["Preemption"]
