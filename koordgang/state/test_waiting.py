"""WaitingPods: pods placed but held for their group, by group and part, with deadlines."""

from __future__ import annotations

import pytest

from koordgang.model.group_key import GroupKey
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.state.waiting import WaitingPod, WaitingPods


def pod(name: str, *, labels: dict[str, str] | None = None) -> PodInfo:
    return parse_pod(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": f"uid-{name}",
                "labels": labels or {},
            },
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Pending"},
        }
    )


def key(name: str) -> GroupKey:
    """The key of the group of one gang, ``name``."""
    return GroupKey((name,))


def hold(
    waiting: WaitingPods,
    name: str,
    *,
    group: str = "g",
    part: str | None = None,
    node: str = "n1",
    since: float = 0.0,
    deadline: float = 100.0,
) -> PodInfo:
    held = pod(name)
    waiting.add(held, node, group=key(group), part=part or group, since=since, deadline=deadline)
    return held


def uids(pods: list[WaitingPod]) -> list[str]:
    return sorted(w.pod.uid for w in pods)


# -- add, update, remove -----------------------------------------------------------------------


def test_a_held_pod_is_known_with_its_node_group_part_and_time() -> None:
    waiting = WaitingPods()
    p = hold(waiting, "p", group="g", part="ns/a", node="n2", since=5.0, deadline=65.0)

    assert "uid-p" in waiting
    assert "uid-q" not in waiting
    assert len(waiting) == 1
    assert waiting.get("uid-p") == WaitingPod(p, "n2", key("g"), "ns/a", 5.0)
    assert waiting.get("uid-q") is None
    assert [w.pod for w in waiting] == [p]
    assert uids(waiting.in_part("ns/a")) == ["uid-p"]
    assert waiting.deadline(key("g")) == 65.0


def test_holding_a_pod_again_moves_it_instead_of_counting_it_twice() -> None:
    waiting = WaitingPods()
    hold(waiting, "p", group="g1", part="ns/a", node="n1")

    hold(waiting, "p", group="g2", part="ns/b", node="n2")

    assert len(waiting) == 1
    held = waiting.get("uid-p")
    assert held is not None
    assert (held.node, held.group, held.part) == ("n2", key("g2"), "ns/b")
    assert waiting.release_group(key("g1")) == []
    assert waiting.count_in_part("ns/a") == 0
    assert waiting.count_in_part("ns/b") == 1
    assert waiting.deadline(key("g1")) is None  # nothing held for it any more


def test_update_replaces_the_pod_of_a_held_entry_and_ignores_others() -> None:
    waiting = WaitingPods()
    hold(waiting, "p", node="n3", since=7.0)
    newer = pod("p", labels={"seen": "again"})

    waiting.update(newer)
    waiting.update(pod("stranger"))

    held = waiting.get("uid-p")
    assert held is not None
    assert held.pod is newer
    assert (held.node, held.since) == ("n3", 7.0)
    assert "uid-stranger" not in waiting


def test_remove_returns_the_held_entry_once() -> None:
    waiting = WaitingPods()
    hold(waiting, "p")
    hold(waiting, "q")

    removed = waiting.remove("uid-p")

    assert removed is not None and removed.pod.uid == "uid-p"
    assert waiting.remove("uid-p") is None
    assert waiting.remove("uid-never-held") is None
    assert uids(waiting.in_part("g")) == ["uid-q"]
    assert waiting.count_in_part("g") == 1
    assert waiting.deadline(key("g")) == 100.0  # q still holds the group's place in time
    assert uids(waiting.release_group(key("g"))) == ["uid-q"]


def test_the_last_pod_of_a_group_takes_its_deadline_with_it() -> None:
    waiting = WaitingPods()
    hold(waiting, "p", deadline=10.0)

    waiting.remove("uid-p")

    assert waiting.deadline(key("g")) is None
    assert waiting.next_deadline() is None
    assert waiting.expired(1000.0) == []


def test_release_group_removes_and_returns_every_pod_of_that_group_only() -> None:
    waiting = WaitingPods()
    hold(waiting, "a-0", group="g", part="ns/a")
    hold(waiting, "b-0", group="g", part="ns/b")
    hold(waiting, "other", group="h")

    released = waiting.release_group(key("g"))

    assert uids(released) == ["uid-a-0", "uid-b-0"]
    assert [w.pod.uid for w in waiting] == ["uid-other"]
    assert waiting.deadline(key("g")) is None
    assert waiting.release_group(key("g")) == []
    assert waiting.release_group(key("never-held")) == []


def test_in_part_and_count_in_part_see_only_the_pods_of_that_part() -> None:
    waiting = WaitingPods()
    hold(waiting, "a-0", group="g", part="ns/a")
    hold(waiting, "a-1", group="g", part="ns/a")
    hold(waiting, "b-0", group="g", part="ns/b")

    assert uids(waiting.in_part("ns/a")) == ["uid-a-0", "uid-a-1"]
    assert waiting.count_in_part("ns/a") == 2
    assert waiting.count_in_part("ns/b") == 1
    assert waiting.count_in_part("ns/c") == 0
    assert waiting.in_part("ns/c") == []


def test_iterating_is_safe_while_removing() -> None:
    waiting = WaitingPods()
    for name in ("p", "q", "r"):
        hold(waiting, name)

    for held in waiting:
        waiting.remove(held.pod.uid)

    assert len(waiting) == 0


# -- deadlines ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deadlines", "kept"),
    [
        ([50.0], 50.0),
        ([50.0, 80.0], 50.0),  # a later one does not push the group's deadline back
        ([80.0, 50.0], 50.0),  # an earlier one brings it forward
        ([50.0, 50.0], 50.0),
    ],
)
def test_a_group_keeps_the_earliest_deadline_it_was_given(
    deadlines: list[float], kept: float
) -> None:
    waiting = WaitingPods()
    for index, deadline in enumerate(deadlines):
        hold(waiting, f"p{index}", deadline=deadline)

    assert waiting.deadline(key("g")) == kept
    assert waiting.next_deadline() == kept
    assert waiting.expired(kept - 0.001) == []
    assert waiting.expired(kept) == [key("g")]


def test_next_deadline_is_the_earliest_of_all_groups() -> None:
    waiting = WaitingPods()
    assert waiting.next_deadline() is None
    hold(waiting, "p", group="late", deadline=90.0)
    hold(waiting, "q", group="soon", deadline=30.0)
    assert waiting.next_deadline() == 30.0

    waiting.release_group(key("soon"))

    assert waiting.next_deadline() == 90.0


def test_a_group_expires_at_exactly_its_deadline_and_not_before() -> None:
    waiting = WaitingPods()
    hold(waiting, "p", deadline=60.0)

    assert waiting.expired(59.999) == []
    assert waiting.expired(60.0) == [key("g")]
    # Reported once; the pods stay held until the caller releases them.
    assert waiting.expired(61.0) == []
    assert "uid-p" in waiting


def test_expired_lists_every_group_whose_time_came_earliest_first() -> None:
    waiting = WaitingPods()
    hold(waiting, "c", group="third", deadline=30.0)
    hold(waiting, "a", group="first", deadline=10.0)
    hold(waiting, "d", group="later", deadline=99.0)
    hold(waiting, "b", group="second", deadline=20.0)

    assert waiting.expired(30.0) == [key("first"), key("second"), key("third")]
    assert waiting.next_deadline() == 99.0


def test_a_group_released_before_its_deadline_does_not_expire() -> None:
    waiting = WaitingPods()
    hold(waiting, "p", group="g", deadline=10.0)
    hold(waiting, "q", group="h", deadline=20.0)
    waiting.release_group(key("g"))

    assert waiting.expired(30.0) == [key("h")]


def test_a_group_held_again_expires_at_its_new_deadline_only() -> None:
    waiting = WaitingPods()
    hold(waiting, "p", deadline=10.0)
    waiting.remove("uid-p")
    hold(waiting, "q", deadline=40.0)

    assert waiting.next_deadline() == 40.0
    assert waiting.expired(20.0) == []
    assert waiting.expired(40.0) == [key("g")]


def test_a_group_held_again_with_the_same_deadline_expires_once() -> None:
    waiting = WaitingPods()
    hold(waiting, "p", deadline=10.0)
    waiting.remove("uid-p")  # bound, say: the group holds nothing for a moment
    hold(waiting, "q", deadline=10.0)  # the group's deadline, given again

    assert waiting.expired(10.0) == [key("g")]
