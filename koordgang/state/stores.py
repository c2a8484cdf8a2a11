"""The stores of every watched kind besides nodes and pods (which the cache keeps): one value,
made once by whoever runs a scheduler (the engine, the what-if's ``--from-cluster``), handed to
the plugins through their handle and to the intake through the kind table
(``engine/kinds.py``)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from koordgang.state.budgets import DisruptionBudgets
from koordgang.state.cache import SchedulerCache
from koordgang.state.dra import DraManager
from koordgang.state.in_flight import InFlight
from koordgang.state.jobs import Jobs
from koordgang.state.namespaces import Namespaces
from koordgang.state.volume_claims import VolumeClaims

__all__ = ["Stores"]


@dataclass(frozen=True, slots=True)
class Stores:
    namespaces: Namespaces = field(default_factory=Namespaces)
    volume_claims: VolumeClaims = field(default_factory=VolumeClaims)
    budgets: DisruptionBudgets = field(default_factory=DisruptionBudgets)
    #: Jobs, for the time limits their controller enforces.
    jobs: Jobs = field(default_factory=Jobs)
    #: Dynamic Resource Allocation: slices, classes, claims, taint rules, devices in use.
    dra: DraManager = field(default_factory=DraManager)

    def new_cache(
        self, own_schedulers: Collection[str] | None = None, in_flight: InFlight | None = None
    ) -> SchedulerCache:
        """A cache whose pods take devices from these stores (the DRA manager extends it);
        pods of schedulers not in ``own_schedulers`` count where they are nominated (and, with
        ``in_flight``, where they are likely to go before their scheduler tries them)."""
        return SchedulerCache(
            extensions=(self.dra,), own_schedulers=own_schedulers, in_flight=in_flight
        )
