"""PrioritySort: higher priority first, then older, then namespace and name."""

from __future__ import annotations

import pytest

from koordgang.model.pod import PodInfo, parse_pod
from koordgang.plugins.prioritysort import PrioritySort


def pod(
    name: str,
    *,
    namespace: str = "default",
    priority: int | None = None,
    created: str | None = "2024-05-01T10:00:00Z",
) -> PodInfo:
    metadata: dict[str, str] = {"name": name, "namespace": namespace, "uid": f"{namespace}/{name}"}
    if created is not None:
        metadata["creationTimestamp"] = created
    spec: dict[str, object] = {"containers": [{"name": "c"}]}
    if priority is not None:
        spec["priority"] = priority
    return parse_pod({"metadata": metadata, "spec": spec})


def order(*pods: PodInfo) -> list[str]:
    plugin = PrioritySort()
    return [f"{p.namespace}/{p.name}" for p in sorted(pods, key=plugin.sort_key)]


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        (
            (pod("low", priority=10), pod("high", priority=1000), pod("none")),
            ["default/high", "default/low", "default/none"],
        ),
        # A missing priority is 0, above negative priorities.
        (
            (pod("negative", priority=-5), pod("none"), pod("zero", priority=0)),
            ["default/none", "default/zero", "default/negative"],
        ),
        # Equal priority: the older pod first.
        (
            (
                pod("newer", created="2024-05-01T10:00:01Z"),
                pod("older", created="2024-05-01T09:59:59Z"),
                pod("oldest", created="2023-12-31T23:00:00Z"),
            ),
            ["default/oldest", "default/older", "default/newer"],
        ),
        # Sub-second precision counts.
        (
            (
                pod("b", created="2024-05-01T10:00:00.2Z"),
                pod("a", created="2024-05-01T10:00:00.1Z"),
            ),
            ["default/a", "default/b"],
        ),
        # Priority beats age.
        (
            (
                pod("old-low", priority=1, created="2020-01-01T00:00:00Z"),
                pod("new-high", priority=2, created="2024-01-01T00:00:00Z"),
            ),
            ["default/new-high", "default/old-low"],
        ),
        # Equal priority and age: by namespace, then name.
        (
            (
                pod("a", namespace="zeta"),
                pod("b", namespace="alpha"),
                pod("a", namespace="alpha"),
            ),
            ["alpha/a", "alpha/b", "zeta/a"],
        ),
        # Namespace beats name.
        (
            (pod("aaa", namespace="team-b"), pod("zzz", namespace="team-a")),
            ["team-a/zzz", "team-b/aaa"],
        ),
        # No creation timestamp reads as the epoch: oldest of all.
        (
            (pod("dated"), pod("undated", created=None)),
            ["default/undated", "default/dated"],
        ),
    ],
)
def test_pods_are_ordered_by_priority_then_age_then_namespace_and_name(
    pods: tuple[PodInfo, ...], expected: list[str]
) -> None:
    assert order(*pods) == expected


def test_the_order_is_the_same_whatever_order_the_pods_arrive_in() -> None:
    pods = [
        pod("c", priority=5),
        pod("a", priority=5),
        pod("b", priority=5, created="2024-05-01T09:00:00Z"),
        pod("d", priority=7, created="2024-06-01T00:00:00Z"),
        pod("a", namespace="kube-system", priority=5),
    ]
    expected = ["default/d", "default/b", "default/a", "default/c", "kube-system/a"]
    for shift in range(len(pods)):
        assert order(*pods[shift:], *pods[:shift]) == expected
        assert order(*reversed(pods[shift:] + pods[:shift])) == expected


def test_the_sort_key_is_distinct_for_distinct_pods() -> None:
    plugin = PrioritySort()
    assert plugin.sort_key(pod("a")) != plugin.sort_key(pod("b"))
    assert plugin.sort_key(pod("a", namespace="x")) != plugin.sort_key(pod("a", namespace="y"))
    assert plugin.name == "PrioritySort"
