"""Leader election on a ``coordination.k8s.io`` Lease, as kube-scheduler does it.

Only the leader schedules and writes; followers keep their informers listed and watched so
that a takeover binds at once. A lease is taken when it is free or its holder has not renewed
it for ``lease_duration`` *as observed here* (the holder's clock is never trusted). The leader
renews every ``retry_period``; if it cannot renew for ``renew_deadline`` it has lost the lease
and must stop writing at once (the daemon exits; the kubelet restarts it as a follower). On a
graceful stop the leader gives the lease up, so that another replica takes over at once.

    follower --(lease free or expired, update wins)--> leader
    leader --(renew fails past the deadline)--> lost (exit)
    leader --(stop)--> released
"""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from koordgang.clients import leases
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError, ApiUnavailable

log = structlog.get_logger("koordgang.leader")


class Role(enum.StrEnum):
    FOLLOWER = "follower"
    LEADER = "leader"
    LOST = "lost"
    RELEASED = "released"


TRANSITIONS: dict[Role, frozenset[Role]] = {
    Role.FOLLOWER: frozenset({Role.LEADER, Role.RELEASED}),
    Role.LEADER: frozenset({Role.LOST, Role.RELEASED}),
    Role.LOST: frozenset(),
    Role.RELEASED: frozenset(),
}


@dataclass(frozen=True, slots=True)
class LeaseConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        api: KubeApi,
        config: LeaseConfig,
        *,
        on_started: Callable[[], Awaitable[None]],
        on_lost: Callable[[], None],
        clock: Callable[[], float],
    ) -> None:
        self._api = api
        self._config = config
        self._on_started = on_started
        self._on_lost = on_lost
        self._clock = clock
        self.role = Role.FOLLOWER
        #: (holder, renewTime) last seen, and when it was first seen here.
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0

    def _become(self, role: Role) -> None:
        if role not in TRANSITIONS[self.role]:
            raise RuntimeError(f"leader election cannot go from {self.role} to {role}")
        self.role = role

    async def run(self) -> None:
        """Tries to acquire the lease until it does, then renews it until it is lost or
        released. Returns when it is lost or released."""
        config = self._config
        while self.role is Role.FOLLOWER:
            if await self._try_acquire():
                self._become(Role.LEADER)
                log.info("became the leader", lease=config.name, identity=config.identity)
                await self._on_started()
                break
            await asyncio.sleep(config.retry_period)
        last_renewed = self._clock()
        while self.role is Role.LEADER:
            await asyncio.sleep(config.retry_period)
            if self.role is not Role.LEADER:
                break
            if await self._try_acquire():
                last_renewed = self._clock()
            elif self._clock() - last_renewed > config.renew_deadline:
                self._become(Role.LOST)
                log.error("lost the leader lease: stopping at once", lease=config.name)
                self._on_lost()

    async def release(self) -> None:
        """Gives the lease up (on a graceful stop), so that another replica takes over."""
        if self.role is not Role.LEADER:
            if self.role is Role.FOLLOWER:
                self._become(Role.RELEASED)
            return
        self._become(Role.RELEASED)
        try:
            config = self._config
            lease = await leases.get_lease(self._api, config.namespace, config.name, 30.0)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self._config.identity:
                return
            spec["holderIdentity"] = ""
            spec["leaseDurationSeconds"] = 1
            lease["spec"] = spec
            await leases.replace_lease(self._api, config.namespace, config.name, lease, 5.0)
            log.info("released the leader lease", lease=self._config.name)
        except (ApiError, ApiUnavailable) as error:
            log.warning("could not release the leader lease", error=str(error))

    async def _try_acquire(self) -> bool:
        """One attempt to take or renew the lease; True if we hold it now."""
        config = self._config
        now = self._clock()
        spec: dict[str, Any] = {
            "holderIdentity": config.identity,
            "leaseDurationSeconds": int(config.lease_duration),
            "renewTime": _now(),
        }
        try:
            lease = await leases.get_lease(
                self._api, config.namespace, config.name, config.renew_deadline
            )
        except ApiError as error:
            if not error.not_found:
                return False
            first = {**spec, "acquireTime": _now(), "leaseTransitions": 0}
            try:
                await leases.create_lease(
                    self._api, config.namespace, config.name, first, config.renew_deadline
                )
            except (ApiError, ApiUnavailable):
                return False
            return True
        except ApiUnavailable:
            return False
        current = lease.get("spec") or {}
        holder = str(current.get("holderIdentity") or "")
        seen = (holder, str(current.get("renewTime") or ""))
        if seen != self._observed:
            self._observed, self._observed_at = seen, now
        duration = float(current.get("leaseDurationSeconds") or config.lease_duration)
        ours = holder == config.identity
        if holder and not ours and now - self._observed_at < duration:
            return False  # held by someone who renewed it lately
        updated = dict(current)
        updated.update(spec)
        if not ours:
            updated["acquireTime"] = _now()
            updated["leaseTransitions"] = int(current.get("leaseTransitions") or 0) + 1
        lease["spec"] = updated
        try:
            await leases.replace_lease(
                self._api, config.namespace, config.name, lease, config.renew_deadline
            )
        except (ApiError, ApiUnavailable):
            return False  # a conflict: someone else updated it first
        return True
