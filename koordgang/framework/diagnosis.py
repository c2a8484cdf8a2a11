"""Why a pod fits nowhere, in kube-scheduler's words."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(slots=True)
class Diagnosis:
    """Counts, for each reason, the nodes that rejected the pod for it."""

    total_nodes: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    #: Set when a check that concerns the pod itself (not a node) failed.
    pod_reason: str = ""

    def add(self, reasons: tuple[str, ...], nodes: int = 1) -> None:
        for reason in reasons:
            self.reasons[reason] += nodes

    def merge(self, other: Counter[str]) -> None:
        self.reasons.update(other)

    def message(self) -> str:
        """``0/20 nodes are available: 12 Insufficient cpu, 8 node(s) had untolerated taint ...``"""
        if self.pod_reason:
            return self.pod_reason
        head = f"0/{self.total_nodes} nodes are available"
        if not self.reasons:
            return f"{head}." if self.total_nodes else "no nodes available to schedule pods."
        # Sorted as strings, as kube-scheduler does, so messages read the same as its own.
        parts = sorted(f"{count} {reason}" for reason, count in self.reasons.items())
        return f"{head}: " + ", ".join(parts) + "."
