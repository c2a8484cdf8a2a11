"""A reservation: the room held for one starving job, and what its members are told of it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from koordgang.framework.diagnosis import plural

__all__ = ["Reservation"]


@dataclass(slots=True)
class Reservation:
    """Room held for one job: where its members go, and which pods it waits for."""

    job: str
    priority: int
    #: Monotonic seconds it began, and the same moment on the wall clock (shown to users).
    since: float
    since_wall: float
    #: Monotonic seconds it ends unless the job bound first: the job's waiting time, or the
    #: start it was promised if later.
    until: float
    #: member uid -> the node held for it.
    nominations: dict[str, str] = field(default_factory=dict)
    #: pod uid -> node: the pods of ours that must finish before the job fits.
    blockers: dict[str, str] = field(default_factory=dict)
    #: pod uid -> node: pods placed on its room because they end before it starts (backfill);
    #: the job waits for them too.
    let_in: dict[str, str] = field(default_factory=dict)
    #: When it was promised, as it began, to start at the latest (wall clock): once the pods
    #: it waits for reach their time limits, if nothing of higher priority comes and no pod
    #: outlives its bound. None where one has no limit.
    promised: float | None = None

    @property
    def nodes(self) -> set[str]:
        return set(self.nominations.values())

    def waits_for(self) -> dict[str, str]:
        """pod uid -> node: every pod that must be gone before the job starts."""
        return {**self.blockers, **self.let_in}

    def describe(self, reclaiming: int = 0) -> str:
        """``holding 10 nodes for default/big since 14:03:05: 6/10 have room, waiting for 9
        pods to finish, let in 2 pods that end before it starts``; and, when what it let in
        is evicted, ``; its room is ready but for 2 pods it let in: evicting``."""
        nodes = self.nodes
        waits = self.waits_for()
        ready = len(nodes - set(waits.values()))
        clock = time.strftime("%H:%M:%S", time.gmtime(self.since_wall))
        text = (
            f"holding {plural(len(nodes), 'node')} for {self.job} since {clock}: "
            f"{ready}/{len(nodes)} have room"
        )
        if waits:
            text += f", waiting for {plural(len(waits), 'pod')} to finish"
        if self.let_in:
            count = len(self.let_in)
            end = "ends" if count == 1 else "end"
            text += f", let in {plural(count, 'pod')} that {end} before it starts"
        if self.promised is not None and waits:
            by = time.strftime("%H:%M:%S", time.gmtime(self.promised))
            text += f"; promised to start by {by} UTC"
        if reclaiming:
            text += f"; its room is ready but for {plural(reclaiming, 'pod')} it let in: evicting"
        return text
