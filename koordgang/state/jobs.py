"""Jobs by ``namespace/name``: the time limits the Job controller enforces on their pods."""

from __future__ import annotations

from collections.abc import Iterable

from koordgang.model.job import JobInfo
from koordgang.state.store import StoreChange

__all__ = ["Jobs"]


class Jobs:
    def __init__(self) -> None:
        self._jobs: dict[str, JobInfo] = {}

    def upsert(self, job: JobInfo) -> StoreChange:
        changed = self._jobs.get(job.key) != job
        self._jobs[job.key] = job
        return StoreChange(changed=changed)

    def remove(self, key: str) -> StoreChange:
        return StoreChange(changed=self._jobs.pop(key, None) is not None)

    def replace(self, items: Iterable[JobInfo]) -> StoreChange:
        self._jobs = {job.key: job for job in items}
        return StoreChange(changed=True)

    def get(self, key: str) -> JobInfo | None:
        """The Job ``namespace/name``, if the daemon knows it."""
        return self._jobs.get(key)

    def __len__(self) -> int:
        return len(self._jobs)
