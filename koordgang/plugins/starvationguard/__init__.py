"""The starvation guard: a job that has waited long without fitting holds the nodes it will
fit on once the pods of ours there finish, instead of losing its turn to backfill for ever."""

from koordgang.plugins.starvationguard.plugin import StarvationGuard
from koordgang.plugins.starvationguard.reservation import Reservation

__all__ = ["Reservation", "StarvationGuard"]
