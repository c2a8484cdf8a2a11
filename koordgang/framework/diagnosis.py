"""Why a pod fits nowhere: per node, the verdict that rejected it; in sum, kube-scheduler's
words."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from koordgang.framework.status import Code, Status


@dataclass(slots=True)
class Diagnosis:
    total_nodes: int = 0
    #: For each reason, the number of nodes that gave it.
    reasons: Counter[str] = field(default_factory=Counter)
    #: node -> how it rejected the pod: UNSCHEDULABLE where removing pods could make room,
    #: UNSCHEDULABLE_AND_UNRESOLVABLE where nothing but a change of the node or the pod would.
    node_codes: dict[str, Code] = field(default_factory=dict)
    #: Set when a check that concerns the pod itself (not a node) failed.
    pod_reason: str = ""
    #: What filters noted about the pod as a whole, said after the per-node reasons.
    notes: list[str] = field(default_factory=list)

    def reject(self, node: str, status: Status) -> None:
        self.reasons.update(status.reasons)
        self.node_codes[node] = status.code

    def reject_all(self, rejected: Mapping[str, Status]) -> None:
        for node, status in rejected.items():
            self.reject(node, status)

    def message(self) -> str:
        """``0/20 nodes are available: 12 Insufficient cpu, 8 node(s) had untolerated taint ...``"""
        if self.pod_reason:
            return self.pod_reason
        head = f"0/{self.total_nodes} nodes are available"
        if not self.reasons:
            text = f"{head}." if self.total_nodes else "no nodes available to schedule pods."
        else:
            text = f"{head}: {counted(self.reasons.items())}."
        if self.notes:
            text = f"{text} {' '.join(dict.fromkeys(self.notes))}"
        return text


def plural(count: int, noun: str) -> str:
    """``1 pod``, ``3 pods``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def counted(reasons: Iterable[tuple[str, int]]) -> str:
    """``3 Insufficient cpu, 2 node(s) were unschedulable``: sorted as strings, as kube-scheduler
    sorts them, so that messages read the same as its own."""
    return ", ".join(sorted(f"{count} {reason}" for reason, count in reasons))
