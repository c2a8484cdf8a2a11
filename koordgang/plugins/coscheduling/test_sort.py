"""Gang queue order: priority, then gang age, then namespace and gang name; members stay
together, and pods outside any gang are ordered as PrioritySort orders them."""

from __future__ import annotations

import pytest

from koordgang.model.gang import PodGroupInfo
from koordgang.model.pod import PodInfo
from koordgang.plugins.coscheduling import Coscheduling
from koordgang.plugins.coscheduling.sort import gang_sort_key
from koordgang.plugins.prioritysort import PrioritySort, priority_sort_key
from koordgang.plugins.profile import default_framework
from koordgang.settings import Settings
from koordgang.testing.builders import member, podgroup, registry


def queue_order(pods: list[PodInfo], *podgroups: PodGroupInfo) -> list[str]:
    gangs = registry(*pods, podgroups=podgroups)
    return [p.name for p in sorted(pods, key=lambda pod: gang_sort_key(gangs, pod))]


@pytest.mark.parametrize(
    ("pods", "podgroups", "expected"),
    [
        pytest.param(
            [
                member("plain", None, created=25),
                member("b-0", "b", created=20),
                member("a-1", "a", created=30),
                member("a-0", "a", created=10),
            ],
            (),
            ["a-0", "a-1", "b-0", "plain"],
            id="members of one gang leave together, the older gang first",
        ),
        pytest.param(
            [
                member("a-0", "a", created=10),
                member("pg-0", "pg", how="podgroup", created=40),
                member("pg-1", "pg", how="podgroup", created=50),
            ],
            (podgroup("pg", created=5),),
            ["pg-0", "pg-1", "a-0"],
            id="a PodGroup gang dates from its PodGroup, not its pods",
        ),
        pytest.param(
            [
                member("x-1", "zeta", namespace="alpha"),
                member("x-0", "beta", namespace="beta"),
                member("x-2", "alpha", namespace="beta"),
                member("x-3", "zeta", namespace="alpha"),
            ],
            (),
            ["x-1", "x-3", "x-2", "x-0"],
            id="gangs of the same age by namespace then gang name",
        ),
        pytest.param(
            [
                member("old-0", "old", created=0),
                member("young-0", "young", created=100, priority=10),
                member("young-1", "young", created=100, priority=10),
            ],
            (),
            ["young-0", "young-1", "old-0"],
            id="higher priority first, before gang age",
        ),
        pytest.param(
            [
                member("late", None, created=30),
                member("early", None, created=10),
                member("urgent", None, created=50, priority=100),
                member("same-b", None, created=20),
                member("same-a", None, created=20),
            ],
            (),
            ["urgent", "early", "same-a", "same-b", "late"],
            id="pods without a gang by priority, creation, name",
        ),
        pytest.param(
            [
                member("m-1", "m", created=10),
                member("m-0", "m", created=10),
                member("m-2", "m", created=5),
            ],
            (),
            ["m-0", "m-1", "m-2"],
            id="members of a gang by name, whatever their own age",
        ),
    ],
)
def test_gang_sort_key_orders_the_queue(
    pods: list[PodInfo], podgroups: tuple[PodGroupInfo, ...], expected: list[str]
) -> None:
    assert queue_order(pods, *podgroups) == expected


def test_a_gang_of_one_pod_sorts_like_an_ordinary_pod_of_that_age() -> None:
    pods = [
        member("plain-late", None, created=30),
        member("solo", "solo", min_available="1", created=20),
        member("plain-early", None, created=10),
    ]

    assert queue_order(pods) == ["plain-early", "solo", "plain-late"]


def test_a_pod_outside_any_gang_has_exactly_the_priority_sort_key() -> None:
    plain = member("plain", None, created=7, priority=3)
    gangs = registry(plain, member("a-0"))

    assert gang_sort_key(gangs, plain) == priority_sort_key(plain)
    assert PrioritySort().sort_key(plain) == priority_sort_key(plain)


def test_a_member_is_keyed_by_its_priority_and_its_gang_not_its_own_age() -> None:
    pods = [member("a-1", created=30, priority=5), member("a-0", created=1)]
    gangs = registry(*pods)

    assert gang_sort_key(gangs, pods[0]) == (-5, pods[1].creation_timestamp, "ns", "a", "a-1")


def test_the_default_framework_sorts_with_the_coscheduling_plugin() -> None:
    pods = [member("plain", None, created=5), member("a-1", created=30), member("a-0", created=1)]
    gangs = registry(*pods)
    framework = default_framework(Settings(), gangs)

    assert isinstance(framework.queue_sort, Coscheduling)
    assert [p.name for p in sorted(pods, key=framework.sort_key)] == ["a-0", "a-1", "plain"]
    assert framework.sort_key(pods[1]) == (0, pods[2].creation_timestamp, "ns", "a", "a-1")
