"""Cordoned (spec.unschedulable) and NotReady nodes take no new pods."""

from koordgang.plugins.nodeunschedulable.plugin import NodeUnschedulable

__all__ = ["NodeUnschedulable"]
