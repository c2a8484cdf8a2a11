"""Start times: when each job waiting for room starts, if the time limits of the pods holding
it hold, told on its pods, in the gangs view and as a metric."""

from koordgang.plugins.starttimes.plugin import StartTimes

__all__ = ["StartTimes"]
