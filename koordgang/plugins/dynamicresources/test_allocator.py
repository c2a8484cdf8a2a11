"""The device search: exact answers on small cases, and random cases against brute force.

The brute force below shares no code with the allocator: it lists every way to give each
request its devices (every alternative, every set of devices) and keeps those that are valid
by the rules written out plainly here. Whenever one exists, the allocator must find one, it
must be valid, and it must take the same alternatives as the first valid way in request order
(``firstAvailable`` prefers earlier alternatives, request by request).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence
from fractions import Fraction

import pytest

from koordgang.model.dra import (
    ALLOCATION_MODE_ALL,
    AttributeValue,
    ClaimSpec,
    DeviceConstraint,
    DeviceId,
    DeviceRequest,
    SliceDevice,
    SubRequest,
    parse_resource_slice,
)
from koordgang.plugins.dynamicresources.allocator import (
    Allocation,
    Shortfall,
    allocate,
)
from koordgang.plugins.dynamicresources.capacity import CapacityBudget
from koordgang.plugins.dynamicresources.counters import CounterBudget
from koordgang.state.dra import Device, Pool

DRIVER = "gpu.example.com"


def device(name: str, pool: Pool, **attributes: object) -> Device:
    attrs = {
        f"{DRIVER}/{k}": AttributeValue("string" if isinstance(v, str) else "int", v)
        for k, v in attributes.items()
    }
    return Device(DeviceId(DRIVER, pool.name, name), "node-1", SliceDevice(name, {}, attrs), pool)


def spec(*requests: DeviceRequest, constraints: Sequence[DeviceConstraint] = ()) -> ClaimSpec:
    return ClaimSpec(tuple(requests), tuple(constraints), signature=repr(requests).encode())


def exactly(
    name: str, device_class: str = "gpu", count: int = 1, mode: str = "ExactCount"
) -> DeviceRequest:
    return DeviceRequest(name, (SubRequest("", device_class, mode=mode, count=count),))


def by_class(device: Device, alternative: SubRequest) -> bool:
    """Class ``gpu`` is every device; class ``big`` is devices whose name ends in ``big``."""
    return alternative.device_class == "gpu" or device.id.device.endswith("big")


# A complete pool: only how many slices it has counts here, not what they are.
POOL = Pool(DRIVER, "pool", slices={"s": None}, slice_count=1)  # type: ignore[dict-item]


def names(result: Allocation | Shortfall, key: str = "ns/c") -> list[str]:
    assert isinstance(result, Allocation), result
    return [c.device.id.device for c in result.claims[key]]


class TestExactCases:
    def test_two_devices_are_taken_in_the_nodes_order(self) -> None:
        devices = [device(f"gpu-{i}", POOL) for i in range(4)]
        result = allocate(
            [("ns/c", spec(exactly("r", count=2)))], devices, lambda d: True, by_class
        )
        assert names(result) == ["gpu-0", "gpu-1"]

    def test_devices_in_use_are_skipped(self) -> None:
        devices = [device(f"gpu-{i}", POOL) for i in range(4)]
        busy = {devices[0].id, devices[2].id}
        result = allocate(
            [("ns/c", spec(exactly("r", count=2)))], devices, lambda d: d not in busy, by_class
        )
        assert names(result) == ["gpu-1", "gpu-3"]

    def test_a_short_request_is_named_with_what_is_free(self) -> None:
        devices = [device(f"gpu-{i}", POOL) for i in range(3)]
        result = allocate(
            [("ns/c", spec(exactly("r", count=3)))],
            devices,
            lambda d: d != devices[1].id,
            by_class,
        )
        assert isinstance(result, Shortfall)
        assert (result.request, result.wanted, result.free, result.total) == ("r", 3, 2, 3)
        assert result.resolvable

    def test_match_attribute_backtracks_past_a_first_choice_that_cannot_be_completed(
        self,
    ) -> None:
        # gpu-0 is the only "a" device: taking it first leaves no partner of its kind.
        devices = [
            device("gpu-0", POOL, kind="a"),
            device("gpu-1", POOL, kind="b"),
            device("gpu-2", POOL, kind="b"),
        ]
        claim = spec(
            exactly("r", count=2),
            constraints=[DeviceConstraint((), match_attribute=f"{DRIVER}/kind")],
        )
        result = allocate([("ns/c", claim)], devices, lambda d: True, by_class)
        assert names(result) == ["gpu-1", "gpu-2"]

    def test_a_first_request_gives_way_to_a_second_that_needs_its_device(self) -> None:
        # "any" could take gpu-0-big, but then "big" (which only that device serves) fails.
        devices = [device("gpu-0-big", POOL), device("gpu-1", POOL)]
        claim = spec(exactly("any"), exactly("big", device_class="big"))
        result = allocate([("ns/c", claim)], devices, lambda d: True, by_class)
        assert names(result) == ["gpu-1", "gpu-0-big"]

    def test_first_available_takes_the_first_alternative_that_fits(self) -> None:
        devices = [device("gpu-0", POOL), device("gpu-1", POOL)]
        request = DeviceRequest(
            "r",
            (
                SubRequest("two-big", "big", count=2),
                SubRequest("two-any", "gpu", count=2),
            ),
            first_available=True,
        )
        result = allocate([("ns/c", spec(request))], devices, lambda d: True, by_class)
        assert isinstance(result, Allocation)
        assert [c.result_name for c in result.claims["ns/c"]] == ["r/two-any", "r/two-any"]

    def test_all_takes_every_matching_device_and_fails_if_one_is_in_use(self) -> None:
        devices = [device("a-big", POOL), device("b", POOL), device("c-big", POOL)]
        claim = spec(exactly("all", device_class="big", mode=ALLOCATION_MODE_ALL, count=0))
        result = allocate([("ns/c", claim)], devices, lambda d: True, by_class)
        assert names(result) == ["a-big", "c-big"]
        busy = allocate([("ns/c", claim)], devices, lambda d: d != devices[2].id, by_class)
        assert isinstance(busy, Shortfall)

    def test_all_waits_while_a_pool_is_incomplete(self) -> None:
        updating = Pool(DRIVER, "updating", slices={}, slice_count=2)
        devices = [device("a-big", updating)]
        claim = spec(exactly("all", device_class="big", mode=ALLOCATION_MODE_ALL, count=0))
        result = allocate([("ns/c", claim)], devices, lambda d: True, by_class)
        assert isinstance(result, Shortfall)
        assert "being updated" in result.reason

    def test_an_incomplete_pool_serves_exact_counts(self) -> None:
        updating = Pool(DRIVER, "updating", slices={}, slice_count=2)
        devices = [device("a", updating)]
        result = allocate([("ns/c", spec(exactly("r")))], devices, lambda d: True, by_class)
        assert names(result) == ["a"]

    def test_two_claims_never_share_a_device(self) -> None:
        devices = [device("gpu-0", POOL), device("gpu-1", POOL)]
        result = allocate(
            [("ns/a", spec(exactly("r"))), ("ns/b", spec(exactly("r")))],
            devices,
            lambda d: True,
            by_class,
        )
        assert names(result, "ns/a") == ["gpu-0"]
        assert names(result, "ns/b") == ["gpu-1"]

    def test_a_costly_search_gives_up_with_a_message(self) -> None:
        devices = [device(f"gpu-{i}", POOL, slot=i % 5) for i in range(12)]
        claim = spec(
            exactly("r", count=6),
            constraints=[DeviceConstraint((), distinct_attribute=f"{DRIVER}/slot")],
        )
        # Six devices with distinct slots out of five slots: no allocation, many partial ones.
        result = allocate([("ns/c", claim)], devices, lambda d: True, by_class, max_steps=10)
        assert isinstance(result, Shortfall)
        assert "gave up" in result.reason

    def test_match_attribute_goes_straight_to_the_one_domain_that_can_serve(self) -> None:
        # 16 domains of 8; one device in use in each but the last: a request for 8 in one
        # domain is served from the last, within a handful of tries.
        devices = [device(f"gpu-{i:03d}", POOL, domain=f"d{i // 8}") for i in range(128)]
        busy = {devices[g * 8].id for g in range(15)}
        claim = spec(
            exactly("r", count=8),
            constraints=[DeviceConstraint((), match_attribute=f"{DRIVER}/domain")],
        )
        result = allocate(
            [("ns/c", claim)], devices, lambda d: d not in busy, by_class, max_steps=20
        )
        assert names(result) == [f"gpu-{i:03d}" for i in range(120, 128)]


# -- random cases against brute force ------------------------------------------------------


def _ways(
    claims: Sequence[tuple[str, ClaimSpec]], devices: Sequence[Device], free: set[DeviceId]
) -> Iterator[list[tuple[str, str, str, tuple[int, ...]]]]:
    """Every assignment (claim, request, alternative, device indexes), depth first in request
    order: a request's alternatives in order and, for each, its sets of devices in the node's
    order, before the next request's choices. The first valid one is what a search that
    prefers earlier alternatives and earlier devices, request by request, must answer."""
    steps = [(key, request) for key, claim in claims for request in claim.requests]

    def options(request: DeviceRequest) -> Iterator[tuple[SubRequest, tuple[int, ...]]]:
        for alternative in request.alternatives:
            matching = [i for i, d in enumerate(devices) if by_class(d, alternative)]
            if alternative.mode == ALLOCATION_MODE_ALL:
                if matching:
                    yield alternative, tuple(matching)
            else:
                for chosen in itertools.combinations(matching, alternative.count):
                    yield alternative, chosen

    def walk(position: int) -> Iterator[list[tuple[str, str, str, tuple[int, ...]]]]:
        if position == len(steps):
            yield []
            return
        key, request = steps[position]
        for alternative, chosen in options(request):
            for rest in walk(position + 1):
                yield [(key, request.name, alternative.name, chosen), *rest]

    return walk(0)


def _valid(
    way: list[tuple[str, str, str, tuple[int, ...]]],
    claims: Sequence[tuple[str, ClaimSpec]],
    devices: Sequence[Device],
    free: set[DeviceId],
) -> bool:
    used: list[int] = [i for _, _, _, devs in way for i in devs]
    if len(used) != len(set(used)):
        return False
    if any(devices[i].id not in free for i in used):
        return False
    for key, claim in claims:
        mine = [(r, a, devs) for k, r, a, devs in way if k == key]
        for constraint in claim.constraints:
            covered = [
                i
                for r, a, devs in mine
                for i in devs
                if not constraint.requests
                or r in constraint.requests
                or f"{r}/{a}" in constraint.requests
            ]
            if constraint.match_attribute:
                values = [
                    devices[i].spec.attributes.get(constraint.match_attribute) for i in covered
                ]
                if None in values or len(set(values)) > 1:
                    return False
            if constraint.distinct_attribute:
                values = [
                    devices[i].spec.attributes.get(constraint.distinct_attribute) for i in covered
                ]
                if None in values or len(set(values)) != len(values):
                    return False
    return True


def _random_case(
    rng: random.Random,
) -> tuple[list[tuple[str, ClaimSpec]], list[Device], set[DeviceId]]:
    devices = [
        device(
            f"d{i}" + ("-big" if rng.random() < 0.4 else ""),
            POOL,
            kind=rng.choice("ab"),
            slot=rng.randint(1, 3),
        )
        for i in range(rng.randint(1, 6))
    ]
    free = {d.id for d in devices if rng.random() < 0.8}
    claims = []
    for c in range(rng.randint(1, 2)):
        requests = []
        for r in range(rng.randint(1, 2)):
            alternatives = []
            for a in range(rng.randint(1, 2)):
                mode = ALLOCATION_MODE_ALL if rng.random() < 0.1 else "ExactCount"
                alternatives.append(
                    SubRequest(
                        f"s{a}",
                        rng.choice(("gpu", "big")),
                        mode=mode,
                        count=0 if mode == ALLOCATION_MODE_ALL else rng.randint(1, 2),
                    )
                )
            if len(alternatives) == 1 and rng.random() < 0.5:
                only = alternatives[0]
                requests.append(
                    DeviceRequest(
                        f"r{r}",
                        (SubRequest("", only.device_class, mode=only.mode, count=only.count),),
                    )
                )
            else:
                requests.append(DeviceRequest(f"r{r}", tuple(alternatives), first_available=True))
        constraints = []
        if rng.random() < 0.4:
            constraints.append(DeviceConstraint((), match_attribute=f"{DRIVER}/kind"))
        if rng.random() < 0.3:
            constraints.append(DeviceConstraint(("r0",), distinct_attribute=f"{DRIVER}/slot"))
        claims.append((f"ns/c{c}", spec(*requests, constraints=constraints)))
    return claims, devices, free


@pytest.mark.parametrize("seed", range(400))
def test_random_cases_match_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    claims, devices, free = _random_case(rng)
    first_valid = next(
        (way for way in _ways(claims, devices, free) if _valid(way, claims, devices, free)), None
    )
    result = allocate(claims, devices, lambda d: d in free, by_class)
    if first_valid is None:
        assert isinstance(result, Shortfall), f"found an allocation where none exists: {result}"
        return
    assert isinstance(result, Allocation), f"missed {first_valid}: {result}"
    index = {d.id: i for i, d in enumerate(devices)}
    found = []
    for key, claim in claims:
        chosen = result.claims[key]
        for request in claim.requests:
            mine = [c for c in chosen if c.request.name == request.name]
            assert mine, f"request {request.name} of {key} got nothing"
            assert len({c.alternative.name for c in mine}) == 1
            found.append(
                (
                    key,
                    request.name,
                    mine[0].alternative.name,
                    tuple(index[c.device.id] for c in mine),
                )
            )
    assert _valid(found, claims, devices, free), found
    # Earlier alternatives and earlier devices first, request by request.
    assert found == first_valid


GIB = Fraction(2**30)


def shared_gpu(name: str, pool: Pool, gib: int = 80, **extra: object) -> Device:
    raw = {
        "name": name,
        "allowMultipleAllocations": True,
        "capacity": {"memory": {"value": f"{gib}Gi"}},
        **extra,
    }
    [spec_] = parse_resource_slice(
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "node-1",
                "pool": {"name": pool.name},
                "devices": [raw],
            },
        }
    ).devices
    return Device(DeviceId(DRIVER, pool.name, name), "node-1", spec_, pool)


def asking(name: str, gib: int, count: int = 1) -> DeviceRequest:
    memory = (("memory", Fraction(gib * GIB)),)
    return DeviceRequest(name, (SubRequest("", "gpu", count=count, capacity=memory),))


class TestSharedDevices:
    def test_claims_and_requests_share_a_device_while_its_capacity_lasts(self) -> None:
        gpu = shared_gpu("gpu-0", POOL)
        claims = [
            ("ns/a", spec(asking("r", 30), asking("s", 30))),
            ("ns/b", spec(asking("r", 20))),
        ]
        result = allocate(claims, [gpu], lambda d: True, by_class)
        assert names(result, "ns/a") == ["gpu-0", "gpu-0"] and names(result, "ns/b") == ["gpu-0"]
        assert isinstance(result, Allocation)
        assert [c.consumed for c in result.claims["ns/a"]] == [(("memory", 30 * GIB),)] * 2
        over = allocate([*claims, ("ns/c", spec(asking("r", 1)))], [gpu], lambda d: True, by_class)
        # Each fits alone; together they ask 81Gi of 80Gi.
        assert isinstance(over, Shortfall) and "cannot be served together" in over.reason

    def test_one_request_takes_distinct_devices(self) -> None:
        gpus = [shared_gpu("gpu-0", POOL), shared_gpu("gpu-1", POOL)]
        result = allocate([("ns/c", spec(asking("r", 10, 2)))], gpus, lambda d: True, by_class)
        assert names(result) == ["gpu-0", "gpu-1"]

    def test_what_the_view_uses_is_counted(self) -> None:
        gpu = shared_gpu("gpu-0", POOL)
        budget = CapacityBudget(lambda d: {"memory": Fraction(70 * GIB)})
        result = allocate(
            [("ns/c", spec(asking("r", 20)))], [gpu], lambda d: True, by_class, capacity=budget
        )
        assert isinstance(result, Shortfall) and (result.free, result.total) == (0, 1)
        assert budget.short(gpu, (("memory", Fraction(20 * GIB)),)) == (
            "gpu-0 has 10Gi of memory left, the request asks 20Gi"
        )

    def test_the_search_backtracks_to_give_a_later_request_room(self) -> None:
        """The first request fits either GPU; on the small one it leaves room for the second,
        which fits only the big one."""
        small, big = shared_gpu("gpu-0", POOL, 40), shared_gpu("gpu-1-big", POOL, 40)
        claims = [("ns/c", spec(asking("r", 30), asking("s", 30)))]
        result = allocate(claims, [small, big], lambda d: True, by_class)
        assert names(result) == ["gpu-0", "gpu-1-big"]

    def test_a_shared_device_takes_its_counters_once(self) -> None:
        pool = Pool(
            DRIVER,
            "pool",
            slices={"s": None},  # type: ignore[dict-item]
            slice_count=1,
            counter_sets={"gpu": {"memory": Fraction(80 * GIB)}},
        )
        consumes = [{"counterSet": "gpu", "counters": {"memory": {"value": "60Gi"}}}]
        gpu = shared_gpu("gpu-0", pool, consumesCounters=consumes)
        counters = CounterBudget([gpu], lambda d: False)
        result = allocate(
            [("ns/a", spec(asking("r", 10))), ("ns/b", spec(asking("r", 10)))],
            [gpu],
            lambda d: True,
            by_class,
            counters=counters,
        )
        assert names(result, "ns/b") == ["gpu-0"]
