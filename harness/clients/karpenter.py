"""Karpenter v1.8.0 with its KWOK provider (sigs.k8s.io/karpenter/kwok) as a child process of an
e2e test, its CRDs installed from the release in the Go module cache, and the bodies of a
KWOKNodeClass and a NodePool.

How Karpenter reads pods, as the release has it (pkg/utils/pod/scheduling.go): a pod is
provisionable when its ``PodScheduled`` condition has reason ``Unschedulable``, it is not
bound, and it has no ``status.nominatedNodeName``; pending pods seen within a batch window
(``BATCH_IDLE_DURATION``, at most ``BATCH_MAX_DURATION``) are planned together: packed first
onto the room existing nodes have left (only bound pods use room), then onto new NodeClaims,
as few and as cheap as the NodePool's instance types allow, within its ``spec.limits``.

The KWOK provider creates each NodeClaim's Node itself (annotated ``kwok.x-k8s.io/node:
fake``, which the control plane's kwok makes Ready), tainted ``karpenter.sh/unregistered``
until Karpenter registers it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from controlplane.ports import free_loopback_ports
from controlplane.progress import Reporter
from harness.clients.build import KARPENTER, module_source, release_file
from harness.clients.process import ClientProcess, http_ok

NODEPOOL = ("karpenter.sh", "v1", "nodepools")
NODECLAIM = ("karpenter.sh", "v1", "nodeclaims")
NODECLASS = ("karpenter.kwok.sh", "v1alpha1", "kwoknodeclasses")
NODEPOOL_LABEL = "karpenter.sh/nodepool"
#: The namespace Karpenter's chart installs it in (it reads SYSTEM_NAMESPACE; it must exist).
NAMESPACE = "karpenter"


def karpenter_crds() -> list[Path]:
    """NodePools, NodeClaims and NodeOverlays (kwok/charts/crds) and KWOKNodeClasses
    (kwok/apis/crds), as the release ships them."""
    charts = module_source(KARPENTER) / "kwok" / "charts" / "crds"
    return [
        *sorted(charts.glob("karpenter.sh_*.yaml")),
        release_file(KARPENTER, "kwok", "apis", "crds", "karpenter.kwok.sh_kwoknodeclasses.yaml"),
    ]


class Karpenter(ClientProcess):
    """One Karpenter process (KWOK provider), leader election off, its metrics and health
    endpoints on free loopback ports. ``start()`` returns once its provisioner runs."""

    binary_spec = KARPENTER

    def __init__(
        self,
        kubeconfig: Path | str,
        log_path: Path | str,
        *,
        batch_idle: str = "1s",
        batch_max: str = "10s",
        binary: Path | None = None,
        reporter: Reporter | None = None,
    ) -> None:
        super().__init__(kubeconfig, log_path, binary=binary, reporter=reporter)
        self.batch_idle = batch_idle
        self.batch_max = batch_max
        self.metrics_port, self.health_port = free_loopback_ports(2)

    def argv(self) -> list[str]:
        assert self.binary is not None
        return [str(self.binary)]

    def environment(self) -> dict[str, str]:
        # Karpenter takes its options from the environment, as its chart sets them.
        env = super().environment()
        env.update(
            {
                "DISABLE_LEADER_ELECTION": "true",
                "METRICS_PORT": str(self.metrics_port),
                "HEALTH_PROBE_PORT": str(self.health_port),
                "SYSTEM_NAMESPACE": NAMESPACE,
                "LOG_LEVEL": "debug",
                "BATCH_IDLE_DURATION": self.batch_idle,
                "BATCH_MAX_DURATION": self.batch_max,
            }
        )
        return env

    def describe(self) -> str:
        return f"starting karpenter {KARPENTER.version} (KWOK provider)"

    def not_started_yet(self) -> str | None:
        if not http_ok(f"http://127.0.0.1:{self.health_port}/readyz"):
            return "its /readyz does not answer yet"
        if not self.logged("Starting workers", "provisioner"):
            return "its provisioner has not started"
        return None


def nodeclass_body(name: str = "default") -> dict[str, Any]:
    group, version, _ = NODECLASS
    return {
        "apiVersion": f"{group}/{version}",
        "kind": "KWOKNodeClass",
        "metadata": {"name": name},
        "spec": {},
    }


def nodepool_body(
    name: str,
    *,
    instance_types: Sequence[str] = ("c-4x-amd64-linux",),
    limits: Mapping[str, str] | None = None,
    consolidate_after: str = "Never",
    nodeclass: str = "default",
) -> dict[str, Any]:
    """A NodePool of on-demand amd64 Linux nodes of ``instance_types`` (the KWOK provider's
    ``c-4x-amd64-linux`` has 4 cpu, 3.9 allocatable), ``limits`` on their total capacity,
    empty nodes removed after ``consolidate_after`` (``Never``: kept)."""
    group, version, _ = NODEPOOL
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": NODECLASS[0],
                    "kind": "KWOKNodeClass",
                    "name": nodeclass,
                },
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": list(instance_types),
                    },
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["on-demand"],
                    },
                ],
                "expireAfter": "Never",
            }
        },
        "disruption": {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": consolidate_after,
        },
    }
    if limits:
        spec["limits"] = dict(limits)
    return {
        "apiVersion": f"{group}/{version}",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }
