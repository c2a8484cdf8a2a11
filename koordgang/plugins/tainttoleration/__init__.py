"""Taints with NoSchedule or NoExecute keep pods away unless tolerated."""

from koordgang.plugins.tainttoleration.plugin import TaintToleration

__all__ = ["TaintToleration"]
