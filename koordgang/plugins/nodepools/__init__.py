"""Karpenter's NodePools: whether the room a group lacks is within what they may still add
(``spec.limits`` less ``status.resources``); members beyond it stop asking for nodes."""

from koordgang.plugins.nodepools.plugin import CLAIMS, REASON, RESOURCE, NodePools

__all__ = ["CLAIMS", "REASON", "RESOURCE", "NodePools"]
