"""What-ifs are asked of a whole Scheduler over a fake API and clock (koordgang.testing);
these are its fixtures."""

from koordgang.testing.fixtures import api, clock, instant_retries, make_scheduler, sched

__all__ = ["api", "clock", "instant_retries", "make_scheduler", "sched"]
