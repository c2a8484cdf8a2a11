"""Leader election against a fake Lease endpoint: a free lease is taken, one renewed by another
replica is not (until it has not been renewed for the lease duration, by this replica's own
clock), the leader renews, loses it when renewals fail past the deadline, and hands it over."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from koordgang.clients.errors import ApiError
from koordgang.engine.leader import LeaderElector, LeaseConfig, Role

PATH = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/lease"


class LeaseApi:
    """GET/POST/PUT of one Lease, with resourceVersion conflicts; ``down`` fails every call."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.down = False

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if self.down:
            raise ApiError(503, "ServiceUnavailable", "down")
        if method == "GET":
            if self.lease is None:
                raise ApiError(404, "NotFound", "no lease")
            return copy.deepcopy(self.lease)
        if method == "POST":
            if self.lease is not None:
                raise ApiError(409, "AlreadyExists", "exists")
            self._store(body)
            return body
        if method == "PUT":
            assert self.lease is not None
            if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", "changed")
            self._store(body)
            return body
        raise AssertionError(method)

    def _store(self, body: dict[str, Any]) -> None:
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease.setdefault("metadata", {})["resourceVersion"] = str(self.version)

    @property
    def holder(self) -> str:
        return str(((self.lease or {}).get("spec") or {}).get("holderIdentity") or "")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(api: LeaseApi, clock: Clock, identity: str, lost: list[str]) -> LeaderElector:
    started: list[str] = []

    async def on_started() -> None:
        started.append(identity)

    return LeaderElector(
        api,  # type: ignore[arg-type]  # a fake of the Lease API
        LeaseConfig("ns", "lease", identity, lease_duration=15, renew_deadline=10, retry_period=2),
        on_started=on_started,
        on_lost=lambda: lost.append(identity),
        clock=clock,
    )


def role_of(leader: LeaderElector) -> Role:
    """The role now (read again after the event loop ran)."""
    return leader.role


async def test_a_free_lease_is_taken_and_a_held_one_only_once_it_expires() -> None:
    api, clock = LeaseApi(), Clock()
    lost: list[str] = []
    first, second = elector(api, clock, "a", lost), elector(api, clock, "b", lost)
    assert await first._try_acquire()
    assert api.holder == "a"
    # b sees a's lease: not before it has gone unrenewed for 15 s as b observes it.
    assert not await second._try_acquire()
    clock.now += 14
    assert not await second._try_acquire()
    assert await first._try_acquire()  # a renews: b's observation starts again
    clock.now += 14
    assert not await second._try_acquire()
    clock.now += 16
    assert await second._try_acquire()
    assert api.holder == "b"
    assert api.lease is not None and api.lease["spec"]["leaseTransitions"] == 1


async def test_the_leader_renews_loses_when_it_cannot_and_releases_on_stop() -> None:
    api, clock = LeaseApi(), Clock()
    lost: list[str] = []
    leader = elector(api, clock, "a", lost)
    task = asyncio.create_task(leader.run())
    for _ in range(20):
        await asyncio.sleep(0)
    assert leader.role is Role.LEADER
    await leader.release()
    assert api.holder == ""
    task.cancel()

    # A leader whose renewals fail past the renew deadline has lost the lease: it says so once.
    api2, clock2 = LeaseApi(), Clock()
    lost2: list[str] = []
    leading = asyncio.Event()

    async def on_started() -> None:
        leading.set()

    doomed = LeaderElector(
        api2,  # type: ignore[arg-type]  # a fake of the Lease API
        LeaseConfig("ns", "lease", "x", lease_duration=15, renew_deadline=10, retry_period=0.001),
        on_started=on_started,
        on_lost=lambda: lost2.append("x"),
        clock=clock2,
    )
    run = asyncio.create_task(doomed.run())
    await asyncio.wait_for(leading.wait(), timeout=30)
    api2.down = True
    await asyncio.sleep(0.01)
    assert role_of(doomed) is Role.LEADER and lost2 == []  # failures, but within the deadline
    clock2.now += 11
    await asyncio.wait_for(run, timeout=30)
    assert role_of(doomed) is Role.LOST and lost2 == ["x"]
