"""Every target the benchmarks report against, in one place: ``make bench``, ``bench.scaling``,
``bench.simulate``, ``bench.starvation`` and ``bench.medians`` print each as met or MISSED from
these definitions, and docs/performance.md states the same numbers.

A target is a goal, not a correctness check: a miss is printed, it does not fail the run. A
peer's figure in a verdict is measured in the same run, except the one ``Published`` number,
whose line says where it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    """``value`` meets it when at least ``limit`` (``at_least``) or below it."""

    what: str
    limit: float
    unit: str
    at_least: bool

    def met(self, value: float) -> bool:
        return value >= self.limit if self.at_least else value < self.limit

    def verdict(self, value: float | None) -> str:
        """``met   `` or ``MISSED`` (``-`` without a value), six wide for aligned lines."""
        if value is None:
            return "-     "
        return "met   " if self.met(value) else "MISSED"

    @property
    def wording(self) -> str:
        """``>= 90%``, ``< 15 s``: the limit as a line shows it."""
        sign = ">=" if self.at_least else "<"
        unit = self.unit if self.unit in ("%", "x") else f" {self.unit}"
        return f"{sign} {self.limit:g}{unit}"


@dataclass(frozen=True, slots=True)
class Published:
    """A peer's figure not measured in the run, with where it comes from."""

    value: float
    unit: str
    source: str


# -- start-up -------------------------------------------------------------------------------------

STARTUP_SECONDS = Target("start-up to the first bind with 100,000 pods", 15.0, "s", False)
STARTUP_RSS_MB = Target("peak RSS at start-up with 100,000 pods", 600.0, "MB", False)
#: The best peer's start-up over koordgang's, in the same run: koordgang no slower.
STARTUP_VS_BEST_PEER = Target("the best peer's start-up over koordgang's", 1.0, "x", True)

# -- throughput -----------------------------------------------------------------------------------

#: Of the run's bind ceiling (a bare client binding as fast as the API server takes it), in
#: every scenario, contention included.
SHARE_OF_CEILING = Target("share of the run's bind ceiling", 90.0, "%", True)
#: No scheduler binds faster than the ceiling (its client, ``bench/bare_binder.py``, costs less
#: per request than any binder, and its sweep finds where the API server saturates); 5% is
#: what two watches of one rate differ by in a short window.
UNDER_CEILING = Target("the fastest scheduler's share of the ceiling", 105.0, "%", False)
#: pods/s against the fastest peer in the same run.
GANGS_VS_BEST_PEER = Target("gang scenarios against the best peer", 2.0, "x", True)
PLAIN_VS_BEST_PEER = Target("plain pods against the best peer", 1.0, "x", True)
#: A gang API costing koordgang more CPU per pod than Koordinator's annotations by more than
#: this is flagged.
GANG_API_TOLERANCE = 1.10

# -- scale ----------------------------------------------------------------------------------------

#: CPU ms per bound pod from one node count to the next (1,000 -> 5,000 -> 50,000 nodes).
CPU_GROWTH = Target("CPU per bound pod, growth per step of nodes", 1.5, "x", False)
#: The simulation (``bench.simulate``): a gather, a preemption dry run, the engine's memory.
GATHER_SECONDS = Target("a topology gather", 1.0, "s", False)
DRY_RUN_SECONDS = Target("a preemption dry run", 1.0, "s", False)
SIMULATION_RSS_GB = Target("the engine's peak RSS", 4.0, "GB", False)

# -- the starvation guard -------------------------------------------------------------------------

#: Small-pod throughput with the guard over without.
STARVATION_THROUGHPUT = Target("small-pod throughput with the guard over without", 0.90, "x", True)

# -- published figures ----------------------------------------------------------------------------

KOORDINATOR_GANG_1K = Published(
    17.2,
    "pods/s",
    "koord-scheduler on gang-1k at its default client QPS 50, measured once on this machine "
    "(shared/DESIGN.md); not measured in this run",
)
#: koordgang on gang-1k against that figure.
TIMES_KOORDINATOR = Target("gang-1k against koord-scheduler's published figure", 10.0, "x", True)
