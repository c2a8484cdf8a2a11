"""PodGroup spec.minResources: a gang that needs more than the cluster has free is not tried,
its members hear which resource is short by how much, and it starts once room appears."""

from __future__ import annotations

from harness.daemon import Daemon
from harness.gangs import (
    GangBook,
    bound_count,
    podgroup_body,
    wait_bound,
    wait_explained,
)
from harness.kube import Cluster

GPU = "nvidia.com/gpu"


def test_a_gang_whose_min_resources_exceed_the_free_room_waits_and_says_what_is_short(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["mr-1"], {"cpu": "32", "memory": "128Gi", GPU: "8"})
    # Two members of 4 GPUs each fit the one node; the PodGroup says the job needs 16 in all.
    gang = gang_book.gang("train", 2, way="podgroup", requests={"cpu": "1", GPU: "4"})
    gang_book.create_podgroup(
        gang, podgroup_body(gang.name, 2, min_resources={"cpu": "2", GPU: "16"})
    )
    names = gang_book.create_pods(gang)

    messages = wait_explained(cluster, namespace, names, f"{GPU} short by 8 (needs 16, 8 free)")
    assert all(m.startswith(f"gang {gang.key}: minResources") for m in messages.values())
    assert bound_count(cluster, gang) == 0

    # Room for the whole minimum appears: the gang is tried again, and binds.
    cluster.add_nodes(["mr-2"], {"cpu": "32", "memory": "128Gi", GPU: "8"})
    wait_bound(cluster, gang)
