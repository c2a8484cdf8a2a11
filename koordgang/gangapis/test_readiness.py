"""check_group: may a GangGroup be attempted now, and if not, exactly what the pods are told."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.gangapis.readiness import READY, GroupVerdict, check_group
from koordgang.model.gang import PodGroupInfo
from koordgang.model.koordinator import GROUPS_KEY, MATCH_POLICY_KEY, TIMEOUT_KEY
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.testing.builders import gang_of, member, podgroup, registry, stamp

GROUP_AB = {GROUPS_KEY: '["ns/a", "ns/b"]'}


def verdict(*pods: PodInfo, podgroups: tuple[PodGroupInfo, ...] = ()) -> GroupVerdict:
    gangs = registry(*pods, podgroups=podgroups)
    gang = gang_of(gangs, "ns/a")
    return check_group(gang, gangs.group(gang))


def gated(name: str, gang: str = "a", *, min_available: str = "4") -> PodInfo:
    """A member whose ``spec.schedulingGates`` still hold it back (as Kueue does)."""
    return parse_pod(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": f"uid-ns-{name}",
                "creationTimestamp": stamp(0),
                "annotations": {
                    "gang.scheduling.koordinator.sh/name": gang,
                    "gang.scheduling.koordinator.sh/min-available": min_available,
                },
            },
            "spec": {
                "schedulerName": "koord-scheduler",
                "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                "containers": [{"name": "c"}],
            },
        }
    )


def pods_of(
    gang: str, count: int, *, min_available: str = "2", annotations: dict[str, str] | None = None
) -> list[PodInfo]:
    return [
        member(f"{gang}-{i}", gang, min_available=min_available, annotations=annotations)
        for i in range(count)
    ]


def gang_a(count: int, **kwargs: Any) -> list[PodInfo]:
    return pods_of("a", count, **kwargs)


def gang_b(count: int, **kwargs: Any) -> list[PodInfo]:
    return pods_of("b", count, **kwargs)


@pytest.mark.parametrize(
    ("pods", "podgroups", "message"),
    [
        pytest.param(
            [member("a-0", how="podgroup"), member("a-1", how="podgroup")],
            (),
            "gang ns/a: waiting for PodGroup ns/a",
            id="its PodGroup does not exist yet",
        ),
        pytest.param(
            gang_a(3, min_available="8"),
            (),
            "gang ns/a: 3/8 members created, min 8",
            id="too few members",
        ),
        pytest.param(
            [
                *gang_a(3, min_available="5"),
                member("a-dying", deleting=True),
                member("a-done", phase="Succeeded"),
            ],
            (),
            "gang ns/a: 3/5 members created, min 5",
            id="terminating and finished members do not count as created",
        ),
        pytest.param(
            [member(f"a-{i}", how="podgroup", min_available=None) for i in range(2)],
            (podgroup("a", 4),),
            "gang ns/a: 2/4 members created, min 4",
            id="too few members for the PodGroup's minMember",
        ),
        pytest.param(
            [*gang_a(2, min_available="4"), gated("a-8"), gated("a-9")],
            (),
            "gang ns/a: 2/4 members created (2 more scheduling-gated), min 4",
            id="scheduling-gated members do not count as created",
        ),
        pytest.param(
            [*gang_a(3, min_available="4"), gated("a-9"), member("a-done", phase="Failed")],
            (),
            "gang ns/a: 3/4 members created (1 more scheduling-gated), min 4",
            id="gated members are counted apart, finished ones not at all",
        ),
        pytest.param(
            gang_a(3, min_available="eight"),
            (),
            'gang ns/a cannot start: gang.scheduling.koordinator.sh/min-available="eight" '
            "is not an integer; the gang cannot start",
            id="min-available is not an integer",
        ),
        pytest.param(
            [member("a-0", how="labels", min_available="0")],
            (),
            'gang ns/a cannot start: pod-group.scheduling.sigs.k8s.io/min-available="0" '
            "is less than 1; the gang cannot start",
            id="lightweight min-available is zero",
        ),
        pytest.param(
            [member("a-0", min_available=None)],
            (),
            'gang ns/a cannot start: gang.scheduling.koordinator.sh/min-available="" '
            "is missing; the gang cannot start",
            id="min-available is missing",
        ),
        pytest.param(
            [member("a-0", how="podgroup", min_available=None)],
            (podgroup("a", None),),
            'gang ns/a cannot start: spec.minMember="" is missing; the gang cannot start',
            id="the PodGroup has no minMember",
        ),
    ],
)
def test_a_gang_that_cannot_start_says_why(
    pods: list[PodInfo], podgroups: tuple[PodGroupInfo, ...], message: str
) -> None:
    assert verdict(*pods, podgroups=podgroups) == GroupVerdict(False, message)


@pytest.mark.parametrize(
    ("partner", "podgroups", "message"),
    [
        pytest.param(
            [],
            (),
            "gang ns/a waits for ns/b in its group: no member of ns/b exists yet",
            id="partner missing",
        ),
        pytest.param(
            gang_b(1),
            (),
            "gang ns/a waits for ns/b in its group: ns/b 1/2 members created, min 2",
            id="partner short",
        ),
        pytest.param(
            [],
            (podgroup("b", 3),),
            "gang ns/a waits for ns/b in its group: ns/b 0/3 members created, min 3",
            id="partner known only by its PodGroup",
        ),
        pytest.param(
            [member("b-0", "b", how="podgroup"), member("b-1", "b", how="podgroup")],
            (),
            "gang ns/a waits for ns/b in its group: ns/b waiting for PodGroup ns/b",
            id="partner waiting for its PodGroup",
        ),
        pytest.param(
            gang_b(2, min_available="x"),
            (),
            "gang ns/a waits for ns/b in its group: ns/b cannot start: "
            'gang.scheduling.koordinator.sh/min-available="x" is not an integer; '
            "the gang cannot start",
            id="partner invalid",
        ),
        pytest.param(
            [*gang_b(1), member("b-9", "b", annotations={TIMEOUT_KEY: "true"})],
            (),
            "gang ns/a waits for ns/b in its group: ns/b timed out",
            id="partner timed out",
        ),
        pytest.param(
            [*gang_b(1), gated("b-1", "b", min_available="2")],
            (),
            "gang ns/a waits for ns/b in its group: ns/b 1/2 members created "
            "(1 more scheduling-gated), min 2",
            id="partner held back by scheduling gates",
        ),
        pytest.param(
            [
                *gang_b(1, min_available="3", annotations={MATCH_POLICY_KEY: "only-waiting"}),
                member("b-9", "b", node="n1"),
            ],
            (),
            "gang ns/a waits for ns/b in its group: ns/b 2/3 members created, min 3",
            id="satisfied partner still counts without the once-satisfied policy",
        ),
    ],
)
def test_a_gang_waits_for_the_partners_of_its_group(
    partner: list[PodInfo], podgroups: tuple[PodGroupInfo, ...], message: str
) -> None:
    pods = [*gang_a(2, annotations=GROUP_AB), *partner]

    assert verdict(*pods, podgroups=podgroups) == GroupVerdict(False, message)


def test_a_satisfied_once_satisfied_partner_is_ignored_even_when_short() -> None:
    pods = [*gang_a(2, annotations=GROUP_AB), member("b-0", "b", min_available="4", node="n1")]

    assert verdict(*pods) == READY


@pytest.mark.parametrize(
    "pods",
    [
        pytest.param(gang_a(2), id="a gang alone with min members"),
        pytest.param(gang_a(3, min_available="2"), id="more members than min"),
        pytest.param(
            [member(f"a-{i}", how="podgroup", min_available=None) for i in range(3)],
            id="a PodGroup gang with its PodGroup",
        ),
        pytest.param(
            [*gang_a(2, annotations=GROUP_AB), *gang_b(2)], id="a group whose partners are ready"
        ),
        pytest.param(
            [
                *gang_a(2, annotations={GROUPS_KEY: '["ns/a", "other/b"]'}),
                *[member(f"b-{i}", "b", namespace="other") for i in range(2)],
            ],
            id="a partner in another namespace",
        ),
    ],
)
def test_a_gang_with_its_members_and_ready_partners_is_ready(pods: list[PodInfo]) -> None:
    result = verdict(*pods, podgroups=(podgroup("a", 3),))

    assert result.ready is True
    assert result.message == ""


def test_its_own_problem_is_reported_before_any_partners() -> None:
    pods = [*gang_a(1, annotations=GROUP_AB)]

    assert verdict(*pods) == GroupVerdict(False, "gang ns/a: 1/2 members created, min 2")


def test_partners_are_checked_in_group_order() -> None:
    groups = {GROUPS_KEY: '["ns/c", "ns/b"]'}
    pods = [*gang_a(2, annotations=groups), *gang_b(1)]

    assert verdict(*pods) == GroupVerdict(
        False, "gang ns/a waits for ns/b in its group: ns/b 1/2 members created, min 2"
    )


def test_a_gang_whose_gated_members_are_not_needed_for_its_minimum_is_ready() -> None:
    assert verdict(*gang_a(2, min_available="2"), gated("a-9", min_available="2")) == READY
