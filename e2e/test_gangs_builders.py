"""The gang helpers themselves, on the real API server and without a scheduler: what they build
is accepted as meant, and the no-partial-gang invariant catches what it must."""

from __future__ import annotations

import pytest

from harness.gangs import (
    GROUPS,
    LITE_MIN,
    LITE_NAME,
    MIN_AVAILABLE,
    MODE,
    NAME,
    POD_GROUP_LABEL,
    TIMEOUT,
    WAITING_TIME,
    WAYS,
    GangBook,
    Way,
    assert_no_partial_gangs,
    groups_value,
    observed_gangs,
    options,
    partial_gangs,
    podgroup,
)
from harness.kube import Cluster


def test_a_podgroup_is_accepted_and_reads_back_as_built(
    cluster: Cluster, namespace: str, gang_book: GangBook
) -> None:
    gang = gang_book.gang(
        "read-back",
        5,
        way="podgroup",
        timeout_seconds=30,
        options=options(mode="NonStrict", waiting_time="30s"),
    )
    gang_book.create_podgroup(gang)
    obj = podgroup(cluster, namespace, "read-back")
    assert obj is not None
    assert obj["spec"] == {"minMember": 5, "scheduleTimeoutSeconds": 30}
    assert obj["metadata"]["annotations"] == {MODE: "NonStrict", WAITING_TIME: "30s"}
    assert podgroup(cluster, namespace, "no-such-group") is None


@pytest.mark.parametrize("way", WAYS)
def test_members_carry_their_declaration_and_are_seen_as_one_gang(
    way: Way, clean_nodes: Cluster, namespace: str, gang_book: GangBook
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["builder-1"], {"cpu": "4", "memory": "16Gi"})
    gang = gang_book.gang(
        "seen", 3, way=way, requests={"cpu": "100m"}, pod_annotations=options(mode="Strict")
    )
    # Pre-bound members (no scheduler runs here): the gang is whole from the start.
    if way == "podgroup":
        gang_book.create_podgroup(gang)
    gang_book.create_pods(gang, node_name="builder-1")

    pod = cluster.pod(namespace, "seen-0")
    labels, annotations = pod.metadata.labels, pod.metadata.annotations
    expected = {
        "podgroup": (labels.get(POD_GROUP_LABEL), None),
        "lite": (labels.get(LITE_NAME), labels.get(LITE_MIN)),
        "annotations": (annotations.get(NAME), annotations.get(MIN_AVAILABLE)),
    }[way]
    assert expected == ("seen", None if way == "podgroup" else "3")
    assert annotations[MODE] == "Strict"

    seen = observed_gangs(cluster, [namespace])
    assert list(seen) == [gang.key]
    assert (seen[gang.key].minimum, seen[gang.key].pods, seen[gang.key].bound) == (3, 3, 3)
    assert partial_gangs(cluster, [namespace], [gang]) == []


def test_the_invariant_catches_partial_gangs_group_splits_and_bound_timeouts(
    clean_nodes: Cluster, namespace: str, gang_book: GangBook
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["builder-2"], {"cpu": "8", "memory": "16Gi"})
    other = gang_book.extra_namespace()
    group = groups_value(f"{namespace}/left", f"{other}/right")
    short = gang_book.gang("short", 3, requests={"cpu": "100m"})
    left = gang_book.gang("left", 1, requests={"cpu": "100m"}, options={GROUPS: group})
    right = gang_book.gang(
        "right", 2, namespace=other, requests={"cpu": "100m"}, options={GROUPS: group}
    )
    expired = gang_book.gang(
        "expired", 1, requests={"cpu": "100m"}, pod_annotations={TIMEOUT: "true"}
    )
    gang_book.create_pods(short, range(2), node_name="builder-2")
    gang_book.create_pods(left, node_name="builder-2")
    gang_book.create_pods(right)  # not bound: the partner is short
    gang_book.create_pods(expired, node_name="builder-2")

    problems = partial_gangs(cluster, gang_book.namespaces, gang_book.gangs)
    assert problems == [
        f"{namespace}/expired: timed-out members bound: ['expired-0']",
        f"{namespace}/left: bound while its group partner {other}/right has 0 bound",
        f"{namespace}/short: 2 bound, below its minimum 3",
    ]
    with pytest.raises(AssertionError, match="partial gangs"):
        assert_no_partial_gangs(cluster, gang_book.namespaces, gang_book.gangs, settle=0)

    # Gangs the test saw whole may shrink; what is left here is then acceptable.
    short.satisfied_once = right.satisfied_once = True
    cluster.force_delete(namespace, "expired-0")
    assert_no_partial_gangs(cluster, gang_book.namespaces, gang_book.gangs, settle=0)
    # Nobody explains the pending "right" members here (no scheduler): leave nothing pending.
    gang_book.cleanup()
