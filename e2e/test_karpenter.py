"""Karpenter v1.8.0 with its KWOK provider, built from its release, behind koordgang: a gang that
does not fit makes Karpenter add room for the whole gang at once, no more than the shortfall
needs, and the gang then binds whole. A gang beyond the NodePool's limits does not make it add
(and then remove) nodes it cannot use: its members say which limit stops them, under a reason
Karpenter leaves alone, until the limit is raised."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from controlplane.crds import install_crd_files
from harness.clients.karpenter import (
    NAMESPACE,
    NODECLAIM,
    NODECLASS,
    NODEPOOL,
    NODEPOOL_LABEL,
    Karpenter,
    karpenter_crds,
    nodeclass_body,
    nodepool_body,
)
from harness.daemon import Daemon
from harness.gangs import assert_no_partial_gangs, declaration, holds, wait_explained
from harness.invariants import assert_invariants
from harness.kube import Cluster, bound, json_object, pod_body, wait_until


@pytest.fixture(scope="module")
def karpenter_crds_installed(cluster: Cluster) -> None:
    if os.environ.get("KOORDGANG_E2E_KUBECONFIG"):
        pytest.skip(
            "the KWOK provider's nodes are made Ready by the local control plane's kwok, "
            "which kind does not run"
        )
    install_crd_files(cluster.api_client, karpenter_crds(), 60)
    cluster.ensure_namespace(NAMESPACE)


def nodeclaims(cluster: Cluster) -> list[dict[str, Any]]:
    group, version, plural = NODECLAIM
    listed = json_object(cluster.custom.list_cluster_custom_object(group, version, plural))
    return [c for c in listed["items"] if not c["metadata"].get("deletionTimestamp")]


def karpenter_nodes(cluster: Cluster) -> list[Any]:
    nodes: list[Any] = cluster.core.list_node(label_selector=NODEPOOL_LABEL).items
    return nodes


class KarpenterSetup:
    """Starts Karpenter with a KWOKNodeClass and a NodePool; at the end deletes the test's pods,
    then the NodePool while Karpenter still runs (it removes its nodes and their finalizers),
    then stops it."""

    def __init__(self, cluster: Cluster, namespace: str, kubeconfig: str, log: Path) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.karpenter = Karpenter(kubeconfig, log)
        self.pools: list[str] = []

    def start(self, pool: dict[str, Any], *, run: bool = True) -> None:
        group, version, plural = NODECLASS
        try:
            self.cluster.custom.create_cluster_custom_object(
                group, version, plural, nodeclass_body()
            )
        except ApiException as error:
            if error.status != 409:
                raise
        group, version, plural = NODEPOOL
        self.cluster.custom.create_cluster_custom_object(group, version, plural, pool)
        self.pools.append(pool["metadata"]["name"])
        if run:
            self.karpenter.start()

    def close(self) -> None:
        try:
            try:
                self.cluster.delete_namespace_pods(self.namespace)
            finally:
                group, version, plural = NODEPOOL
                for name in self.pools:
                    _ignore_missing(
                        self.cluster.custom.delete_cluster_custom_object,
                        group,
                        version,
                        plural,
                        name,
                    )
            wait_until(
                lambda: not nodeclaims(self.cluster) and not karpenter_nodes(self.cluster),
                timeout=60,
                what="Karpenter's NodeClaims and nodes gone",
            )
        finally:
            self.karpenter.stop()
            self._strip_finalizers()

    def _strip_finalizers(self) -> None:
        """What Karpenter would have finished: its finalizers off, the objects gone."""
        group, version, plural = NODECLAIM
        listed = json_object(self.cluster.custom.list_cluster_custom_object(group, version, plural))
        for claim in listed["items"]:
            name = claim["metadata"]["name"]
            _ignore_missing(
                self.cluster.custom.patch_cluster_custom_object,
                group,
                version,
                plural,
                name,
                {"metadata": {"finalizers": None}},
            )
            _ignore_missing(
                self.cluster.custom.delete_cluster_custom_object, group, version, plural, name
            )
        for node in karpenter_nodes(self.cluster):
            name = node.metadata.name
            _ignore_missing(self.cluster.core.patch_node, name, {"metadata": {"finalizers": None}})
            _ignore_missing(self.cluster.core.delete_node, name)


def _ignore_missing(call: Any, *args: Any) -> None:
    try:
        call(*args)
    except ApiException as error:
        if error.status != 404:
            raise


@pytest.fixture
def karpenter_setup(
    clean_nodes: Cluster,
    namespace: str,
    kubeconfig: str,
    tmp_path: Path,
    karpenter_crds_installed: None,
    request: pytest.FixtureRequest,
) -> Iterator[KarpenterSetup]:
    setup = KarpenterSetup(clean_nodes, namespace, kubeconfig, tmp_path / "karpenter.log")
    yield setup
    try:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(f"--- karpenter log ---\n{setup.karpenter.log_tail(12000)}")
        elif report is not None:
            assert_invariants(clean_nodes, namespace)
            assert_no_partial_gangs(clean_nodes, [namespace])
    finally:
        setup.close()


def create_gang(cluster: Cluster, namespace: str, name: str, members: int, cpu: str) -> list[str]:
    labels, annotations = declaration("annotations", name, str(members))
    names = []
    for index in range(members):
        body = pod_body(
            f"{name}-{index}",
            requests={"cpu": cpu, "memory": "1Gi"},
            labels=labels,
            annotations=annotations,
        )
        cluster.create_pod(namespace, body)
        names.append(f"{name}-{index}")
    return names


def test_a_gang_that_does_not_fit_gets_room_for_all_of_it_at_once_then_binds_whole(
    namespace: str, daemon: Daemon, karpenter_setup: KarpenterSetup
) -> None:
    cluster = karpenter_setup.cluster
    # c-4x nodes hold three 1-cpu members each (3.9 cpu allocatable): four need two nodes.
    karpenter_setup.start(nodepool_body("gangs"))
    names = create_gang(cluster, namespace, "train", 4, "1")

    wait_until(
        lambda: len(bound([cluster.pod(namespace, n) for n in names])) == 4,
        timeout=120,
        what="the gang bound whole on the nodes Karpenter added",
    )
    claims = nodeclaims(cluster)
    assert len(claims) == 2, [c["metadata"]["name"] for c in claims]
    holds(lambda: len(nodeclaims(cluster)) == 2, 5, what="no node added after the gang bound")
    karpenter_setup.karpenter.check_alive()


def test_room_already_there_is_counted_and_karpenter_adds_only_the_shortfall(
    namespace: str, daemon: Daemon, karpenter_setup: KarpenterSetup
) -> None:
    cluster = karpenter_setup.cluster
    # Room for three of the gang's four 1-cpu members on a node of ours: one more node is all
    # the gang needs.
    cluster.add_nodes(["kx-1"], {"cpu": "3", "memory": "32Gi"})
    karpenter_setup.start(nodepool_body("gangs"))
    names = create_gang(cluster, namespace, "short", 4, "1")

    wait_until(
        lambda: len(bound([cluster.pod(namespace, n) for n in names])) == 4,
        timeout=120,
        what="the gang bound whole",
    )
    claims = nodeclaims(cluster)
    assert len(claims) == 1, [c["metadata"]["name"] for c in claims]
    holds(lambda: len(nodeclaims(cluster)) == 1, 5, what="no node added after the gang bound")


def test_a_gang_beyond_the_nodepools_limits_adds_no_node_and_says_so_until_they_are_raised(
    namespace: str, daemon: Daemon, karpenter_setup: KarpenterSetup
) -> None:
    cluster = karpenter_setup.cluster
    # Four 2-cpu members need 8 cpu; the NodePool may hold 4. Empty nodes would go after 5 s,
    # so a Karpenter asked in vain would add and remove nodes in a loop.
    pool = nodepool_body("capped", limits={"cpu": "4"}, consolidate_after="5s")
    karpenter_setup.start(pool, run=False)
    names = create_gang(cluster, namespace, "big", 4, "2")
    wait_explained(
        cluster,
        namespace,
        names,
        ["no NodePool can add the room", "capped: limit 4, 0 in use"],
    )
    for name in names:
        conditions = cluster.pod(namespace, name).status.conditions or []
        [scheduled] = [c for c in conditions if c.type == "PodScheduled"]
        assert scheduled.reason == "BeyondNodePoolLimits", scheduled.reason

    karpenter_setup.karpenter.start()
    holds(lambda: not nodeclaims(cluster), 20, what="Karpenter adds no node")

    group, version, plural = NODEPOOL
    cluster.custom.patch_cluster_custom_object(
        group, version, plural, "capped", {"spec": {"limits": {"cpu": "16"}}}
    )
    wait_until(
        lambda: len(bound([cluster.pod(namespace, n) for n in names])) == 4,
        timeout=120,
        what="the gang bound whole once the limit was raised",
    )
