"""Taints with NoSchedule or NoExecute keep pods away unless tolerated (a filter); untolerated
PreferNoSchedule taints make a node less attractive (a score)."""

from koordgang.plugins.tainttoleration.plugin import TaintToleration

__all__ = ["TaintToleration"]
