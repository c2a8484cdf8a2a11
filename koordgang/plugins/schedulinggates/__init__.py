"""Pods with scheduling gates wait outside the queue until the gates are removed."""

from koordgang.plugins.schedulinggates.plugin import SchedulingGates

__all__ = ["SchedulingGates"]
